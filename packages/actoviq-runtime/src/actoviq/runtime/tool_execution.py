"""Pass 2 of a tool turn: run the prepared calls, commit and announce their outcomes (D5).

The state a tool turn carries (:class:`ToolTurnState`) and what both passes of
:mod:`actoviq.runtime.tool_turn` share (failure commits, suspensions, retry tracking) live here
too. Execution, in call order: consecutive parallel-safe reads run concurrently (results in call
order, one checkpoint); other calls run one by one as ``started`` (persisted, ``tool.started``) →
``committed`` (persisted, ``tool.completed`` / ``tool.failed``). A side effect that times out or
is cancelled becomes ``unknown`` and surfaces a reconciliation interruption (Q3). A cancelled run
never starts a tool. Finally the results are appended to the transcript in call order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs

from actoviq.core import (
    Interruption,
    JsonObject,
    JsonValue,
    ToolCallItem,
    ToolResultItem,
)
from actoviq.runtime.middleware import MiddlewareStage
from actoviq.runtime.tool_retries import track_retry
from actoviq.runtime.tool_suspension import mark_suspension
from actoviq.runtime.tools import (
    InterruptionDecision,
    PendingTool,
    PendingToolState,
    PreparedToolCall,
    ToolExecutionError,
    ToolFailure,
    ToolOutput,
    ToolSuspension,
    failure_result,
    is_parallel_safe,
    reconciliation_interruption_id,
    run_in_call_order,
    settled_state,
    success_result,
)
from actoviq.runtime.tools.runner_support import failure_json

if TYPE_CHECKING:
    from actoviq.runtime.execution import RunExecution

__all__ = [
    "ProgressReporter",
    "ToolTurnState",
    "commit",
    "interrupted",
    "interruption",
    "reconcile_reason",
]

_Outcome = tuple[ToolOutput | None, ToolFailure | None]


def interruption(
    pending: PendingTool, kind: str, interruption_id: str, reason: str, metadata: JsonObject | None
) -> Interruption:
    """The open interruption of ``pending`` (an approval or a reconciliation)."""
    return Interruption(
        id=interruption_id,
        kind=cast(Any, kind),
        reason=reason,
        call_id=pending.call.id,
        tool_name=pending.call.name,
        input=pending.call.input,
        metadata=metadata,
    )


class ProgressReporter:
    """Emits one call's ``tool.progress`` events until the call settles."""

    __slots__ = ("call", "execution", "open")

    def __init__(self, execution: RunExecution, call: ToolCallItem) -> None:
        self.execution = execution
        self.call = call
        self.open = True

    async def __call__(self, payload: JsonObject) -> None:
        """Emit ``payload`` as the call's ``tool.progress`` (dropped once the call settled)."""
        if self.open:
            call = self.call
            await self.execution.emit(
                "tool.progress", {"callId": call.id, "name": call.name, "progress": payload}
            )


def reconcile_reason(pending: PendingTool) -> str:
    """Why a call that may have started needs a reconciliation decision."""
    return f'Tool "{pending.call.name}" may have started; manual reconciliation is required.'


class ToolTurnState:
    """One tool turn's state, and pass 2 (execute) over it (pass 1 is the subclass's)."""

    def __init__(
        self, execution: RunExecution, decisions: Mapping[str, InterruptionDecision]
    ) -> None:
        self.ex = execution
        self.decisions = decisions
        self.ready: dict[int, PreparedToolCall] = {}
        self.reporters: dict[int, ProgressReporter] = {}
        self.late: list[Interruption] = []
        self.suspensions: dict[str, ToolSuspension] = {}
        self.finalized = False
        self.exhausted: tuple[ToolFailure, int] | None = None  # a tool out of retries

    def _track(self, name: str, failure: ToolFailure | None) -> None:
        spent = track_retry(self.ex.tool_retries, self.ex.parts.tools, name, failure)
        if spent is not None and self.exhausted is None:
            self.exhausted = spent

    async def _suspend(self, index: int, pending: PendingTool, suspension: ToolSuspension) -> None:
        """The running call suspended itself: record its interruptions (the run interrupts)."""
        ex = self.ex
        call = pending.call
        marked = mark_suspension(call, suspension, (*ex.interruptions, *self.late))
        if isinstance(marked, ToolFailure):
            ex.pending[index] = pending
            await self._commit_failure(index, marked, None)
            return
        ex.pending[index] = attrs.evolve(
            pending, state=PendingToolState.AWAITING_APPROVAL, interruption_id=marked[0].id
        )
        self.late.extend(marked)
        await ex.save()
        ids: list[JsonValue] = [entry.id for entry in marked]
        await ex.emit(
            "tool.suspended", {"callId": call.id, "name": call.name, "interruptionIds": ids}
        )

    async def _commit_failure(
        self, index: int, failure: ToolFailure, result: ToolResultItem | None
    ) -> None:
        ex = self.ex
        pending = ex.pending[index]
        if result is None:
            result = failure_result(failure, ex.parts.runner.error_formatter)
        ex.pending[index] = commit(pending, result)
        self._track(pending.call.name, failure)
        await ex.save()
        await ex.emit(
            "tool.failed",
            {
                "callId": pending.call.id,
                "name": pending.call.name,
                "failure": failure_json(failure, ex.parts.runner.detail_text),
            },
        )

    # -- pass 2: execute --------------------------------------------------------------------------

    async def _execute_all(self) -> None:
        ex = self.ex
        ready = self.ready
        count = len(ex.pending)
        max_parallel = ex.limits.max_parallel_tools
        policy = ex.parts.policy_configured
        index = 0
        while index < count:
            prepared = ready.get(index)
            if prepared is None:
                index += 1
                continue
            if is_parallel_safe(
                prepared.tool, policy_configured=policy, max_parallel_tools=max_parallel
            ):
                batch = [index]
                nxt = index + 1
                while nxt < count and len(batch) < max_parallel:
                    candidate = ready.get(nxt)
                    if candidate is None or not is_parallel_safe(
                        candidate.tool, policy_configured=policy, max_parallel_tools=max_parallel
                    ):
                        break
                    batch.append(nxt)
                    nxt += 1
                await self._run_batch(batch)
                index = nxt
            else:
                await self._run_one(index, prepared)
                index += 1

    async def _invoke(self, prepared: PreparedToolCall, call: ToolCallItem) -> ToolOutput:
        ex = self.ex
        runner = ex.parts.runner
        pipeline = ex.pipeline
        if pipeline.has(MiddlewareStage.WRAP_TOOL_CALL):
            output = await pipeline.run_wrap(
                MiddlewareStage.WRAP_TOOL_CALL,
                ex.middleware_context(tool_call=call),
                lambda ctx: runner.invoke(prepared),
                require_identity=True,
            )
        else:
            output = await runner.invoke(prepared)
        if pipeline.has(MiddlewareStage.AFTER_TOOL_CALL):
            await pipeline.run_with_error_stage(
                MiddlewareStage.AFTER_TOOL_CALL,
                ex.middleware_context(tool_call=call, tool_output=output),
                lambda ctx: None,
            )
        return output

    async def _outcome(self, prepared: PreparedToolCall, call: ToolCallItem) -> _Outcome:
        try:
            return await self._invoke(prepared, call), None
        except ToolExecutionError as error:
            return None, error.failure
        except ToolSuspension as suspension:
            self.suspensions[call.id] = suspension
            return None, None

    def _batch_outcome(
        self, call: ToolCallItem, outcome: ToolOutput | ToolExecutionError | ToolSuspension
    ) -> _Outcome:
        """What :meth:`_outcome` gives for a call settled by ``ToolRunner.invoke_batch``."""
        if isinstance(outcome, ToolExecutionError):
            return None, outcome.failure
        if isinstance(outcome, ToolSuspension):
            self.suspensions[call.id] = outcome
            return None, None
        return outcome, None

    def _on_abort(self, index: int) -> None:
        """A cancelled run: a started side effect becomes ``unknown``; others stay replayable."""
        ex = self.ex
        pending = ex.pending[index]
        if pending.state is PendingToolState.STARTED and pending.effect == "side-effect":
            ex.pending[index] = pending.advance(
                PendingToolState.UNKNOWN,
                interruption_id=reconciliation_interruption_id(ex.run_id, pending.call.id),
            )

    def _settle_progress(self, index: int) -> None:
        reporter = self.reporters.pop(index, None)
        if reporter is not None:
            reporter.open = False

    async def _run_one(self, index: int, prepared: PreparedToolCall) -> None:
        ex = self.ex
        pending = ex.pending[index]
        call = pending.call
        ex.raise_if_aborted()
        started = attrs.evolve(pending, state=PendingToolState.STARTED, interruption_id=None)
        ex.pending[index] = started
        await ex.save()
        await ex.emit(
            "tool.started", {"callId": call.id, "name": call.name, "effect": pending.effect}
        )
        try:
            output, failure = await self._outcome(prepared, call)
        except asyncio.CancelledError:
            self._on_abort(index)
            raise
        finally:
            self._settle_progress(index)
        suspension = self.suspensions.pop(call.id, None)
        if suspension is not None:
            await self._suspend(index, started, suspension)
            return
        if failure is not None and failure.kind == "cancelled" and ex.signal.aborted:
            self._on_abort(index)
            ex.raise_if_aborted()
        if (
            failure is not None
            and settled_state(pending.effect, failure) is PendingToolState.UNKNOWN
        ):
            rid = reconciliation_interruption_id(ex.run_id, call.id)
            ex.pending[index] = started.advance(PendingToolState.UNKNOWN, interruption_id=rid)
            self.late.append(
                interruption(started, "reconciliation", rid, reconcile_reason(started), None)
            )
            await ex.save()
            await ex.emit(
                "tool.failed",
                {
                    "callId": call.id,
                    "name": call.name,
                    "failure": failure_json(failure, ex.parts.runner.detail_text),
                },
            )
            return
        if failure is not None:
            result = failure_result(failure, ex.parts.runner.error_formatter)
        else:
            assert output is not None
            result = success_result(call, output)
        ex.pending[index] = started.advance(PendingToolState.COMMITTED, result=result)
        self._track(call.name, failure)
        await ex.save()
        await self._announce(call, output, failure)

    async def _announce(
        self, call: ToolCallItem, output: ToolOutput | None, failure: ToolFailure | None
    ) -> None:
        ex = self.ex
        if failure is not None:
            await ex.emit(
                "tool.failed",
                {
                    "callId": call.id,
                    "name": call.name,
                    "failure": failure_json(failure, ex.parts.runner.detail_text),
                },
            )
            return
        data: JsonObject = {"callId": call.id, "name": call.name}
        if output is not None and output.artifacts:
            data["artifacts"] = [_artifact_json(artifact) for artifact in output.artifacts]
        await ex.emit("tool.completed", data)

    async def _run_batch(self, batch: list[int]) -> None:
        ex = self.ex
        ex.raise_if_aborted()
        calls = [ex.pending[index].call for index in batch]
        for call in calls:
            await ex.emit("tool.started", {"callId": call.id, "name": call.name, "effect": "read"})
        ready = self.ready
        runner = ex.parts.runner
        pipeline = ex.pipeline
        if (
            len(batch) > 1
            and not pipeline.has(MiddlewareStage.WRAP_TOOL_CALL)
            and not pipeline.has(MiddlewareStage.AFTER_TOOL_CALL)
            and all(runner.runs_in_thread(ready[index]) for index in batch)
        ):  # plain tools only: every call in a worker thread, no task per call (issue 21, W2)
            try:
                settled = await runner.invoke_batch([ready[index] for index in batch])
            finally:
                for index in batch:
                    self._settle_progress(index)
            outcomes = [
                self._batch_outcome(call, out) for call, out in zip(calls, settled, strict=True)
            ]
        else:

            async def worker(index: int) -> _Outcome:
                try:
                    return await self._outcome(ready[index], ex.pending[index].call)
                finally:
                    self._settle_progress(index)

            outcomes = await run_in_call_order(
                batch, worker, max_parallel=ex.limits.max_parallel_tools
            )
        if ex.signal.aborted:
            ex.raise_if_aborted()
        formatter = ex.parts.runner.error_formatter
        suspended = {index for index in batch if ex.pending[index].call.id in self.suspensions}
        for index, (output, failure) in zip(batch, outcomes, strict=True):
            pending = ex.pending[index]
            if index in suspended:
                continue
            if failure is not None:
                result = failure_result(failure, formatter)
            else:
                assert output is not None
                result = success_result(pending.call, output)
            ex.pending[index] = commit(pending, result)
            self._track(pending.call.name, failure)
        last = batch[-1]
        if not suspended and all(
            p.state is PendingToolState.COMMITTED for p in ex.pending[last + 1 :]
        ):
            self._append_results()
            self.finalized = True
        await ex.save()
        for index, call, (output, failure) in zip(batch, calls, outcomes, strict=True):
            suspension = self.suspensions.pop(call.id, None)
            if suspension is not None:
                await self._suspend(index, ex.pending[index], suspension)
            else:
                await self._announce(call, output, failure)

    def _append_results(self) -> None:
        ex = self.ex
        results = [p.result for p in ex.pending if p.result is not None]
        if ex.resumed:
            present = _answered(ex.transcript, {item.call_id for item in results})
            results = [item for item in results if item.call_id not in present]
        ex.generated.extend(results)
        ex.transcript.extend(results)
        ex.pending = []
        ex.interruptions = []


def _answered(transcript: Sequence[object], call_ids: set[str]) -> set[str]:
    """The ``call_ids`` whose latest call already has its result in ``transcript``.

    Read backwards: a result met before its call answers that call; once the call is met, an
    older result with the same id answered an earlier turn (a model that reuses call ids),
    not this one.
    """
    answered: set[str] = set()
    open_ids = set(call_ids)
    for item in reversed(transcript):
        if not open_ids:
            break
        if isinstance(item, ToolResultItem) and item.call_id in open_ids:
            answered.add(item.call_id)
        elif isinstance(item, ToolCallItem) and item.id in open_ids:
            open_ids.discard(item.id)
    return answered


def commit(pending: PendingTool, result: ToolResultItem) -> PendingTool:
    """``pending`` committed with ``result``.

    Built field by field through ``PendingTool``'s own ``__init__`` (its checks run) rather than
    ``attrs.evolve``, which looks the fields up again on every call (a commit per tool call).
    """
    if pending.__class__ is not PendingTool:  # a subclass may add fields
        return attrs.evolve(pending, state=PendingToolState.COMMITTED, result=result)
    return PendingTool(
        call=pending.call,
        effect=pending.effect,
        state=PendingToolState.COMMITTED,
        interruption_id=pending.interruption_id,
        idempotency_key=pending.idempotency_key,
        result=result,
    )


def _artifact_json(artifact: Any) -> JsonObject:
    from actoviq.core import to_json

    return cast(JsonObject, to_json(artifact))


def interrupted(interruptions: list[Interruption]) -> Exception:
    """The exception that interrupts the run with ``interruptions``."""
    from actoviq.runtime.execution import RunInterrupted

    return RunInterrupted(interruptions)
