"""Finishing one model turn's tool calls: the durable pending-tool state machine (D5, ADR-010).

Every call of the turn is persisted as ``prepared`` with the model response. Then, in two passes:

1. **Decide** (call order): committed calls keep their result; decisions are applied
   (reject → ``denied`` result, reconciled ``committed``/``failed`` → result); then
   ``beforeToolCall`` (``ToolCallDenied`` → ``denied`` result) and ``ToolRunner.prepare``
   (resolution against the agent's tool list, input parsing, policy, the approval gate) — all
   **before** anything is marked ``started`` (Q2). If any call needs a decision, the run
   interrupts here with every open interruption and no call has run (Q1: the other calls stay
   pending and are finished on resume, before the next model call).
2. **Execute** (call order): consecutive parallel-safe reads run concurrently in a TaskGroup
   (results in call order, one checkpoint); other calls run one by one as
   ``started`` (persisted, ``tool.started``) → ``committed`` (persisted, ``tool.completed`` /
   ``tool.failed``). A side effect that times out or is cancelled becomes ``unknown`` and
   surfaces a reconciliation interruption (Q3). A cancelled run never starts a tool.

Finally the results are appended to the transcript in call order and the pending list cleared.
Nothing is ever retried automatically.

A running tool may call ``ctx.report_progress(...)``: each report becomes a ``tool.progress``
event between the call's ``tool.started`` and its ``tool.completed``/``tool.failed``; reports after
the call settled are dropped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs

from actoviq.core import (
    HandoffRef,
    Interruption,
    JsonObject,
    JsonValue,
    ToolCallItem,
    ToolResultItem,
    iso_now,
)
from actoviq.runtime.handoff_tools import handoff_outcome
from actoviq.runtime.middleware import MiddlewareStage
from actoviq.runtime.resume import decision_for, rejection_result
from actoviq.runtime.state import ResolvedDecision
from actoviq.runtime.tool_retries import retries_exceeded, track_retry
from actoviq.runtime.tool_suspension import (
    mark_suspension,
    resumption_for,
    suspended_interruptions,
)
from actoviq.runtime.tools import (
    InterruptionDecision,
    PendingTool,
    PendingToolState,
    PreparedToolCall,
    ResumeAction,
    ToolApproval,
    ToolCallDenied,
    ToolExecutionContext,
    ToolExecutionError,
    ToolFailure,
    ToolInterruptionRequiredError,
    ToolOutput,
    ToolResumption,
    ToolSuspension,
    denial_result,
    failure_result,
    is_parallel_safe,
    plan_resume,
    reconciliation_interruption_id,
    reconciliation_result,
    run_in_call_order,
    settled_state,
    success_result,
)

if TYPE_CHECKING:
    from actoviq.runtime.execution import RunExecution

__all__ = ["finish_turn", "prepare_pending"]

_Outcome = tuple[ToolOutput | None, ToolFailure | None]


def prepare_pending(execution: RunExecution, calls: Sequence[ToolCallItem]) -> list[PendingTool]:
    """``prepared`` records for every call of a turn (effect from the agent's registered tools).

    A handoff call runs nothing (it only ends the run), so it is recorded as a ``read``.
    """
    registry = execution.parts.tools
    allowed = execution.entry.tool_names
    handoffs = execution.entry.handoffs
    pending: list[PendingTool] = []
    for call in calls:
        tool = registry.resolve(call.name) if call.name in allowed else None
        if tool is not None:
            effect = tool.descriptor.effect
        else:
            effect = "read" if call.name in handoffs else "side-effect"
        pending.append(PendingTool.prepare(call, effect, run_id=execution.run_id))
    return pending


async def finish_turn(
    execution: RunExecution, decisions: Mapping[str, InterruptionDecision]
) -> None:
    """Bring every pending call of the turn to ``committed``, or interrupt (see module doc)."""
    await _ToolTurn(execution, decisions).run()


def _interruption(
    pending: PendingTool, kind: str, interruption_id: str, reason: str, metadata: JsonObject | None
) -> Interruption:
    return Interruption(
        id=interruption_id,
        kind=cast(Any, kind),
        reason=reason,
        call_id=pending.call.id,
        tool_name=pending.call.name,
        input=pending.call.input,
        metadata=metadata,
    )


class _ProgressReporter:
    """Emits one call's ``tool.progress`` events until the call settles."""

    __slots__ = ("call", "execution", "open")

    def __init__(self, execution: RunExecution, call: ToolCallItem) -> None:
        self.execution = execution
        self.call = call
        self.open = True

    async def __call__(self, payload: JsonObject) -> None:
        if self.open:
            call = self.call
            await self.execution.emit(
                "tool.progress", {"callId": call.id, "name": call.name, "progress": payload}
            )


def _reconcile_reason(pending: PendingTool) -> str:
    return f'Tool "{pending.call.name}" may have started; manual reconciliation is required.'


class _ToolTurn:
    def __init__(
        self, execution: RunExecution, decisions: Mapping[str, InterruptionDecision]
    ) -> None:
        self.ex = execution
        self.decisions = decisions
        self.ready: dict[int, PreparedToolCall] = {}
        self.reporters: dict[int, _ProgressReporter] = {}
        self.late: list[Interruption] = []
        self.suspensions: dict[str, ToolSuspension] = {}
        self.finalized = False
        self.exhausted: tuple[ToolFailure, int] | None = None  # a tool out of retries

    # -- pass 1: decide ---------------------------------------------------------------------------

    async def run(self) -> None:
        ex = self.ex
        interruptions: list[Interruption] = []
        for index in range(len(ex.pending)):
            nested = suspended_interruptions(ex.pending[index], ex.interruptions)
            if nested:
                interruptions.extend(await self._continue_suspended(index, nested))
                continue
            interruption = await self._decide(index)
            if interruption is not None:
                interruptions.append(interruption)
        if interruptions:
            raise _interrupted(interruptions)
        await self._execute_all()
        if self.late:
            raise _interrupted(self.late)
        if not self.finalized:
            self._append_results()
            await ex.save()
        if self.exhausted is not None:
            raise retries_exceeded(ex.run_id, *self.exhausted)

    def _track(self, name: str, failure: ToolFailure | None) -> None:
        spent = track_retry(self.ex.tool_retries, self.ex.parts.tools, name, failure)
        if spent is not None and self.exhausted is None:
            self.exhausted = spent

    async def _decide(self, index: int) -> Interruption | None:
        ex = self.ex
        pending = ex.pending[index]
        handoff = ex.entry.handoffs.get(pending.call.name) if ex.entry.handoffs else None
        if handoff is not None:
            await self._handoff(index, handoff)
            return None
        decision = decision_for(ex.run_id, pending, self.decisions)
        action = plan_resume(pending, decision)
        if action is ResumeAction.USE_RESULT:
            return None
        if action in (ResumeAction.REJECT, ResumeAction.COMMIT_OUTPUT, ResumeAction.COMMIT_FAILED):
            assert decision is not None
            if action is ResumeAction.REJECT:
                # reference 03 §1.18: the decision's reason verbatim (no formatter)
                result = rejection_result(pending, decision)
            else:
                result = reconciliation_result(pending, decision, ex.parts.runner.error_formatter)
            ex.pending[index] = _commit(pending, result)
            self._audit(pending, decision)
            await ex.save()
            data: JsonObject = {"callId": pending.call.id, "name": pending.call.name}
            if action is ResumeAction.REJECT:
                await ex.emit("tool.rejected", data)
            else:
                await ex.emit("tool.reconciled", {**data, "outcome": decision.outcome})
            return None
        if action is ResumeAction.INTERRUPT_APPROVAL:
            assert pending.interruption_id is not None
            known = next((i for i in ex.interruptions if i.id == pending.interruption_id), None)
            if known is not None:
                return known
            reason = f'Tool "{pending.call.name}" still requires a decision.'
            return _interruption(pending, "approval", pending.interruption_id, reason, None)
        if action is ResumeAction.INTERRUPT_RECONCILE:
            rid = pending.interruption_id or reconciliation_interruption_id(
                ex.run_id, pending.call.id
            )
            if pending.state is not PendingToolState.UNKNOWN or pending.interruption_id != rid:
                ex.pending[index] = attrs.evolve(
                    pending, state=PendingToolState.UNKNOWN, interruption_id=rid
                )
            return _interruption(pending, "reconciliation", rid, _reconcile_reason(pending), None)
        # EXECUTE, EXECUTE_APPROVED, RETRY: authorise now, run in pass 2.
        approval = None
        if decision is not None:
            self._audit(pending, decision)
            if action is ResumeAction.EXECUTE_APPROVED:
                approval = ToolApproval(
                    interruption_id=decision.interruption_id, metadata=decision.metadata
                )
        ex.raise_if_aborted()
        call = pending.call
        try:
            if ex.pipeline.has(MiddlewareStage.BEFORE_TOOL_CALL):
                await ex.stage(
                    MiddlewareStage.BEFORE_TOOL_CALL,
                    lambda ctx: None,
                    lambda: None,
                    tool_call=call,
                )
        except ToolCallDenied as denied:
            await self._commit_failure(
                index,
                ToolFailure(
                    kind="denied", tool_name=call.name, call_id=call.id, message=denied.reason
                ),
                denial_result(call, denied.reason, ex.parts.runner.error_formatter),
            )
            return None
        reporter = _ProgressReporter(ex, call)
        self.reporters[index] = reporter
        context = self._context(pending, approval=approval, progress=reporter)
        try:
            prepared = await ex.parts.runner.prepare(
                call.name, call.input, context, allowed_tools=ex.entry.tool_names
            )
        except ToolExecutionError as error:
            await self._commit_failure(index, error.failure, None)
            return None
        except ToolInterruptionRequiredError as required:
            ex.pending[index] = attrs.evolve(
                pending,
                state=PendingToolState.AWAITING_APPROVAL,
                interruption_id=required.interruption_id,
            )
            return _interruption(
                pending,
                "approval",
                required.interruption_id,
                required.decision.reason,
                required.decision.metadata,
            )
        self.ready[index] = prepared
        return None

    def _context(
        self,
        pending: PendingTool,
        *,
        approval: ToolApproval | None = None,
        resumption: ToolResumption | None = None,
        progress: _ProgressReporter | None = None,
    ) -> ToolExecutionContext:
        ex = self.ex
        return ToolExecutionContext(
            run_id=ex.run_id,
            call_id=pending.call.id,
            signal=ex.signal,
            deadline=time.time() * 1000 + ex.limits.tool_timeout_ms,
            context=ex.context,
            idempotency_key=pending.idempotency_key,
            approval=approval,
            workspace_id=ex.workspace_id,
            metadata=ex.metadata,
            resumption=resumption,
            progress=progress,
        )

    async def _continue_suspended(
        self, index: int, nested: list[Interruption]
    ) -> list[Interruption]:
        """A suspended call: run it again with the decisions made, or interrupt again."""
        ex = self.ex
        pending = ex.pending[index]
        resumption = resumption_for(nested, self.decisions)
        if resumption is None:
            return nested
        for decision in resumption.decisions:
            self._audit(pending, decision)
        ex.raise_if_aborted()
        call = pending.call
        reporter = _ProgressReporter(ex, call)
        self.reporters[index] = reporter
        try:
            self.ready[index] = await ex.parts.runner.prepare(
                call.name,
                call.input,
                self._context(pending, resumption=resumption, progress=reporter),
                allowed_tools=ex.entry.tool_names,
            )
        except ToolExecutionError as error:
            await self._commit_failure(index, error.failure, None)
        return []

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

    async def _handoff(self, index: int, ref: HandoffRef) -> None:
        """Record the model's handoff call: the first of the turn transfers, later ones fail."""
        ex = self.ex
        pending = ex.pending[index]
        ex.handoff, result = handoff_outcome(ex.handoff, pending, ref, ex.entry.handoffs)
        if result is not None:
            ex.pending[index] = _commit(pending, result)
            await ex.save()

    def _audit(self, pending: PendingTool, decision: InterruptionDecision) -> None:
        self.ex.audit.append(
            ResolvedDecision(
                interruption_id=decision.interruption_id,
                call_id=pending.call.id,
                tool_name=pending.call.name,
                outcome=decision.outcome,
                decided_at=iso_now(),
                reason=decision.reason,
                metadata=decision.metadata,
            )
        )

    async def _commit_failure(
        self, index: int, failure: ToolFailure, result: ToolResultItem | None
    ) -> None:
        ex = self.ex
        pending = ex.pending[index]
        if result is None:
            result = failure_result(failure, ex.parts.runner.error_formatter)
        ex.pending[index] = _commit(pending, result)
        self._track(pending.call.name, failure)
        await ex.save()
        await ex.emit(
            "tool.failed",
            {"callId": pending.call.id, "name": pending.call.name, "failure": failure.to_json()},
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
                _interruption(started, "reconciliation", rid, _reconcile_reason(started), None)
            )
            await ex.save()
            await ex.emit(
                "tool.failed", {"callId": call.id, "name": call.name, "failure": failure.to_json()}
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
                "tool.failed", {"callId": call.id, "name": call.name, "failure": failure.to_json()}
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

        async def worker(index: int) -> _Outcome:
            try:
                return await self._outcome(ready[index], ex.pending[index].call)
            finally:
                self._settle_progress(index)

        outcomes = await run_in_call_order(batch, worker, max_parallel=ex.limits.max_parallel_tools)
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
            ex.pending[index] = _commit(pending, result)
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
            present = {item.call_id for item in ex.transcript if isinstance(item, ToolResultItem)}
            results = [item for item in results if item.call_id not in present]
        ex.generated.extend(results)
        ex.transcript.extend(results)
        ex.pending = []
        ex.interruptions = []


def _commit(pending: PendingTool, result: ToolResultItem) -> PendingTool:
    return attrs.evolve(pending, state=PendingToolState.COMMITTED, result=result)


def _artifact_json(artifact: Any) -> JsonObject:
    from actoviq.core import to_json

    return cast(JsonObject, to_json(artifact))


def _interrupted(interruptions: list[Interruption]) -> Exception:
    from actoviq.runtime.execution import RunInterrupted

    return RunInterrupted(interruptions)
