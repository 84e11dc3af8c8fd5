"""RunEvents → legacy AgentEvents for one streamed run.

The mapping is :class:`~actoviq.surfaces.RunEventLegacyCompatAdapter`'s (validation, surface
redaction and the §6.6 table). The façade only adds what the runtime's events do not carry and
the 0.x events need, before the adapter sees them:

* ``run.started``: the run's input and session id;
* ``tool.started`` / ``tool.completed`` / ``tool.failed`` / ``tool.rejected``: the call's input,
  output, timing and error text from the run's records;
* ``run.completed``: the 0.x ``AgentRunResult`` (what ``response.completed`` carries).

After each ``model.completed`` it also emits ``response.message`` with the request's
Anthropic-style message (surface-redacted like every other event).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, cast

from actoviq.compat.events import AgentEvent
from actoviq.compat.recorder import RunRecords
from actoviq.compat.results import AgentRunResult
from actoviq.core import JsonObject, JsonValue, RunResult
from actoviq.events import RunEvent
from actoviq.providers.legacy import to_legacy_message
from actoviq.runtime import RunHandle
from actoviq.surfaces import RunEventLegacyCompatAdapter, redact_surface_value

__all__ = ["translate_run"]

_TOOL_ENDS: Final = frozenset({"tool.completed", "tool.failed", "tool.rejected"})


def _data(event: RunEvent) -> JsonObject:
    return dict(cast(JsonObject, event.data)) if type(event.data) is dict else {}


def _tool_started(event: RunEvent, records: RunRecords) -> RunEvent:
    data = _data(event)
    call = records.call_item(str(data.get("callId", "")))
    if call is None or "input" in data:
        return event
    return event.with_data({**data, "input": call.input})


def _tool_finished(event: RunEvent, records: RunRecords) -> RunEvent:
    data = _data(event)
    call_id = str(data.get("callId", ""))
    name = str(data.get("name", ""))
    recorded = records.tool_calls.get(call_id)
    call = recorded.call if recorded is not None else records.call_item(call_id)
    extra: JsonObject = {"publicName": name, "provider": "local"}
    if call is not None:
        extra["input"] = call.input
    if recorded is not None:
        extra.update(
            startedAt=recorded.started_at,
            completedAt=recorded.completed_at,
            durationMs=recorded.duration_ms,
            outputText=recorded.output_text,
            isError=recorded.is_error,
        )
        if not recorded.is_error:
            extra["output"] = recorded.output
    else:
        # Denied, rejected or refused before the tool ran: no timing, the reason is the text.
        failure = data.get("failure")
        reason: JsonValue = None
        if type(failure) is dict:
            reason = cast(JsonObject, failure).get("message")
        extra.update(
            startedAt=event.timestamp,
            completedAt=event.timestamp,
            durationMs=0,
            outputText=reason if isinstance(reason, str) else f"Tool {name} did not run.",
            isError=True,
        )
    return event.with_data({**extra, **data})


async def translate_run(
    handle: RunHandle[Any],
    records: RunRecords,
    *,
    prompt: str,
    session_id: str | None,
    finish: Callable[[RunResult[Any]], AgentRunResult],
    push: Callable[[AgentEvent], Awaitable[None]],
) -> AgentRunResult | None:
    """Push the legacy events of ``handle`` 's run; return the result of a completed run.

    Args:
        handle: the runtime's handle of the run.
        records: the run's records (filled by the recorder middleware).
        prompt: the run's input text (``run.started.input``).
        session_id: the run's session, if any.
        finish: builds the 0.x result from the runtime's result.
        push: delivers one legacy event to the stream's buffer.

    Returns None when the run did not complete (the caller inspects ``handle.result()``).
    """
    adapter = RunEventLegacyCompatAdapter()
    completed: AgentRunResult | None = None
    async for event in handle:
        kind = event.type
        if kind == "run.started":
            extra: JsonObject = {"input": prompt}
            if session_id is not None:
                extra["sessionId"] = session_id
            event = event.with_data({**_data(event), **extra})
        elif kind == "tool.started":
            event = _tool_started(event, records)
        elif kind in _TOOL_ENDS:
            event = _tool_finished(event, records)
        elif kind == "run.completed":
            completed = finish(await handle.result())
            event = event.with_data({**_data(event), "result": completed.to_json()})
        for legacy in adapter.adapt(event):
            await push(cast(AgentEvent, legacy))
        if kind == "model.completed" and records.model_calls:
            call = records.model_calls[-1]
            message = redact_surface_value(cast(JsonValue, to_legacy_message(call.response)))
            await push(
                cast(
                    AgentEvent,
                    {
                        "type": "response.message",
                        "runId": event.run_id,
                        "timestamp": event.timestamp,
                        "iteration": call.iteration,
                        "message": message,
                    },
                )
            )
    return completed
