"""``ChildRunner``: the one port through which every primitive runs an agent (spec 04 §1.6, D8).

``run(parent, agent, input)`` runs **exactly one logical child**: it derives the child scope (only
narrowing), claims it on the budget ledger once (not per attempt), optionally reserves tokens/cost,
then runs attempts on the shared :class:`~actoviq.runtime.AgentRuntime` under a concurrency permit
(re-entrant along the ancestry), with the same run id on every attempt and the scope's trace
adopted verbatim. It never builds a provider, a runtime or a service container.

Fixes over the reference:

* ``interrupted`` and ``cancelled`` runs are outcomes of their own, never ``completed``; an
  interrupted child carries its interruptions and state, and :meth:`ChildRunner.resume` continues
  it with the parent's decisions (§8.2-15).
* Usage is recorded before any budget error, and a budget error is never retried (§8.2-13).
* Without a ``sessions`` service, children run ephemeral (no session) instead of failing; with
  one, a ``child`` session is created tagged with ``parentRunId`` for cleanup (§8.2-17).
* ``retry-safe`` only for ``read`` children and ``idempotent-write`` children with a key, checked
  before the tree or the budget is touched.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, cast

from actoviq.core import (
    AgentSpec,
    JsonObject,
    RunResult,
    Usage,
)
from actoviq.events import EventEmitter, RunEvent
from actoviq.orchestration.budget import InMemoryBudgetLedger
from actoviq.orchestration.child_support import (
    InjectedMetadata,
    agent_tools,
    cancel_error,
    check_policy,
    child_session_id,
    failed_usage,
    last_sequence,
    run_options,
    usage_delta,
    usage_kwargs,
)
from actoviq.orchestration.errors import (
    BudgetExceededError,
    ChildRunError,
    ChildScopeError,
    OrchestrationConfigError,
    ScopeWideningError,
)
from actoviq.orchestration.events import ScopeEvents
from actoviq.orchestration.graph_events import NODE_FRAME
from actoviq.orchestration.outcomes import (
    FAIL_FAST,
    ChildError,
    ChildFailurePolicy,
    ChildRunOutcome,
    SessionMode,
    child_outcome,
)
from actoviq.orchestration.scope import OrchestrationScope, ScopeNarrowing
from actoviq.orchestration.tree import RunTree
from actoviq.runtime import (
    AgentInput,
    AgentRuntime,
    InterruptionDecision,
    RunHandle,
    SessionRevisionConflictError,
    SessionStore,
    ToolEffect,
)

__all__ = ["ChildRunner", "EventCallback", "child_session_id"]


def _in_node(data: JsonObject) -> JsonObject:
    """``data`` with the workflow node that started the child (``graphRunId``, ``nodeId``)."""
    node = NODE_FRAME.get()
    if node is not None and node.run_id == data["parentRunId"]:
        data["graphRunId"] = node.graph_run_id
        data["nodeId"] = node.node_id
    return data


EventCallback = Callable[[RunEvent], Awaitable[None]]
"""Receives each event of a streamed child run."""


class ChildRunner:
    """Runs children of scopes on one runtime (the reference ``ChildRunner``).

    Args:
        runtime: the shared runtime (its ``services`` are the tree's services).
        tree: the run tree (default: a new one).
    """

    def __init__(self, runtime: AgentRuntime, tree: RunTree | None = None) -> None:
        self.runtime = runtime
        self.tree = tree if tree is not None else RunTree()
        self.events = ScopeEvents.for_runtime(runtime)
        self._injected = InjectedMetadata()

    @property
    def services(self) -> Any:
        """The runtime's service container (every scope of this runner must carry it)."""
        return self.runtime.services

    # -- roots ------------------------------------------------------------------------------------

    def create_root(self, **options: Any) -> OrchestrationScope:
        """``tree.create_root(services=runtime.services, **options)``."""
        return self.tree.create_root(services=self.runtime.services, **options)

    @asynccontextmanager
    async def open_root(
        self, name: str = "orchestration", **options: Any
    ) -> AsyncGenerator[OrchestrationScope]:
        """A root scope that is its own node in the trace (no agent run of its own).

        Emits ``orchestration.started`` on entry and ``orchestration.completed`` (terminal) on
        exit, so the OpenTelemetry sink shows one span for the whole tree; children's events
        point at it. Leaving the block cancels whatever is still running below the root.
        """
        scope = self.create_root(**options)
        emitter = EventEmitter(scope.trace, self.runtime.dispatcher)
        self.events.attach_root(scope.run_id, emitter)
        await emitter.emit("orchestration.started", {"agentId": name})
        status = "completed"
        try:
            yield scope
        except BaseException:
            status = "failed"
            raise
        finally:
            self.tree.cancel_tree(scope.run_id)
            self.tree.complete(scope.run_id)
            self.events.detach_root(scope.run_id)
            await emitter.emit("orchestration.completed", {"status": status})

    def _check_scope(self, scope: OrchestrationScope) -> None:
        if scope.services is not self.runtime.services:
            raise ChildScopeError(
                "Child scope must inherit the OrchestrationRuntime RuntimeServices instance.",
                details={"runId": scope.run_id},
            )

    async def run_scope(
        self,
        scope: OrchestrationScope,
        agent: AgentSpec[Any, Any],
        input: AgentInput,
        *,
        context: Any = None,
        metadata: JsonObject | None = None,
    ) -> RunResult[Any]:
        """Run ``agent`` *as* ``scope``'s own run (its id, trace, signal, deadline, session).

        This is how a manager runs inside a tree: its agent tools then find their parent scope.
        A scope this call had to adopt (made by another tree) is pruned again afterwards.
        """
        self._check_scope(scope)
        adopted = scope.run_id not in self.tree
        self.tree.adopt(scope)
        options = run_options(
            scope,
            session_id=scope.tenant_session.session_id,
            context=context,
            metadata=metadata,
            session_history=None,
        )
        try:
            return await self.runtime.run(agent, input, **options)
        finally:
            if adopted:
                self.tree.complete(scope.run_id)

    def stream_scope(
        self,
        scope: OrchestrationScope,
        agent: AgentSpec[Any, Any],
        input: AgentInput,
        *,
        context: Any = None,
        metadata: JsonObject | None = None,
    ) -> RunHandle[Any]:
        """Like :meth:`run_scope`, streamed: the run's :class:`RunHandle`.

        A scope this call had to adopt (made by another tree) is pruned once the run settles.
        """
        self._check_scope(scope)
        adopted = scope.run_id not in self.tree
        self.tree.adopt(scope)
        options = run_options(
            scope,
            session_id=scope.tenant_session.session_id,
            context=context,
            metadata=metadata,
            session_history=None,
        )
        try:
            handle = self.runtime.stream(agent, input, **options)
        except BaseException:
            if adopted:
                self.tree.complete(scope.run_id)
            raise
        if adopted:
            run_id = scope.run_id
            handle.add_done_callback(lambda: self.tree.complete(run_id))
        return handle

    # -- children ---------------------------------------------------------------------------------

    def _session_mode(self, mode: SessionMode | None) -> SessionMode:
        if mode is None:
            return "child" if self.runtime.services.has("sessions") else "ephemeral"
        if mode not in ("child", "transfer", "ephemeral"):
            raise OrchestrationConfigError(
                f'session_mode must be "child", "transfer" or "ephemeral", got {mode!r}.',
                details={"field": "sessionMode"},
            )
        return mode

    async def _tag_session(
        self, scope: OrchestrationScope, session_id: str, agent: AgentSpec[Any, Any]
    ) -> None:
        """Create the child session with ``parentRunId`` metadata when the store allows it."""
        sessions = await self.runtime.services.resolve("sessions")
        store = getattr(sessions, "store", None)
        if not isinstance(store, SessionStore):
            return
        metadata: JsonObject = {
            "parentRunId": scope.parent_run_id,
            "childRunId": scope.run_id,
            "agentId": agent.id,
            "traceId": scope.trace.trace_id,
        }
        # A retried attempt, or a session the host created: keep it as it is.
        with contextlib.suppress(SessionRevisionConflictError):
            await store.create(
                tenant_id=scope.tenant_session.tenant_id, session_id=session_id, metadata=metadata
            )

    async def run(
        self,
        parent: OrchestrationScope,
        agent: AgentSpec[Any, Any],
        input: AgentInput,
        *,
        context: Any = None,
        run_id: str | None = None,
        metadata: JsonObject | None = None,
        effect: ToolEffect | None = None,
        idempotency_key: str | None = None,
        failure_policy: ChildFailurePolicy | None = None,
        session_mode: SessionMode | None = None,
        session_history: str | None = None,
        narrow: ScopeNarrowing | None = None,
        reserve_tokens: int = 0,
        reserve_cost_usd: float = 0.0,
        on_event: EventCallback | None = None,
    ) -> ChildRunOutcome:
        """Run one logical child of ``parent`` (see the module doc).

        Args:
            parent: the parent scope (must carry this runner's services).
            agent: the child agent.
            input: text, one canonical item or a list of items.
            context: the run context passed to the child's tools.
            run_id: the child run id (default: a new UUID); the same on every attempt.
            metadata: caller metadata; the ``orchestration`` key is always the runner's.
            effect: ``read``, ``idempotent-write`` or ``side-effect`` (default).
            idempotency_key: required for ``retry-safe`` idempotent-write children.
            failure_policy: ``fail-fast`` (default), ``collect`` or ``retry-safe``.
            session_mode: ``child``/``transfer``/``ephemeral`` (default: ``child`` when a
                ``sessions`` service is registered, else ``ephemeral``).
            session_history: passed to the runtime for session runs (``"provided"``: the input
                is the history, used by handoffs).
            narrow: how the child is stricter than ``parent``.
            reserve_tokens: tokens held on the ledger before the child runs.
            reserve_cost_usd: cost held on the ledger before the child runs.
            on_event: when given, the child is streamed and each of its events awaited here.

        Raises:
            ChildScopeError: ``parent`` has other services.
            ChildPolicyError: ``retry-safe`` for a side-effect child or a keyless write.
            ScopeWideningError: ``narrow`` loosens the parent, or the agent declares tools the
                scope does not allow.
            RunTreeConflictError: ``run_id`` is already in the tree.
            BudgetExceededError: the claim or the reservation does not fit (raised as is).
            ChildRunError: the child failed (``fail-fast``, or ``retry-safe`` exhausted).
        """
        self._check_scope(parent)
        policy = failure_policy or FAIL_FAST
        check_policy(policy, effect, idempotency_key)
        mode = self._session_mode(session_mode)
        allowed = parent.allowed_tools
        if narrow is not None and narrow.allowed_tools is not None:
            allowed = narrow.allowed_tools
        if allowed is not None and not agent_tools(agent) <= allowed:
            extra = sorted(agent_tools(agent) - allowed)
            raise ScopeWideningError(
                f'Agent "{agent.id}" declares tools {extra} that the scope does not allow.',
                details={"field": "allowedTools", "tools": extra},
            )
        scope = self.tree.derive_child(parent, run_id, narrow=narrow)
        node = NODE_FRAME.get()
        if node is not None and node.run_id == parent.run_id:
            node.child_run_ids.append(scope.run_id)
        try:
            budget = scope.budget
            if type(budget) is InMemoryBudgetLedger:
                budget.claim_child_now(scope.depth)  # no coroutine for the in-memory ledger
            else:
                await budget.claim_child(scope.depth)
            reservation = None
            if reserve_tokens or reserve_cost_usd:
                reservation = await scope.budget.reserve(
                    tokens=reserve_tokens, cost_usd=reserve_cost_usd
                )
            try:
                # The attempts, inlined: one coroutine layer less per child.
                session_id = child_session_id(scope, mode)
                if (
                    mode == "child"
                    and session_id is not None
                    and self.runtime.services.has("sessions")
                ):
                    await self._tag_session(scope, session_id, agent)
                last_error: BaseException | None = None
                attempt = 0
                sequence = 0
                for attempt in range(1, policy.attempts + 1):
                    if self._routed(scope):  # checked first: no coroutine when unrouted
                        await self._emit_child(
                            scope, agent, "orchestration.child.started", attempt, mode
                        )
                    try:
                        # The permit without its context manager (one coroutine less on the
                        # path every child waits on): a free one is taken without awaiting.
                        permits = scope.concurrency
                        lease = permits._acquire_now(scope.run_id, scope.signal)  # pyright: ignore[reportPrivateUsage]
                        if lease is None:  # no bound method kept in this frame while it waits
                            lease = await permits._acquire(  # pyright: ignore[reportPrivateUsage]
                                scope.run_id, scope.lineage, scope.signal
                            )
                        try:
                            # Built once the permit is held: a child waiting for one keeps
                            # no metadata alive (fewer objects for the cyclic GC to scan).
                            if type(scope.budget) is InMemoryBudgetLedger:
                                injected = self._metadata_now(
                                    scope, metadata, effect, idempotency_key, attempt
                                )
                            else:
                                injected = await self._metadata(
                                    scope, metadata, effect, idempotency_key, attempt
                                )
                            options = run_options(
                                scope,
                                session_id=session_id,
                                context=context,
                                metadata=injected,
                                session_history=session_history,
                                sequence=sequence,
                            )
                            if on_event is None:
                                result = await self.runtime.run(agent, input, **options)
                            else:
                                result = await self._streamed(agent, input, options, on_event)
                        finally:
                            permits._release(lease)  # pyright: ignore[reportPrivateUsage]
                        budget = scope.budget
                        held = reservation if attempt == 1 else None
                        if type(budget) is InMemoryBudgetLedger:
                            budget.record_usage_now(result.usage, reservation=held)
                        else:
                            await budget.record_usage(result.usage, reservation=held)
                    except BudgetExceededError as error:
                        last_error = error  # usage is recorded; a budget error is never retried
                        break
                    except Exception as error:
                        last_error = error
                        sequence = last_sequence(error, sequence)
                        spent = failed_usage(error)
                        if spent is not None:  # a failed attempt is charged what it spent
                            try:
                                await scope.budget.record_usage(
                                    spent, reservation=reservation if attempt == 1 else None
                                )
                            except BudgetExceededError:
                                break  # recorded; the limit is passed: never retried
                        if scope.signal.aborted:
                            cancelled = ChildRunOutcome(
                                status="cancelled",
                                attempts=attempt,
                                scope=scope,
                                error=ChildError.of(scope.signal.reason or error),
                            )
                            if self._routed(scope):
                                await self._settled(cancelled, agent)
                            return cancelled
                        retry = policy.mode == "retry-safe" and attempt < policy.attempts
                        if retry and policy.retry_when is not None:
                            retry = bool(policy.retry_when(error, attempt))
                        if not retry:
                            break
                        continue
                    status = result.status
                    outcome = child_outcome(
                        "completed" if status == "completed" else status,
                        attempt,
                        scope,
                        result,
                        cancel_error(scope) if status == "cancelled" else None,
                    )
                    if self._routed(scope):
                        await self._settled(outcome, agent)
                    return outcome
                failed = ChildRunOutcome(
                    status="failed", attempts=attempt, scope=scope, error=ChildError.of(last_error)
                )
                if self._routed(scope):
                    await self._settled(failed, agent)
                if policy.mode == "collect":
                    return failed
                raise ChildRunError(scope.run_id, attempt, last_error)
            finally:
                if reservation is not None:
                    await scope.budget.release(reservation)
        finally:
            self.tree.complete(scope.run_id)

    def _metadata_now(
        self,
        scope: OrchestrationScope,
        metadata: JsonObject | None,
        effect: ToolEffect | None,
        idempotency_key: str | None,
        attempt: int,
    ) -> dict[str, Any]:
        """The child's run metadata from the in-memory ledger (no coroutine)."""
        budget = cast(InMemoryBudgetLedger, scope.budget)
        injected = self._injected.build_from(
            scope, budget.limits, budget.counters_now(), effect, idempotency_key, attempt
        )
        return {**metadata, "orchestration": injected} if metadata else {"orchestration": injected}

    async def _metadata(
        self,
        scope: OrchestrationScope,
        metadata: JsonObject | None,
        effect: ToolEffect | None,
        idempotency_key: str | None,
        attempt: int,
    ) -> dict[str, Any]:
        snapshot = await scope.budget.snapshot()
        injected = self._injected.build(scope, snapshot, effect, idempotency_key, attempt)
        return {**(metadata or {}), "orchestration": injected}

    async def _streamed(
        self,
        agent: AgentSpec[Any, Any],
        input: AgentInput,
        options: Mapping[str, Any],
        on_event: EventCallback,
    ) -> RunResult[Any]:
        async with self.runtime.stream(agent, input, **options) as handle:
            async for event in handle:
                await on_event(event)
            return await handle.result()

    def _routed(self, scope: OrchestrationScope) -> bool:
        """Whether ``scope``'s child events have somewhere to go (its parent or an ancestor)."""
        parent = scope.parent_run_id
        return parent is not None and self.events.routes(parent, scope.lineage[:-1])

    async def _emit_child(
        self,
        scope: OrchestrationScope,
        agent: AgentSpec[Any, Any],
        type: str,
        attempt: int,
        mode: SessionMode,
    ) -> None:
        if scope.parent_run_id is None or not self.events.routes(
            scope.parent_run_id, scope.lineage[:-1]
        ):
            return
        await self.events.emit(
            scope.parent_run_id,
            type,
            ancestors=scope.lineage[:-1],
            data=_in_node(
                {
                    "childRunId": scope.run_id,
                    "parentRunId": scope.parent_run_id,
                    "agentId": agent.id,
                    "depth": scope.depth,
                    "attempt": attempt,
                    "sessionMode": mode,
                }
            ),
        )

    async def _settled(
        self, outcome: ChildRunOutcome, agent: AgentSpec[Any, Any]
    ) -> ChildRunOutcome:
        scope = outcome.scope
        if scope.parent_run_id is None or not self.events.routes(
            scope.parent_run_id, scope.lineage[:-1]
        ):
            return outcome
        data: JsonObject = _in_node(
            {
                "childRunId": scope.run_id,
                "parentRunId": scope.parent_run_id,
                "agentId": agent.id,
                "status": outcome.status,
                "attempts": outcome.attempts,
            }
        )
        ancestors = scope.lineage[:-1]
        if outcome.status == "failed":
            data["error"] = outcome.error.to_json() if outcome.error else None
            kind = "orchestration.child.failed"
        else:
            kind = "orchestration.child.completed"
        await self.events.emit(scope.parent_run_id, kind, data, ancestors=ancestors)
        return outcome

    # -- resume -----------------------------------------------------------------------------------

    async def resume(
        self,
        parent: OrchestrationScope,
        agent: AgentSpec[Any, Any],
        state: Mapping[str, Any],
        decisions: Iterable[InterruptionDecision],
        *,
        context: Any = None,
        failure_policy: ChildFailurePolicy | None = None,
    ) -> ChildRunOutcome:
        """Continue an ``interrupted`` child with the parent's decisions (§8.2-15).

        The child keeps its run id and trace; it is not claimed on the budget again (it is the
        same logical child), only the usage it adds is recorded.

        Raises:
            ChildScopeError: ``parent`` has other services.
            ChildRunError: the resumed child failed (unless ``collect``).
        """
        self._check_scope(parent)
        policy = failure_policy or FAIL_FAST
        child_run_id = str(state.get("runId"))
        before = Usage(**usage_kwargs(state.get("usage")))
        scope = self.tree.derive_child(parent, child_run_id)
        try:
            try:
                async with scope.concurrency.permit(
                    scope.run_id, scope.lineage, signal=scope.signal
                ):
                    handle = self.runtime.resume(
                        state, decisions, context=context, signal=scope.signal
                    )
                    async with handle:
                        result = await handle.result()
                await scope.budget.record_usage(usage_delta(result.usage, before))
            except Exception as error:
                spent = failed_usage(error, before)
                if spent is not None:  # the failed resumed run is charged what it spent
                    with contextlib.suppress(BudgetExceededError):
                        await scope.budget.record_usage(spent)
                failed = ChildRunOutcome(
                    status="cancelled" if scope.signal.aborted else "failed",
                    attempts=1,
                    scope=scope,
                    error=ChildError.of(error),
                )
                await self._settled(failed, agent)
                if failed.status == "cancelled" or policy.mode == "collect":
                    return failed
                raise ChildRunError(scope.run_id, 1, error) from error
            status = result.status
            return await self._settled(
                ChildRunOutcome(
                    status="completed" if status == "completed" else status,
                    attempts=1,
                    scope=scope,
                    result=result,
                ),
                agent,
            )
        finally:
            self.tree.complete(scope.run_id)
