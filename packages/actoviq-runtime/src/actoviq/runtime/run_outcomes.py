"""How a run ends: the :class:`RunResult` it returns and its terminal save and event.

``completed`` is settled by :func:`actoviq.runtime.run_output.finalize`; this module holds the
other three outcomes of :meth:`RunExecution.main <actoviq.runtime.loop.RunExecution.main>`:
``interrupted`` (pending decisions), ``cancelled`` (the run signal was aborted) and ``failed``.
Each saves the state before its terminal event; interrupted and cancelled runs keep their
checkpoint so they can be resumed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from actoviq.core import (
    ActoviqError,
    HandoffCallItem,
    Interruption,
    JsonObject,
    RunResult,
    iso_now,
)
from actoviq.events import error_data

if TYPE_CHECKING:
    from actoviq.runtime.loop import RunExecution, RunInterrupted

__all__ = ["run_cancelled", "run_failed", "run_interrupted", "run_result"]


def run_result(
    run: RunExecution,
    status: str,
    output: Any,
    *,
    interruptions: Sequence[Interruption] = (),
    state: JsonObject | None = None,
    handoff: HandoffCallItem | None = None,
) -> RunResult[Any]:
    """The run's result with ``status`` and ``output`` (completed now)."""
    return RunResult(
        run_id=run.run_id,
        agent_id=run.agent.id,
        status=cast(Any, status),
        output=output,
        items=tuple(run.generated),
        usage=run.usage.snapshot(),
        started_at=run.started_at,
        completed_at=iso_now(),
        session_id=run.session_id,
        metadata=run.metadata,
        interruptions=tuple(interruptions),
        state=state,
        handoff=handoff,
    )


async def run_interrupted(run: RunExecution, interrupted: RunInterrupted) -> RunResult[Any]:
    """Checkpoint the paused run, emit ``run.interrupted`` and return its result."""
    run.interruptions = list(interrupted.interruptions)
    run.status = "interrupted"
    state = await run.save()
    first = interrupted.interruptions[0]
    await run.emit(
        "run.interrupted",
        {
            "interruptionId": first.id,
            "reason": first.reason,
            "interruptions": [
                {
                    "id": entry.id,
                    "kind": entry.kind,
                    "reason": entry.reason,
                    **({"callId": entry.call_id} if entry.call_id else {}),
                    **({"toolName": entry.tool_name} if entry.tool_name else {}),
                }
                for entry in interrupted.interruptions
            ],
        },
    )
    return run_result(run, "interrupted", "", interruptions=interrupted.interruptions, state=state)


async def run_cancelled(run: RunExecution) -> RunResult[Any]:
    """Checkpoint the aborted run, emit ``run.cancelled`` and return its result."""
    await run.emit_start()
    reason = run.signal.reason
    run.status = "cancelled"
    state = await run.save()
    data: JsonObject = {"reason": _reason_text(reason)}
    if isinstance(reason, ActoviqError):
        data["code"] = reason.code
    await run.emit("run.cancelled", data)
    return run_result(run, "cancelled", "", state=state)


async def run_failed(run: RunExecution, error: Exception) -> None:
    """Save the failed state and emit ``run.failed`` (the caller re-raises ``error``)."""
    run.status = "failed"
    if run.persistence.blocked is None:
        await run.save()
    if isinstance(error, ActoviqError):
        payload = cast(JsonObject, error.to_json())
    else:
        payload = cast(JsonObject, dict(error_data(error)))
    await run.emit_start()
    await run.emit("run.failed", {"error": payload})


def _reason_text(reason: object) -> str:
    if isinstance(reason, BaseException):
        return str(reason) or type(reason).__name__
    return "Run cancelled." if reason is None else str(reason)
