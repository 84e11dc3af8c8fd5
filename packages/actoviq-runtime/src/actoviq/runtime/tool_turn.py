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
   surfaces a reconciliation interruption (Q3). A cancelled run never starts a tool. Pass 2
   and the turn's state live in :mod:`actoviq.runtime.tool_execution`; this module decides.

Finally the results are appended to the transcript in call order and the pending list cleared.
Nothing is ever retried automatically.

A running tool may call ``ctx.report_progress(...)``: each report becomes a ``tool.progress``
event between the call's ``tool.started`` and its ``tool.completed``/``tool.failed``; reports after
the call settled are dropped.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from actoviq.core import (
    HandoffRef,
    Interruption,
    JsonObject,
    ProviderResponseError,
    ToolCallItem,
    iso_now,
)
from actoviq.runtime.handoff_tools import handoff_outcome
from actoviq.runtime.middleware import MiddlewareStage
from actoviq.runtime.resume import decision_for, rejection_result
from actoviq.runtime.state import ResolvedDecision
from actoviq.runtime.tool_execution import (
    ProgressReporter,
    ToolTurnState,
    commit,
    interrupted,
    interruption,
    reconcile_reason,
)
from actoviq.runtime.tool_retries import retries_exceeded
from actoviq.runtime.tool_suspension import resumption_for, suspended_interruptions
from actoviq.runtime.tools import (
    InterruptionDecision,
    PendingTool,
    PendingToolState,
    ResumeAction,
    ToolApproval,
    ToolCallDenied,
    ToolExecutionContext,
    ToolExecutionError,
    ToolFailure,
    ToolInterruptionRequiredError,
    ToolResumption,
    denial_result,
    plan_resume,
    reconciliation_interruption_id,
    reconciliation_result,
)

if TYPE_CHECKING:
    from actoviq.runtime.execution import RunExecution

__all__ = ["finish_turn", "prepare_pending"]


def prepare_pending(execution: RunExecution, calls: Sequence[ToolCallItem]) -> list[PendingTool]:
    """``prepared`` records for every call of a turn (effect from the agent's registered tools).

    A handoff call runs nothing (it only ends the run), so it is recorded as a ``read``.
    """
    if len(calls) > 1:
        # One id, two calls: one decision would approve both and their results could not be
        # told apart, so the turn is refused before anything runs.
        seen: set[str] = set()
        for call in calls:
            if call.id in seen:
                raise ProviderResponseError(
                    f'The model called two tools with the same call id "{call.id}"; '
                    "nothing was run.",
                    code="MODEL_TOOL_CALL_ID_DUPLICATE",
                    details={"callId": call.id},
                )
            seen.add(call.id)
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


class _ToolTurn(ToolTurnState):
    """Pass 1 (decide) of a tool turn; pass 2 is :class:`ToolTurnState`'s."""

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
            raise interrupted(interruptions)
        await self._execute_all()
        if self.late:
            raise interrupted(self.late)
        if not self.finalized:
            self._append_results()
            await ex.save()
        if self.exhausted is not None:
            raise retries_exceeded(ex.run_id, *self.exhausted)

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
            ex.pending[index] = commit(pending, result)
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
            return interruption(pending, "approval", pending.interruption_id, reason, None)
        if action is ResumeAction.INTERRUPT_RECONCILE:
            rid = pending.interruption_id or reconciliation_interruption_id(
                ex.run_id, pending.call.id
            )
            if pending.state is not PendingToolState.UNKNOWN or pending.interruption_id != rid:
                ex.pending[index] = attrs.evolve(
                    pending, state=PendingToolState.UNKNOWN, interruption_id=rid
                )
            return interruption(pending, "reconciliation", rid, reconcile_reason(pending), None)
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
        reporter = ProgressReporter(ex, call)
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
            return interruption(
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
        progress: ProgressReporter | None = None,
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
        reporter = ProgressReporter(ex, call)
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

    async def _handoff(self, index: int, ref: HandoffRef) -> None:
        """Record the model's handoff call: the first of the turn transfers, later ones fail."""
        ex = self.ex
        pending = ex.pending[index]
        ex.handoff, result = handoff_outcome(ex.handoff, pending, ref, ex.entry.handoffs)
        if result is not None:
            ex.pending[index] = commit(pending, result)
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
