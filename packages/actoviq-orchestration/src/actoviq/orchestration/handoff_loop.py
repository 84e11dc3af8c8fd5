"""``HandoffLoop``: run model-driven handoffs until an owner answers (spec 04 §8.2-20).

The first agent runs as the scope's own run; whenever a run ends with ``RunResult.handoff`` (the
model called one of the agent's handoff tools), the loop executes that handoff with
:func:`~actoviq.orchestration.handoff.execute_handoff` (the target becomes the owner and runs as a
child of the same scope, on the same session) and continues with the target's result. More than
``max_handoffs`` handoffs (a cycle, usually) fail with
:class:`~actoviq.orchestration.errors.HandoffLimitExceededError`.

Handoff specs come from ``handoffs`` (explicit :class:`HandoffSpec` objects, by id) or from the
owner's ``AgentSpec.handoffs`` (``HandoffRef``; the target resolved among ``agents``, then the
runtime's registered agents; a ``HandoffRef.filter`` becomes the input filter).

Example:
    >>> # loop = HandoffLoop(runner, max_handoffs=3, handoffs=[to_billing])
    >>> # outcome = await loop.run(runner.create_root(), triage, "my invoice is wrong")
    >>> # outcome.owner.agent_id, outcome.output
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Final, Literal, Self, cast

import attrs

from actoviq.core import (
    AgentSpec,
    CanonicalItem,
    HandoffCallItem,
    HandoffRef,
    RunContext,
    RunResult,
    iso_now,
)
from actoviq.events import RunEvent
from actoviq.orchestration.child_runner import ChildRunner, EventCallback
from actoviq.orchestration.conversation import ConversationOwner, ConversationState
from actoviq.orchestration.errors import HandoffError, HandoffLimitExceededError
from actoviq.orchestration.handoff import (
    HandoffFilterContext,
    HandoffResult,
    HandoffSpec,
    execute_handoff,
)
from actoviq.orchestration.outcomes import ChildRunOutcome
from actoviq.orchestration.scope import OrchestrationScope
from actoviq.runtime import AgentInput, InterruptionDecision
from actoviq.runtime.run_setup import normalize_input

__all__ = ["HandoffLoop", "HandoffLoopResult", "HandoffLoopStream"]

HandoffLoopStatus = Literal["completed", "interrupted", "cancelled", "failed"]


@attrs.frozen(kw_only=True, slots=True, eq=False)
class HandoffLoopResult:
    """Where a handoff chain stopped.

    Attributes:
        status: the last owner's status (``failed`` when a handoff target failed).
        owner: who owns the conversation now.
        agent: the owner's agent.
        conversation: the conversation (input, every owner's items).
        result: the last owner's run result (None when its handoff failed).
        handoffs: every handoff executed, in order.
        scope: the loop's scope (every target ran as its child).
    """

    status: HandoffLoopStatus
    owner: ConversationOwner
    agent: AgentSpec[Any, Any]
    conversation: ConversationState
    result: RunResult[Any] | None
    handoffs: tuple[HandoffResult, ...]
    scope: OrchestrationScope

    @property
    def output(self) -> Any:
        """The last owner's output (None unless completed)."""
        return self.result.output if self.status == "completed" and self.result else None

    @property
    def interruptions(self) -> tuple[Any, ...]:
        """What the current owner waits for (``interrupted`` only)."""
        return self.result.interruptions if self.result is not None else ()


_END: Final = object()


class HandoffLoopStream:
    """The events of every owner run of a handoff chain, in order, then its result.

    An async iterator and an async context manager (leaving the block cancels an unfinished
    chain and waits for it); ``await stream.result()`` gives the :class:`HandoffLoopResult`.
    """

    def __init__(self, drive: Callable[[EventCallback], Awaitable[HandoffLoopResult]]) -> None:
        self._drive = drive
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._task: asyncio.Task[HandoffLoopResult] | None = None
        self._finished = False

    def _start(self) -> asyncio.Task[HandoffLoopResult]:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        return self._task

    async def _run(self) -> HandoffLoopResult:
        try:
            return await self._drive(self._put)
        finally:
            self._queue.put_nowait(_END)

    async def _put(self, event: RunEvent) -> None:
        self._queue.put_nowait(event)

    def __aiter__(self) -> Self:
        self._start()
        return self

    async def __anext__(self) -> RunEvent:
        self._start()
        if self._finished:
            raise StopAsyncIteration
        item = await self._queue.get()
        if item is _END:
            self._finished = True
            raise StopAsyncIteration
        return cast(RunEvent, item)

    async def result(self) -> HandoffLoopResult:
        """The chain's result (waits for it to end; raises what it raised)."""
        return await self._start()

    async def aclose(self) -> None:
        """Cancel an unfinished chain and wait for it."""
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})
        if task is not None and task.done() and not task.cancelled():
            task.exception()  # retrieved: it surfaces through result()

    async def __aenter__(self) -> Self:
        self._start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class HandoffLoop:
    """Runs an agent and the handoffs its model requests (see the module doc).

    Args:
        runner: the runner of the shared runtime.
        max_handoffs: how many handoffs one chain may make (>= 0).
        handoffs: explicit specs by id (they win over the owner's ``HandoffRef``).
        agents: agents that ``HandoffRef.target_agent_id`` may name.

    Raises:
        HandoffError: ``max_handoffs`` is not a non-negative integer, or two specs share an id.
    """

    def __init__(
        self,
        runner: ChildRunner,
        *,
        max_handoffs: int = 10,
        handoffs: Iterable[HandoffSpec] = (),
        agents: Iterable[AgentSpec[Any, Any]] = (),
    ) -> None:
        if type(max_handoffs) is not int or max_handoffs < 0:
            raise HandoffError(
                "max_handoffs must be a non-negative integer.", details={"field": "maxHandoffs"}
            )
        self.runner = runner
        self.max_handoffs = max_handoffs
        self._specs: dict[str, HandoffSpec] = {}
        for spec in handoffs:
            if spec.id in self._specs:
                raise HandoffError(f'Handoff "{spec.id}" is given twice.')
            self._specs[spec.id] = spec
        self._agents = {agent.id: agent for agent in agents}

    def spec_for(self, source: AgentSpec[Any, Any], call: HandoffCallItem) -> HandoffSpec:
        """The spec that executes ``call`` made by ``source``'s model.

        Raises:
            HandoffError: no spec or ``HandoffRef`` has that id, or its target is unknown.
        """
        metadata = call.metadata or {}
        handoff_id = metadata.get("handoffId")
        handoff_id = handoff_id if isinstance(handoff_id, str) else call.target_agent_id
        spec = self._specs.get(handoff_id)
        if spec is not None:
            return spec
        ref = next((ref for ref in source.handoffs if ref.id == handoff_id), None)
        if ref is None:
            raise HandoffError(
                f'Agent "{source.id}" has no handoff "{handoff_id}".',
                details={"handoffId": handoff_id, "agentId": source.id},
            )
        target = self._agents.get(ref.target_agent_id) or self.runner.runtime.get_agent(
            ref.target_agent_id
        )
        if target is None:
            raise HandoffError(
                f'Cannot resolve handoff target agent "{ref.target_agent_id}".',
                details={"handoffId": handoff_id, "targetAgentId": ref.target_agent_id},
            )
        return HandoffSpec(
            id=ref.id,
            target=target,
            description=ref.description,
            input_filter=_ref_filter(ref) if ref.filter is not None else None,
            metadata=ref.metadata,
        )

    async def run(
        self,
        scope: OrchestrationScope,
        agent: AgentSpec[Any, Any],
        input: AgentInput,
        *,
        context: Any = None,
    ) -> HandoffLoopResult:
        """Run ``agent`` as ``scope``'s run, then every handoff its chain requests.

        Raises:
            HandoffLimitExceededError: more than ``max_handoffs`` handoffs were requested.
            HandoffError: a requested handoff cannot be resolved.
        """
        return await self._drive(scope, agent, input, context, None)

    def stream(
        self,
        scope: OrchestrationScope,
        agent: AgentSpec[Any, Any],
        input: AgentInput,
        *,
        context: Any = None,
    ) -> HandoffLoopStream:
        """Like :meth:`run`, streaming every owner's run: iterate the events, then ``result()``.

        Use it as ``async with loop.stream(...) as stream:``; leaving the block cancels an
        unfinished chain and waits for it.
        """
        return HandoffLoopStream(
            lambda on_event: self._drive(scope, agent, input, context, on_event)
        )

    async def _drive(
        self,
        scope: OrchestrationScope,
        agent: AgentSpec[Any, Any],
        input: AgentInput,
        context: Any,
        on_event: EventCallback | None,
    ) -> HandoffLoopResult:
        if on_event is None:
            result = await self.runner.run_scope(scope, agent, input, context=context)
        else:
            async with self.runner.stream_scope(scope, agent, input, context=context) as handle:
                async for event in handle:
                    await on_event(event)
                result = await handle.result()
        owner = ConversationOwner(agent_id=agent.id, run_id=scope.run_id)
        items = (*normalize_input(input), *result.items)
        return await self._continue(scope, agent, owner, items, result, (), context, on_event)

    async def resume(
        self,
        interrupted: HandoffLoopResult,
        decisions: Iterable[InterruptionDecision],
        *,
        context: Any = None,
    ) -> HandoffLoopResult:
        """Continue an ``interrupted`` chain: the current owner resumes with ``decisions``.

        Raises:
            HandoffError: ``interrupted`` is not an interrupted chain.
        """
        result = interrupted.result
        if interrupted.status != "interrupted" or result is None or result.state is None:
            raise HandoffError("Only an interrupted handoff chain can be resumed.")
        scope = interrupted.scope
        if interrupted.owner.run_id == scope.run_id:
            handle = self.runner.runtime.resume(
                result.state, decisions, context=context, signal=scope.signal
            )
            async with handle:
                resumed = await handle.result()
        else:
            outcome = await self.runner.resume(
                scope, interrupted.agent, result.state, decisions, context=context
            )
            if outcome.result is None:
                return attrs.evolve(interrupted, status=_status(outcome), result=None)
            resumed = outcome.result
        items = (*_without(interrupted.conversation.items, result.items), *resumed.items)
        return await self._continue(
            scope,
            interrupted.agent,
            interrupted.owner,
            items,
            resumed,
            interrupted.handoffs,
            context,
            None,
        )

    async def _continue(
        self,
        scope: OrchestrationScope,
        agent: AgentSpec[Any, Any],
        owner: ConversationOwner,
        items: Sequence[CanonicalItem],
        result: RunResult[Any],
        done: tuple[HandoffResult, ...],
        context: Any,
        on_event: EventCallback | None,
    ) -> HandoffLoopResult:
        handoffs = list(done)
        current: RunResult[Any] | None = result
        while current is not None and current.status == "completed" and current.handoff:
            call = current.handoff
            if len(handoffs) >= self.max_handoffs:
                raise HandoffLimitExceededError(
                    f"Handoff chain exceeded max_handoffs={self.max_handoffs} "
                    f'("{agent.id}" asked for "{call.target_agent_id}").',
                    details={
                        "maxHandoffs": self.max_handoffs,
                        "chain": [h.owner_after.agent_id for h in handoffs],
                        "requested": call.target_agent_id,
                    },
                )
            spec = self.spec_for(agent, call)
            if context is not None and spec.child_context is None:
                spec = attrs.evolve(spec, child_context=context)
            moved = await execute_handoff(
                self.runner,
                spec,
                parent=scope,
                conversation=ConversationState(owner=owner, items=items),
                handoff_call=call,
                on_event=on_event,
            )
            handoffs.append(moved)
            owner, agent = moved.owner_after, spec.target
            items = moved.conversation.items
            current = moved.child.result
            if moved.child.status not in ("completed", "interrupted"):
                return HandoffLoopResult(
                    status=_status(moved.child),
                    owner=owner,
                    agent=agent,
                    conversation=moved.conversation,
                    result=current,
                    handoffs=tuple(handoffs),
                    scope=scope,
                )
        status: HandoffLoopStatus = current.status if current is not None else "failed"
        return HandoffLoopResult(
            status=status,
            owner=owner,
            agent=agent,
            conversation=ConversationState(owner=owner, items=items),
            result=current,
            handoffs=tuple(handoffs),
            scope=scope,
        )


def _status(outcome: ChildRunOutcome) -> HandoffLoopStatus:
    return outcome.status


def _without(
    items: Sequence[CanonicalItem], tail: Sequence[CanonicalItem]
) -> tuple[CanonicalItem, ...]:
    """``items`` minus its trailing ``tail`` (an interrupted owner's partial items)."""
    count = len(tail)
    if count and tuple(items[-count:]) == tuple(tail):
        return tuple(items[:-count])
    return tuple(items)


def _ref_filter(ref: HandoffRef) -> Any:
    """A ``HandoffRef.filter`` (``(RunContext, items)``) as a handoff input filter."""
    assert ref.filter is not None
    declared = ref.filter

    async def apply(
        items: Sequence[CanonicalItem], context: HandoffFilterContext
    ) -> Sequence[CanonicalItem]:
        owner = context.conversation.owner
        run_context: RunContext[Any] = RunContext(
            run_id=owner.run_id,
            agent_id=owner.agent_id,
            context=None,
            signal=context.parent.signal,
            started_at=iso_now(),
        )
        value: object = declared(run_context, items)
        if inspect.isawaitable(value):
            value = await cast(Awaitable[object], value)
        return cast(Sequence[CanonicalItem], value)

    return apply
