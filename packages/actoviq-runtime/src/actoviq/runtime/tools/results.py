"""Tool result items built from outputs and failures (spec 03 §1.9.1)."""

from __future__ import annotations

from actoviq.core import JsonObject, ToolCallItem, ToolResultItem
from actoviq.runtime.tools.descriptor import ToolOutput
from actoviq.runtime.tools.errors import ToolErrorFormatter, ToolFailure, format_failure

__all__ = ["denial_result", "failure_result", "success_result"]


def success_result(call: ToolCallItem, output: ToolOutput) -> ToolResultItem:
    """The ``success`` result for ``call`` (``modelText`` and artifacts stay out of it)."""
    return ToolResultItem(
        call_id=call.id, name=call.name, status="success", output=output.json_value()
    )


def failure_result(
    failure: ToolFailure, formatter: ToolErrorFormatter | None = None
) -> ToolResultItem:
    """The ``error`` result: ``output={kind, message: format_failure(failure), retryable}``."""
    output: JsonObject = {
        "kind": failure.kind,
        "message": format_failure(failure, formatter),
        "retryable": failure.retryable,
    }
    return ToolResultItem(
        call_id=failure.call_id, name=failure.tool_name, status="error", output=output
    )


def denial_result(
    call: ToolCallItem, reason: str, formatter: ToolErrorFormatter | None = None
) -> ToolResultItem:
    """A ``denied`` error result (``ToolCallDenied`` in middleware, a rejected approval)."""
    failure = ToolFailure(kind="denied", tool_name=call.name, call_id=call.id, message=reason)
    return failure_result(failure, formatter)
