"""How a run ends: the :class:`RunResult` it returns and its terminal save and event.

``completed`` is settled by :func:`actoviq.runtime.run_output.finalize`; this module holds the
other three outcomes of :meth:`RunExecution.main <actoviq.runtime.loop.RunExecution.main>`:
``interrupted`` (pending decisions), ``cancelled`` (the run signal was aborted) and ``failed``.
Each saves the state before its terminal event; interrupted and cancelled runs keep their
checkpoint so they can be resumed.
"""

from __future__ import annotations

import contextlib
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
from actoviq.runtime.failures import RunPersistenceError, as_run_error, persistence_error

if TYPE_CHECKING:
    from actoviq.runtime.execution import RunExecution, RunInterrupted

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
        terminal=True,
    )
    return run_result(run, "interrupted", "", interruptions=interrupted.interruptions, state=state)


async def run_cancelled(run: RunExecution) -> RunResult[Any]:
    """Checkpoint the aborted run, emit ``run.cancelled`` and return its result."""
    await run.emit_start(terminal=True)
    reason = run.signal.reason
    run.status = "cancelled"
    state = await run.save()
    data: JsonObject = {"reason": _reason_text(reason)}
    if isinstance(reason, ActoviqError):
        data["code"] = reason.code
    await run.emit("run.cancelled", data, terminal=True)
    return run_result(run, "cancelled", "", state=state)


async def run_failed(run: RunExecution, error: BaseException) -> ActoviqError:
    """End the run ``failed``: save what can be saved, emit ``run.failed``, return the typed error.

    The failed state is saved first. If that save fails too (the value that broke the run cannot
    be stored, the store is down), the run's last durable state is saved again marked ``failed``
    (it was storable a moment ago). ``run.failed`` carries ``error`` and, with a checkpoint
    store, ``checkpoint``: ``{"saved": true, "status": "failed", "stateRevision": n}``, with
    ``"fallback": "lastDurableState"`` and the save ``error`` when the fallback was used, or
    ``{"saved": false, "error": …, "storedStatus": …}`` when nothing could be written: the store
    then still holds the last durable state (``running``, with the run's lease until it expires;
    resume it like a crashed run).
    """
    typed = as_run_error(error, run.run_id)
    await run.emit_start(terminal=True)
    run.status = "failed"
    checkpoint = await _save_failure(run)
    data: JsonObject = {"error": cast(JsonObject, typed.to_json())}
    if checkpoint is not None:
        data["checkpoint"] = checkpoint
    await run.emit("run.failed", data, terminal=True)
    typed.last_event_sequence = run.sequencer.last_sequence  # a retry of the run id continues
    typed.run_usage = run.usage.snapshot()  # what the failed run spent (a parent's budget)
    return typed


async def _save_failure(run: RunExecution) -> JsonObject | None:
    persistence = run.persistence
    if persistence.store is None:
        with contextlib.suppress(RunPersistenceError):
            await run.save()  # only builds the final state this runtime remembers
        return None
    blocked = persistence.blocked
    if blocked is not None:  # the run lost its claim: it must not write
        return {"saved": False, "error": cast(JsonObject, blocked.to_json())}
    if persistence.released:  # a terminal state was saved already
        return {"saved": True, "status": _status(persistence.last_saved)}
    try:
        await run.save()
    except Exception as error:
        first = persistence_error("checkpoint.save", error, run.run_id)
    else:
        return {"saved": True, "status": "failed", "stateRevision": run.state_revision}
    last = persistence.last_saved
    if last is not None and persistence.blocked is None:
        run.state_revision += 1
        fallback: JsonObject = {
            **last,
            "status": "failed",
            "stateRevision": run.state_revision,
            "lastEventSequence": run.sequencer.last_sequence + 1,  # counts run.failed
        }
        try:
            await persistence.save(fallback)
        except Exception as error:
            second = persistence_error("checkpoint.save", error, run.run_id)
            return _unsaved(second, persistence.last_saved)
        run.final_state = fallback
        return {
            "saved": True,
            "status": "failed",
            "stateRevision": run.state_revision,
            "fallback": "lastDurableState",
            "error": cast(JsonObject, first.to_json()),
        }
    return _unsaved(first, last)


def _unsaved(error: ActoviqError, last: JsonObject | None) -> JsonObject:
    return {
        "saved": False,
        "error": cast(JsonObject, error.to_json()),
        "storedStatus": _status(last),
    }


def _status(state: JsonObject | None) -> str | None:
    status = None if state is None else state.get("status")
    return status if isinstance(status, str) else None


def _reason_text(reason: object) -> str:
    if isinstance(reason, BaseException):
        return str(reason) or type(reason).__name__
    return "Run cancelled." if reason is None else str(reason)
