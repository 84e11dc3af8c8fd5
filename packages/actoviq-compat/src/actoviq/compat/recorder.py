"""What the 0.x result shape needs and the runtime's events do not carry, recorded per run.

Two observing middleware on the façade's runtime (both call ``next()`` once and return its
result unchanged, so every runtime invariant still holds):

* ``wrapModelCall`` keeps each model call's request and response (the legacy ``requests``,
  ``message`` and ``messages``);
* ``wrapToolCall`` keeps each invoked tool's timing and output (the legacy ``toolCalls`` and
  ``tool.result`` events).

Only runs the façade opened (:meth:`RunRecorder.open`) are recorded, and their records are
dropped when the façade takes them (:meth:`RunRecorder.close`), so memory stays bounded by the
runs in flight.
"""

from __future__ import annotations

import time
from typing import Any, Final

import attrs

from actoviq.compat.events import PermissionDecision
from actoviq.core import (
    JsonValue,
    ToolCallItem,
    ToolExecutionError,
    dumps_compact,
    iso_now,
)
from actoviq.providers import ModelRequest, ModelResponse
from actoviq.runtime import (
    MiddlewareDefinition,
    MiddlewareStage,
    Next,
    RuntimeMiddlewareContext,
    ToolOutput,
    define_middleware,
)

__all__ = ["ModelCallRecord", "RunRecorder", "RunRecords", "ToolCallRecord", "output_text"]

# Outermost on both stages: a host's own middleware (none today) would run inside.
_PRIORITY: Final = -1_000_000


def output_text(value: JsonValue) -> str:
    """The text form of a tool output: a string as is, anything else as compact JSON."""
    return value if isinstance(value, str) else dumps_compact(value, "tool output")


@attrs.frozen(kw_only=True, slots=True)
class ModelCallRecord:
    """One model call of a run."""

    iteration: int
    request: ModelRequest
    response: ModelResponse
    created_at: str


@attrs.frozen(kw_only=True, slots=True)
class ToolCallRecord:
    """One invoked tool call of a run (a denied call never reaches the tool: not recorded)."""

    call: ToolCallItem
    started_at: str
    completed_at: str
    duration_ms: float
    output: JsonValue
    output_text: str
    is_error: bool


@attrs.define(kw_only=True, slots=True)
class RunRecords:
    """Everything recorded for one run."""

    model_calls: list[ModelCallRecord] = attrs.field(factory=lambda: list[ModelCallRecord]())
    tool_calls: dict[str, ToolCallRecord] = attrs.field(factory=lambda: dict[str, ToolCallRecord]())
    permission_decisions: list[PermissionDecision] = attrs.field(
        factory=lambda: list[PermissionDecision]()
    )

    def call_item(self, call_id: str) -> ToolCallItem | None:
        """The model's tool call with that id (from the recorded responses)."""
        for record in reversed(self.model_calls):
            for item in record.response.output:
                if isinstance(item, ToolCallItem) and item.id == call_id:
                    return item
        return None


class RunRecorder:
    """Per-run records, filled by :meth:`middleware` on the façade's runtime."""

    def __init__(self) -> None:
        self._runs: dict[str, RunRecords] = {}

    def open(self, run_id: str) -> RunRecords:
        """Start recording ``run_id``."""
        records = RunRecords()
        self._runs[run_id] = records
        return records

    def get(self, run_id: str) -> RunRecords | None:
        """The records of an open run."""
        return self._runs.get(run_id)

    def close(self, run_id: str) -> RunRecords | None:
        """Stop recording ``run_id`` and return what was recorded."""
        return self._runs.pop(run_id, None)

    def _records(self, ctx: RuntimeMiddlewareContext) -> RunRecords | None:
        run = ctx.run
        return None if run is None else self._runs.get(run.run_id)

    async def _model_call(self, ctx: RuntimeMiddlewareContext, next: Next) -> Any:
        records = self._records(ctx)
        response = await next()
        if records is not None and isinstance(response, ModelResponse):
            request = ctx.model_request
            if isinstance(request, ModelRequest):
                records.model_calls.append(
                    ModelCallRecord(
                        iteration=len(records.model_calls) + 1,
                        request=request,
                        response=response,
                        created_at=iso_now(),
                    )
                )
        return response

    async def _tool_call(self, ctx: RuntimeMiddlewareContext, next: Next) -> Any:
        records = self._records(ctx)
        call = ctx.tool_call
        if records is None or call is None:
            return await next()
        started_at = iso_now()
        clock = time.perf_counter()

        def record(output: JsonValue, text: str, is_error: bool) -> None:
            records.tool_calls[call.id] = ToolCallRecord(
                call=call,
                started_at=started_at,
                completed_at=iso_now(),
                duration_ms=round((time.perf_counter() - clock) * 1000.0, 3),
                output=output,
                output_text=text,
                is_error=is_error,
            )

        try:
            result = await next()
        except ToolExecutionError as error:
            record(None, error.failure.message, True)
            raise
        if isinstance(result, ToolOutput):
            value = result.json_value()
            record(value, result.model_text or output_text(value), False)
        return result

    def middleware(self) -> list[MiddlewareDefinition]:
        """The two observing middleware definitions."""
        return [
            define_middleware(
                "compat.record-model-calls",
                MiddlewareStage.WRAP_MODEL_CALL,
                self._model_call,
                priority=_PRIORITY,
            ),
            define_middleware(
                "compat.record-tool-calls",
                MiddlewareStage.WRAP_TOOL_CALL,
                self._tool_call,
                priority=_PRIORITY,
            ),
        ]
