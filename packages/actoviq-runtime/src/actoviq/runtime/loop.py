"""The turn loop: how a :class:`~actoviq.runtime.execution.RunExecution` runs and ends.

Order of operations (spec 03 §1.7 with the D5 fixes): ``run.started``/``run.resumed`` → prepareInput
→ session load (CAS on a caller revision, Q16) → instructions → input guardrails → first
checkpoint → beforeRun (:mod:`actoviq.runtime.run_input`) → finish a resumed turn's pending tools →
turn loop (model call, usage and budget, afterModelResponse in :mod:`actoviq.runtime.model_turn`;
tool calls via :mod:`actoviq.runtime.tool_turn`; afterTurn; structured output checked and retried
in :mod:`actoviq.runtime.structured_output`) → finalizeOutput → output guardrails → session append
→ afterRun → ``run.completed`` (:mod:`actoviq.runtime.run_output`). Interrupted, cancelled and
failed runs end in :mod:`actoviq.runtime.run_outcomes`.

The state is persisted before each state-changing event. Cancellation (``cancel()``, close, a
stopped consumer, the run deadline, an external signal) aborts the run's signal and cancels its
task; the run then ends ``cancelled`` and its checkpoint is kept.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from actoviq.core import RunError, RunResult, ToolCallItem
from actoviq.events import use_trace_context
from actoviq.runtime.concurrency import held_session_owner
from actoviq.runtime.errors import (
    RunCancelledError,
    RunDeadlineExceededError,
    RunStateStaleError,
)
from actoviq.runtime.execution import RunExecution, RunInterrupted
from actoviq.runtime.failures import persistence_error
from actoviq.runtime.middleware import MiddlewareStage
from actoviq.runtime.model_turn import model_turn
from actoviq.runtime.run_input import load_session, prepare_input, start_transcript
from actoviq.runtime.run_outcomes import run_cancelled, run_failed, run_interrupted
from actoviq.runtime.run_output import finalize, hand_off
from actoviq.runtime.run_timer import RunTimer
from actoviq.runtime.structured_output import retry_output
from actoviq.runtime.tool_turn import finish_turn

__all__ = ["execute", "hosts_run"]

_hosts: set[object] = set()  # the tasks executing a run right now


def hosts_run(task: asyncio.Task[Any]) -> bool:
    """True while ``task`` executes a run (its own task, or a caller hosting it inline)."""
    return task in _hosts


# -- main -------------------------------------------------------------------------------------


async def execute(run: RunExecution) -> RunResult[Any]:
    """Claim a resumed run, then schedule (session lock, permit), execute and settle it.

    A refused claim raises before anything else happens: no event, no write.
    """
    run.task = task = asyncio.current_task()
    _hosts.add(task)
    try:
        if run.expected is not None:
            await _claim(run)
        run.running = True
        loop = asyncio.get_running_loop()
        run.timer = timer = RunTimer(
            loop,
            (run.deadline_ms - time.time() * 1000) / 1000.0,
            run.limits.model_call_timeout_ms / 1000.0,
            lambda: _deadline_passed(run),
        )
        beat = (
            loop.create_task(run.persistence.heartbeat(run.abort))
            if run.persistence.lease is not None
            else None
        )
        try:
            # Tools, middleware and runs started inside this run see its trace (S8): a run they
            # start becomes a child of this one. The task (or InContext) owns its context copy.
            with use_trace_context(run.trace):
                return await _settle(run)
        finally:
            timer.cancel()
            if beat is not None:
                beat.cancel()
                await asyncio.wait({beat})
            if run.final_state is not None:
                run.parts.ledger.record(run.final_state, always=run.resumed)
    finally:
        _hosts.discard(task)


def _deadline_passed(run: RunExecution) -> None:
    run.abort(RunDeadlineExceededError(run_id=run.run_id))  # built only when it fires


async def _claim(run: RunExecution) -> None:
    """Claim the resumed run (nothing has happened yet; a refusal writes and emits nothing).

    Raises:
        RunStateStaleError: the state may not run (see ``AgentRuntime.resume``).
        RunPersistenceError: ``RUN_STATE_SERIALIZATION_FAILED`` or
            ``CHECKPOINT_CLAIM_FAILED`` (the store failed; retry the resume).
    """
    assert run.expected is not None
    run.state_revision += 1
    try:
        state = run.snapshot_json()
    except Exception as error:
        raise persistence_error("state.serialize", error, run.run_id) from error
    try:
        await run.persistence.claim(state, run.expected)
    except RunStateStaleError:
        raise
    except Exception as error:
        raise persistence_error("checkpoint.claim", error, run.run_id) from error
    run.parts.ledger.record(state, always=True)


async def _settle(run: RunExecution) -> RunResult[Any]:
    """Run the body and end the run: every failure ends typed, with ``run.failed``."""
    try:
        try:
            run.raise_if_aborted()
            return await _scheduled(run)
        except RunInterrupted as interrupted:
            run.finish_cancel_bookkeeping()
            run.ending = True
            return await run_interrupted(run, interrupted)
        except asyncio.CancelledError:
            if not run.signal.aborted:
                task = run.task
                if not run.inline and (task is None or task.cancelling()):
                    raise
                # Hosted in its caller's task: the caller was cancelled (see inline_run). Or
                # nobody cancelled the run's own task: a provider, middleware or sink raised
                # CancelledError itself; the run ends cancelled as run() ends it, typed.
                run.abort(
                    RunCancelledError(
                        "Run caller was cancelled."
                        if run.inline
                        else "A CancelledError was raised inside the run."
                    )
                )
            run.finish_cancel_bookkeeping()
            lost = run.claim_lost()
            if lost is not None:
                raise lost from None
            run.ending = True
            return await run_cancelled(run)
    except asyncio.CancelledError:
        raise  # not the run's own abort: whoever cancelled the task owns the outcome
    except Exception as error:
        run.finish_cancel_bookkeeping()
        if run.signal.aborted and not run.ending and run.claim_lost() is None:
            run.ending = True
            return await run_cancelled(run)  # failures after an abort are the abort's
        typed = await run_failed(run, error)
        if typed is error:
            raise
        raise typed from error
    except GeneratorExit:
        raise  # the coroutine is being closed (its task destroyed): it may not await again
    except BaseException as error:
        # sys.exit() in a tool, a foreign signal: the run ends failed and saved all the same;
        # the host's own exits then go on, anything else becomes the typed RUN_FAILED.
        run.finish_cancel_bookkeeping()
        typed = await run_failed(run, error)
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        raise typed from error


async def _scheduled(run: RunExecution) -> RunResult[Any]:
    if run.inline:
        # A run in its caller's task still lets the loop run others first, as awaiting a task
        # did: runs gathered together take their permits side by side (a caller's cancel here
        # ends the run cancelled, as before).
        await asyncio.sleep(0)
    parts = run.parts
    if run.session_id is not None:
        tenant = run.tenant_id or "default"
        owner = held_session_owner(parts.session_locks, tenant, run.session_id)
        if owner is not None:
            raise RunError(
                f'Run "{run.run_id}" needs session "{run.session_id}", which its caller '
                f'run "{owner}" holds: it would wait forever. Start it after that run ends '
                "(e.g. hand off from the run's result) or give it another session.",
                code="SESSION_REENTRANT",
                run_id=run.run_id,
                phase="runtime",
                details={"sessionId": run.session_id, "holderRunId": owner},
            )
        async with parts.session_locks.hold(tenant, run.session_id, run.run_id):
            return await _with_permit(run)
    gate = parts.gate  # _with_permit inlined: one coroutine less per run
    await gate.acquire()
    try:
        return await _body(run)
    finally:
        gate.release()


async def _with_permit(run: RunExecution) -> RunResult[Any]:
    gate = run.parts.gate
    await gate.acquire()
    try:
        return await _body(run)
    finally:
        gate.release()


async def _body(run: RunExecution) -> RunResult[Any]:
    await run.emit_start()
    if run.start_error is not None:
        raise run.start_error
    fresh = not run.resumed and run.turn == 0 and not run.generated
    prepared_items = await prepare_input(run)
    if run.session_id is not None:
        prepared_items = await load_session(run, prepared_items, fresh)
    if fresh:
        await start_transcript(run, prepared_items)
    if run.pending:
        await finish_turn(run, run.decisions)
        if run.handoff is not None:
            return await hand_off(run, run.last_response)
    return await _turns(run)


async def _turns(run: RunExecution) -> RunResult[Any]:
    limits = run.limits
    response = run.last_response
    while run.turn < limits.max_turns:
        run.raise_if_aborted()
        response = await model_turn(run)
        calls = [item for item in response.output if isinstance(item, ToolCallItem)]
        if not calls:
            if run.entry.output_validator is None or not await retry_output(run, response):
                break
            continue
        await finish_turn(run, {})
        if run.pipeline.has(MiddlewareStage.AFTER_TURN):
            await run.stage(MiddlewareStage.AFTER_TURN, lambda ctx: None, lambda: None)
        if run.handoff is not None:
            return await hand_off(run, response)
    if response is None or (
        run.turn >= limits.max_turns
        and any(isinstance(item, ToolCallItem) for item in response.output)
    ):
        if run.turn >= limits.max_turns:
            raise RunError(
                f"Run exceeded maxTurns={limits.max_turns}.",
                code="MAX_TURNS_EXCEEDED",
                run_id=run.run_id,
                phase="runtime",
            )
        raise RunError(
            "Run has no model response.",
            code="EMPTY_MODEL_RESPONSE",
            run_id=run.run_id,
            phase="finalize_output",
        )
    return await finalize(run, response)
