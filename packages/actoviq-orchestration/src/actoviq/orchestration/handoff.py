"""Handoff: the target agent becomes the owner of the conversation (spec 04 §1.8, §8.2-20).

:func:`execute_handoff` is the explicit primitive: filter the conversation, run the runtime's
``beforeHandoff`` stage, run the target as a child of the parent scope on the parent's session
(``transfer``), and move ownership to the target, even when it fails (then the conversation
ends with one ``handoff`` error item). The target sees the history once: its input replaces the
stored session history (``session_history="provided"``) and only its own items are appended.

Model-driven handoff: the runtime offers an agent's ``handoffs`` (``HandoffRef``, or
:meth:`HandoffSpec.ref`) to the model as tools and ends the run with ``RunResult.handoff`` when the
model calls one. :class:`~actoviq.orchestration.handoff_loop.HandoffLoop` executes those requests
until an owner answers without handing off, bounded by ``max_handoffs``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, cast

import attrs

from actoviq.core import (
    ITEM_TYPES,
    AgentSpec,
    CanonicalItem,
    ErrorItem,
    HandoffCallItem,
    HandoffRef,
    JsonObject,
    PreservedItem,
)
from actoviq.orchestration.child_runner import ChildRunner, EventCallback
from actoviq.orchestration.child_support import check_policy_declaration
from actoviq.orchestration.conversation import ConversationOwner, ConversationState
from actoviq.orchestration.errors import HandoffError
from actoviq.orchestration.outcomes import COLLECT, ChildFailurePolicy, ChildRunOutcome
from actoviq.orchestration.scope import OrchestrationScope
from actoviq.runtime import HandoffRequest

__all__ = [
    "HandoffFilterContext",
    "HandoffInputFilter",
    "HandoffResult",
    "HandoffSpec",
    "execute_handoff",
]


@attrs.frozen(kw_only=True, slots=True)
class HandoffFilterContext:
    """What an input filter sees besides the items."""

    parent: OrchestrationScope
    conversation: ConversationState
    handoff_call: HandoffCallItem | None = None


HandoffInputFilter = Callable[
    [Sequence[CanonicalItem], HandoffFilterContext],
    "Sequence[CanonicalItem] | Awaitable[Sequence[CanonicalItem]]",
]
"""``(items, context) -> items`` (may be async): what of the conversation the target sees."""


def _check_handoff_policy(policy: ChildFailurePolicy | None) -> None:
    # A handoff target takes over the conversation with its side effects: never retry-safe.
    check_policy_declaration(policy, None, keyed=False)


@attrs.frozen(kw_only=True, slots=True)
class HandoffSpec:
    """One handoff: its id (also the tool name the model sees), the target and how to hand over.

    Attributes:
        id: non-blank; a tool name when offered to the model (``[A-Za-z0-9_-]{1,64}``).
        target: the agent that becomes the owner.
        description: what the model is told about the handoff.
        input_filter: what of the conversation the target sees (default: all of it).
        child_context: the target run's context (a value).
        failure_policy: default ``collect`` (a failed target still owns the conversation);
            ``retry-safe`` is refused (``ChildPolicyError``): a target is a side-effect child.
        metadata: passed to ``beforeHandoff`` and the target's run metadata.
    """

    id: str
    target: AgentSpec[Any, Any]
    description: str | None = None
    input_filter: HandoffInputFilter | None = None
    child_context: Any = None
    failure_policy: ChildFailurePolicy | None = attrs.field(
        default=None, validator=lambda _, __, value: _check_handoff_policy(value)
    )
    metadata: JsonObject | None = None

    def ref(self) -> HandoffRef:
        """The declaration for ``AgentSpec(handoffs=...)`` (what the model is offered)."""
        return HandoffRef(
            id=self.id,
            target_agent_id=self.target.id,
            description=self.description,
            metadata=self.metadata,
        )


@attrs.frozen(kw_only=True, slots=True, eq=False)
class HandoffResult:
    """The result of :func:`execute_handoff`: ownership moved to the target.

    Attributes:
        owner_before / owner_after: the source and the target (``owner_after.run_id`` is the
            target's run).
        filtered_input: what the target received (after the filter and ``beforeHandoff``).
        conversation: ``filtered_input`` plus the target's items (or one handoff error item).
        child: the target's outcome.
    """

    mode: Literal["handoff"] = "handoff"
    ownership_transferred: Literal[True] = True
    handoff_id: str
    owner_before: ConversationOwner
    owner_after: ConversationOwner
    filtered_input: tuple[CanonicalItem, ...]
    conversation: ConversationState
    child: ChildRunOutcome


def _canonical(value: object, label: str) -> list[CanonicalItem]:
    known = (*ITEM_TYPES.values(), PreservedItem)
    if isinstance(value, list | tuple):
        items = list(cast(Sequence[object], value))
        if all(isinstance(item, known) for item in items):
            return cast(list[CanonicalItem], items)
    raise HandoffError(f"{label} must return canonical items.", details={"field": label})


async def _filtered(
    spec: HandoffSpec, items: list[CanonicalItem], context: HandoffFilterContext
) -> list[CanonicalItem]:
    if spec.input_filter is None:
        return items
    value: object = spec.input_filter(tuple(items), context)
    if inspect.isawaitable(value):
        value = await cast(Awaitable[object], value)
    return _canonical(value, "Handoff input filter")


def _failure_item(spec: HandoffSpec, child: ChildRunOutcome) -> ErrorItem:
    """The one ``handoff`` error item of a failed target (its own error in ``details``)."""
    error = child.error
    message = error.message if error is not None else child.status
    details: JsonObject = {"childRunId": child.child_run_id, "status": child.status}
    if error is not None:
        details["childError"] = error.to_json()
    return ErrorItem(
        source="handoff",
        code="HANDOFF_FAILED",
        message=f'Handoff "{spec.id}" to "{spec.target.id}" failed: {message}',
        retryable=False,
        details=details,
    )


async def execute_handoff(
    runner: ChildRunner,
    spec: HandoffSpec,
    *,
    parent: OrchestrationScope,
    conversation: ConversationState,
    handoff_call: HandoffCallItem | None = None,
    on_event: EventCallback | None = None,
) -> HandoffResult:
    """Hand ``conversation`` over to ``spec.target`` (see the module doc).

    Raises:
        HandoffError: a blank id ("Handoff id must not be empty.") or a filter returning
            something other than canonical items.
        MiddlewareInvariantViolationError: ``beforeHandoff`` returned something else.
        BudgetExceededError: the child does not fit the budget.
        ChildRunError: the target failed under a ``fail-fast`` policy.

    ``on_event``, when given, streams the target's run and receives each of its events.
    """
    if not isinstance(spec.id, str) or not spec.id.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise HandoffError("Handoff id must not be empty.", details={"field": "id"})
    owner = conversation.owner
    context = HandoffFilterContext(
        parent=parent, conversation=conversation, handoff_call=handoff_call
    )
    filtered = await _filtered(spec, list(conversation.items), context)
    prepared = await runner.runtime.before_handoff(
        HandoffRequest(
            source_agent_id=owner.agent_id,
            target_agent=spec.target,
            handoff_id=spec.id,
            input=filtered,
            parent_run_id=parent.run_id,
            signal=parent.signal,
            deadline=parent.deadline,
            metadata=spec.metadata,
        )
    )
    child_run_id = runner.tree.new_run_id()
    moved: JsonObject = {
        "handoffId": spec.id,
        "fromAgentId": owner.agent_id,
        "toAgentId": spec.target.id,
        "fromRunId": owner.run_id,
        "toRunId": child_run_id,
    }
    await runner.events.emit(
        parent.run_id, "orchestration.handoff.started", moved, ancestors=parent.lineage
    )
    child = await runner.run(
        parent,
        spec.target,
        prepared,
        run_id=child_run_id,
        context=spec.child_context,
        metadata=spec.metadata,
        failure_policy=spec.failure_policy or COLLECT,
        session_mode="transfer",
        session_history="provided",
        on_event=on_event,
    )
    await runner.events.emit(
        parent.run_id,
        "orchestration.handoff.completed",
        {**moved, "status": child.status},
        ancestors=parent.lineage,
    )
    owner_after = ConversationOwner(agent_id=spec.target.id, run_id=child.child_run_id)
    if child.result is not None and child.status in ("completed", "interrupted"):
        items: tuple[CanonicalItem, ...] = (*prepared, *child.result.items)
    else:
        items = (*prepared, _failure_item(spec, child))
    return HandoffResult(
        handoff_id=spec.id,
        owner_before=owner,
        owner_after=owner_after,
        filtered_input=tuple(prepared),
        conversation=ConversationState(owner=owner_after, items=items),
        child=child,
    )
