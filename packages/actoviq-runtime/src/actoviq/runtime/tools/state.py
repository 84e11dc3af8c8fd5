"""The durable pending-tool state machine and reconciliation rules (D5, spec 03 §4.8, Q1-Q6).

Every call of a model turn is persisted as a :class:`PendingTool` (in call order, in the run
state). The runtime moves each through::

    prepared ──► started ──► committed
       │  ▲          └────► unknown ──► committed (reconciled) / started (retry)
       ▼  │
    awaiting_approval ──► committed (rejected)

Policy, approval and parsing happen while ``prepared`` (before ``started`` is persisted). A
side-effect call cancelled or timed out mid-flight becomes ``unknown``, never ``committed``.
:func:`plan_resume` is the one rule table for what ``resume()`` does with each pending call.

Wire form (camelCase, through the core converter): ``{call, effect, status, interruptionId?,
idempotencyKey?, result?}`` — the state is written under the reference key ``status``.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import attrs

from actoviq.core import (
    ActoviqError,
    ItemValidationError,
    ToolCallItem,
    ToolResultItem,
    Unset,
    converter,
    item_from_json,
    register_wire_class,
)
from actoviq.runtime.tools.decisions import (
    DecisionOutcome,
    InterruptionDecision,
    idempotency_key_for,
)
from actoviq.runtime.tools.effects import TOOL_EFFECTS, ToolEffect
from actoviq.runtime.tools.errors import ToolErrorFormatter, ToolFailure
from actoviq.runtime.tools.results import denial_result, failure_result

__all__ = [
    "DecisionOutcome",
    "InterruptionDecision",
    "PendingTool",
    "PendingToolState",
    "PendingToolTransitionError",
    "ReconciliationDecisionError",
    "ResumeAction",
    "plan_resume",
    "reconciliation_result",
    "settled_state",
]


class PendingToolState(enum.StrEnum):
    """Durable states of one tool call of the current turn."""

    PREPARED = "prepared"
    STARTED = "started"
    COMMITTED = "committed"
    AWAITING_APPROVAL = "awaiting_approval"
    UNKNOWN = "unknown"


_TRANSITIONS: dict[PendingToolState, frozenset[PendingToolState]] = {
    PendingToolState.PREPARED: frozenset(
        {PendingToolState.STARTED, PendingToolState.AWAITING_APPROVAL, PendingToolState.COMMITTED}
    ),
    PendingToolState.AWAITING_APPROVAL: frozenset(
        {
            PendingToolState.STARTED,
            PendingToolState.COMMITTED,
            PendingToolState.AWAITING_APPROVAL,
        }
    ),
    # STARTED -> AWAITING_APPROVAL: the running tool suspended itself (ToolSuspension).
    PendingToolState.STARTED: frozenset(
        {
            PendingToolState.COMMITTED,
            PendingToolState.UNKNOWN,
            PendingToolState.AWAITING_APPROVAL,
        }
    ),
    PendingToolState.UNKNOWN: frozenset({PendingToolState.COMMITTED, PendingToolState.STARTED}),
    PendingToolState.COMMITTED: frozenset(),
}


class PendingToolTransitionError(ActoviqError, ValueError):
    """A pending tool was moved along an edge the state machine does not have."""

    default_code: ClassVar[str] = "PENDING_TOOL_TRANSITION_INVALID"


class ReconciliationDecisionError(ActoviqError, ValueError):
    """A resume decision does not fit the pending call (e.g. ``retry`` for a side-effect)."""

    default_code: ClassVar[str] = "RECONCILIATION_DECISION_INVALID"


def _check_effect(_: object, __: object, value: object) -> None:
    if value not in TOOL_EFFECTS:
        raise ItemValidationError(
            f"PendingTool.effect must be one of {TOOL_EFFECTS}.", field="effect"
        )


@attrs.frozen(kw_only=True, slots=True)
class PendingTool:
    """One tool call of the current turn and how far it got.

    Example:
        >>> call = ToolCallItem(id="c1", name="save", input={})
        >>> pending = PendingTool.prepare(call, "idempotent-write", run_id="r1")
        >>> pending.idempotency_key, pending.advance(PendingToolState.STARTED).state.value
        ('r1:c1', 'started')
    """

    call: ToolCallItem
    effect: ToolEffect = attrs.field(validator=_check_effect)
    state: PendingToolState = attrs.field(converter=PendingToolState)
    interruption_id: str | None = None
    idempotency_key: str | None = None
    result: ToolResultItem | None = None

    def __attrs_post_init__(self) -> None:
        if self.state is PendingToolState.COMMITTED and self.result is None:
            raise PendingToolTransitionError(
                f'Pending tool "{self.call.id}" is committed without a result.'
            )

    @classmethod
    def prepare(cls, call: ToolCallItem, effect: ToolEffect, *, run_id: str) -> PendingTool:
        """A fresh ``prepared`` record (with the idempotency key for idempotent-write)."""
        return cls(
            call=call,
            effect=effect,
            state=PendingToolState.PREPARED,
            idempotency_key=idempotency_key_for(run_id, call.id, effect),
        )

    @property
    def call_id(self) -> str:
        """The call id."""
        return self.call.id

    def advance(
        self,
        state: PendingToolState,
        *,
        result: ToolResultItem | None = None,
        interruption_id: str | None = None,
    ) -> PendingTool:
        """A copy in ``state`` (checked against the state machine).

        Raises:
            PendingToolTransitionError: the edge does not exist, or ``committed`` lacks a result.
        """
        if state not in _TRANSITIONS[self.state]:
            raise PendingToolTransitionError(
                f'Pending tool "{self.call.id}" cannot move from {self.state.value} '
                f"to {state.value}."
            )
        return attrs.evolve(
            self,
            state=state,
            result=result if result is not None else self.result,
            interruption_id=interruption_id
            if interruption_id is not None
            else self.interruption_id,
        )


def settled_state(effect: ToolEffect, failure: ToolFailure | None) -> PendingToolState:
    """Where a started call goes once the runner returned or failed.

    A ``side-effect`` call that was cancelled or timed out may have had its effect: ``unknown``
    (D5/Q3). Everything else is ``committed`` (success or error result).
    """
    if failure is not None and effect == "side-effect" and failure.kind in ("cancelled", "timeout"):
        return PendingToolState.UNKNOWN
    return PendingToolState.COMMITTED


class ResumeAction(enum.StrEnum):
    """What ``resume()`` does with one pending call."""

    USE_RESULT = "use_result"
    EXECUTE = "execute"
    EXECUTE_APPROVED = "execute_approved"
    REJECT = "reject"
    COMMIT_OUTPUT = "commit_output"
    COMMIT_FAILED = "commit_failed"
    RETRY = "retry"
    INTERRUPT_APPROVAL = "interrupt_approval"
    INTERRUPT_RECONCILE = "interrupt_reconcile"


def plan_resume(pending: PendingTool, decision: InterruptionDecision | None) -> ResumeAction:
    """The resume rule for one pending call (ADR-010 as fixed by D5, Q5, Q6).

    * ``committed`` → use the stored result; never re-invoke (decisions are ignored).
    * ``prepared`` → nothing ran: authorise and execute again.
    * ``started`` read → replay-safe: execute again. Other ``started`` calls and ``unknown``
      calls need a reconciliation decision (``committed`` / ``failed`` / ``retry``).
    * ``awaiting_approval`` → ``approve`` / ``reject``; no decision interrupts again.

    Raises:
        ReconciliationDecisionError: the decision does not fit (wrong kind, ``retry`` for a
            side-effect or a keyless idempotent-write, ``committed`` without an output).
    """
    state = pending.state
    if state is PendingToolState.COMMITTED:
        return ResumeAction.USE_RESULT
    if state is PendingToolState.PREPARED:
        return ResumeAction.EXECUTE
    if state is PendingToolState.AWAITING_APPROVAL:
        if decision is None:
            return ResumeAction.INTERRUPT_APPROVAL
        if decision.outcome == "approve":
            return ResumeAction.EXECUTE_APPROVED
        if decision.outcome == "reject":
            return ResumeAction.REJECT
        raise ReconciliationDecisionError(
            f'Interruption "{decision.interruption_id}" is an approval; '
            f'outcome "{decision.outcome}" does not apply (use approve or reject).'
        )
    if state is PendingToolState.STARTED and pending.effect == "read" and decision is None:
        return ResumeAction.EXECUTE
    if decision is None:
        return ResumeAction.INTERRUPT_RECONCILE
    if decision.outcome == "committed":
        if isinstance(decision.output, Unset):
            raise ReconciliationDecisionError(
                f'Decision "committed" for "{decision.interruption_id}" needs the output.'
            )
        return ResumeAction.COMMIT_OUTPUT
    if decision.outcome == "failed":
        return ResumeAction.COMMIT_FAILED
    if decision.outcome == "retry":
        if pending.effect == "read" or (
            pending.effect == "idempotent-write" and pending.idempotency_key
        ):
            return ResumeAction.RETRY
        raise ReconciliationDecisionError(
            f'Tool call "{pending.call.id}" ({pending.effect}) cannot be retried: only read '
            "tools and idempotent-write tools with an idempotency key may be retried."
        )
    raise ReconciliationDecisionError(
        f'Interruption "{decision.interruption_id}" is a reconciliation; outcome '
        f'"{decision.outcome}" does not apply (use committed, failed or retry).'
    )


def reconciliation_result(
    pending: PendingTool,
    decision: InterruptionDecision,
    formatter: ToolErrorFormatter | None = None,
) -> ToolResultItem:
    """The result item for a ``reject``, ``committed`` or ``failed`` decision.

    Raises:
        ReconciliationDecisionError: the decision is ``approve`` / ``retry`` (those execute) or
            ``committed`` without an output.
    """
    call = pending.call
    if decision.outcome == "reject":
        return denial_result(
            call, decision.reason or f'Tool "{call.name}" was rejected.', formatter
        )
    if decision.outcome == "committed":
        if isinstance(decision.output, Unset):
            raise ReconciliationDecisionError(
                f'Decision "committed" for "{decision.interruption_id}" needs the output.'
            )
        return ToolResultItem(
            call_id=call.id, name=call.name, status="success", output=decision.output
        )
    if decision.outcome == "failed":
        failure = ToolFailure(
            kind="execution",
            tool_name=call.name,
            call_id=call.id,
            message=decision.reason or f'Tool "{call.name}" failed.',
        )
        return failure_result(failure, formatter)
    raise ReconciliationDecisionError(
        f'Decision "{decision.outcome}" executes the tool; it has no reconciliation result.'
    )


def _call_from_json(data: Any) -> ToolCallItem:
    item = item_from_json(data)
    if not isinstance(item, ToolCallItem):
        raise ItemValidationError("PendingTool.call must be a tool_call item.", field="call")
    return item


def _result_from_json(data: Any) -> ToolResultItem:
    item = item_from_json(data)
    if not isinstance(item, ToolResultItem):
        raise ItemValidationError("PendingTool.result must be a tool_result item.", field="result")
    return item


def _state_from_json(data: Any) -> PendingToolState:
    try:
        return PendingToolState(data)
    except ValueError:
        raise ItemValidationError(
            f"PendingTool.status {data!r} is not a pending tool state.", field="status"
        ) from None


register_wire_class(
    PendingTool,
    rename={"state": "status"},
    decoders={"call": _call_from_json, "result": _result_from_json, "state": _state_from_json},
)
converter.register_unstructure_hook(PendingToolState, lambda state: state.value)
