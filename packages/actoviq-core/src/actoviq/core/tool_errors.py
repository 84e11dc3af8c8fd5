"""Tool failures as values and as an error (spec 03 §4.4, decision D3).

They live in core so that every layer (runtime, orchestration, surfaces, compat) can catch
``ToolExecutionError`` without importing the runtime; ``actoviq.runtime`` re-exports them.
"""

from __future__ import annotations

from typing import ClassVar, Literal, TypeAlias

import attrs

from actoviq.core.errors import ActoviqError
from actoviq.core.json import JsonObject

__all__ = ["ToolExecutionError", "ToolFailure", "ToolFailureKind"]

ToolFailureKind: TypeAlias = Literal[
    "not_found", "validation", "denied", "timeout", "cancelled", "execution", "retry"
]
"""Why a call produced no output. ``retry``: the tool raised ``ToolRetry`` to ask the model to
call it again with other arguments (see ``actoviq.runtime.ToolRetry``)."""


@attrs.frozen(kw_only=True, slots=True)
class ToolFailure:
    """Why one tool invocation did not produce an output.

    ``retryable`` is diagnostic only; it never authorises a retry (ADR-010).
    """

    kind: ToolFailureKind
    tool_name: str
    call_id: str
    message: str
    retryable: bool = False
    cause: BaseException | None = attrs.field(default=None, eq=False, repr=False)

    def to_json(self) -> JsonObject:
        """The ``tool.failed`` payload: camelCase, the cause as ``{type, message}`` only."""
        data: JsonObject = {
            "kind": self.kind,
            "toolName": self.tool_name,
            "callId": self.call_id,
            "message": self.message,
            "retryable": self.retryable,
        }
        if self.cause is not None:
            data["cause"] = {"type": type(self.cause).__name__, "message": _text_of(self.cause)}
        return data


def _text_of(error: BaseException) -> str:
    # A tool's exception may have a __str__ that raises: describing it must not fail too.
    try:
        return str(error)
    except Exception:
        return f"<unprintable {type(error).__name__}>"


class ToolExecutionError(ActoviqError):
    """A tool invocation failed in an expected way; carries the :class:`ToolFailure`.

    Example:
        >>> failure = ToolFailure(kind="denied", tool_name="rm", call_id="c1", message="no")
        >>> str(ToolExecutionError(failure))
        'no'
    """

    default_code: ClassVar[str] = "TOOL_EXECUTION_ERROR"

    def __init__(self, failure: ToolFailure) -> None:
        super().__init__(
            failure.message,
            retryable=failure.retryable,
            details={
                "kind": failure.kind,
                "toolName": failure.tool_name,
                "callId": failure.call_id,
            },
        )
        self.failure = failure
        if failure.cause is not None:
            self.__cause__ = failure.cause

    @property
    def kind(self) -> ToolFailureKind:
        """The failure kind."""
        return self.failure.kind
