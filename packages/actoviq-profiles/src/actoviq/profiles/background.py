"""The ``background`` service, ``background.checkpoint`` middleware and ``background.*`` tools.

A background profile is bound to actoviq-orchestration's
:class:`~actoviq.orchestration.background.BackgroundChildManager`: its children are durable
records with leases in the profile's :class:`~actoviq.runtime.stores.DurableChildStore`
(``SqliteStorage.children`` for a SQLite file or PostgreSQL, in memory by default), so they
outlive the run, and the process, that spawned them. A new process on the same storage calls
:meth:`BackgroundRuns.recover_children`: queued and replay-safe children run there, a
side-effect child whose worker died waits for :meth:`BackgroundRuns.reconcile`.

- ``background`` service: :class:`BackgroundRuns` (the manager, plus the status and exactly-once
  resume of checkpointed runs);
- ``background.checkpoint`` middleware: a run of a profile that names it is refused at
  ``beforeRun`` unless the runtime checkpoints its runs;
- tools, each limited to the descendants of the calling run: ``background.spawn`` (a
  durable child of the calling run), ``background.await``, ``background.query``,
  ``background.list`` and ``background.cancel``.

Close the manager before the runtime (:func:`~actoviq.profiles.create_profile_runtime` does): it
releases the leases of children still running here, so the next worker takes them over instead
of seeing them cancelled.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, cast

from actoviq.core import AgentSpec, JsonObject, JsonValue, RunResult
from actoviq.orchestration import BackgroundChildManager, DurableChildHandle, InMemoryBudgetLedger
from actoviq.orchestration.background import (
    DEFAULT_CANCEL_REASON,
    DurableChildNotFoundError,
    DurableChildRecord,
    RecoveryReport,
)
from actoviq.profiles.errors import ProfileError
from actoviq.runtime import (
    AgentInput,
    AgentRuntime,
    InterruptionDecision,
    MiddlewareDefinition,
    RuntimeMiddlewareContext,
    RuntimeTool,
    ToolEffect,
    ToolExecutionContext,
    define_middleware,
    tool,
)

if TYPE_CHECKING:
    from actoviq.profiles.coordination import ProfileOrchestrator
    from actoviq.runtime.stores import DurableChildStore

__all__ = [
    "BackgroundCheckpointRequiredError",
    "BackgroundChildAccessError",
    "BackgroundRuns",
    "background_middleware",
    "background_tools",
]

_EFFECTS: Final = ("read", "idempotent-write", "side-effect")


class BackgroundCheckpointRequiredError(ProfileError):
    """A background profile ran on a runtime without a checkpoint store."""

    default_code: ClassVar[str] = "PROFILE_BACKGROUND_CHECKPOINT_REQUIRED"


class BackgroundChildAccessError(ProfileError):
    """A ``background.*`` tool named a child outside the calling run's tree, or an unknown one."""

    default_code: ClassVar[str] = "PROFILE_BACKGROUND_CHILD_ACCESS"


def _summary(record: DurableChildRecord) -> JsonObject:
    """What the tools return about a child: status, output or error, no run state."""
    data: JsonObject = {
        "childId": record.child_id,
        "agentId": record.agent_id,
        "status": record.status,
        "effect": record.effect,
        "attempts": record.attempts,
    }
    if record.result is not None:
        data["output"] = record.result.get("output")
    if record.error is not None:
        data["error"] = record.error.message
    if record.interruptions:
        data["interruptions"] = [interruption.id for interruption in record.interruptions]
    return data


def _lineage(record: DurableChildRecord) -> tuple[str, ...]:
    lineage = record.parent.get("lineage")
    ancestors = [str(run) for run in cast(list[Any], lineage)] if isinstance(lineage, list) else []
    parent = record.parent_run_id
    return (*ancestors, parent) if parent is not None else tuple(ancestors)


class BackgroundRuns:
    """The ``background`` service: durable background children and checkpointed runs.

    Args:
        runtime: the shared runtime.
        orchestrator: the ``orchestration`` service (its child runner runs every child).
        store: where the children's records live (default: in memory, this process only).
        lease_ms: how long a child's lease outlives its worker's last heartbeat.
        owner_id: this worker's id in the leases (default: host, pid and a random part).
        tenant_id: the tenant of the records.
        effects: replay safety of each spawnable agent's work by agent id (``read``,
            ``idempotent-write`` or ``side-effect``, the default): a ``read`` child whose worker
            died is run again elsewhere, a ``side-effect`` one waits for :meth:`reconcile`.
        manager: an already built manager (another engine); ``store`` is then ignored.
    """

    def __init__(
        self,
        runtime: AgentRuntime,
        orchestrator: ProfileOrchestrator,
        store: DurableChildStore | None = None,
        *,
        lease_ms: int = 30_000,
        owner_id: str | None = None,
        tenant_id: str = "default",
        effects: Mapping[str, ToolEffect] | None = None,
        manager: BackgroundChildManager | None = None,
    ) -> None:
        from actoviq.runtime import InMemoryDurableChildStore

        self.runtime = runtime
        self.orchestrator = orchestrator
        self.effects: dict[str, ToolEffect] = dict(effects or {})
        for agent_id, effect in self.effects.items():
            if effect not in _EFFECTS:
                raise ProfileError(
                    f'Background effect of agent "{agent_id}" must be one of {list(_EFFECTS)}.',
                    details={"agentId": agent_id},
                )
        self.manager = manager or BackgroundChildManager(
            orchestrator.runner,
            store if store is not None else InMemoryDurableChildStore(),
            lease_ms=lease_ms,
            owner_id=owner_id,
            tenant_id=tenant_id,
            resolve_agent=self._agent,
        )
        self._closed = False

    def _agent(self, agent_id: str) -> AgentSpec[Any, Any] | None:
        return self.orchestrator.agents.get(agent_id) or self.runtime.get_agent(agent_id)

    # -- checkpointed runs ----------------------------------------------------------------------

    def require_checkpoints(self) -> None:
        """Raise unless the runtime checkpoints its runs.

        Raises:
            BackgroundCheckpointRequiredError: the runtime has no checkpoint store.
        """
        if self.runtime.checkpoint_store is None:
            raise BackgroundCheckpointRequiredError(
                "Background profiles need a checkpointed runtime: pass checkpoints= to "
                "AgentRuntime."
            )

    async def status(self, run_id: str) -> JsonObject:
        """``{runId, found, status, turn, interruptions}`` of a run, from the checkpoint store."""
        self.require_checkpoints()
        store = self.runtime.checkpoint_store
        assert store is not None
        state = await store.load(run_id)
        if state is None:
            return {"runId": run_id, "found": False}
        interruptions = state.get("interruptions")
        return {
            "runId": run_id,
            "found": True,
            "status": state.get("status"),
            "turn": state.get("turn"),
            "interruptions": interruptions if isinstance(interruptions, list) else [],
        }

    async def recover(self, run_id: str, decisions: Iterable[Any] = ()) -> RunResult[Any]:
        """Resume the stored run (exactly once, by the runtime's claim) and await its result.

        Raises:
            LookupError: no stored state for ``run_id``.
        """
        self.require_checkpoints()
        store = self.runtime.checkpoint_store
        assert store is not None
        state = await store.load(run_id)
        if state is None:
            raise LookupError(f'No checkpoint for run "{run_id}".')
        handle = self.runtime.resume(state, decisions)
        return await handle.result()

    # -- durable children -----------------------------------------------------------------------

    async def spawn(
        self,
        parent_run_id: str,
        agent: str | AgentSpec[Any, Any],
        input: AgentInput,
        *,
        effect: ToolEffect | None = None,
        idempotency_key: str | None = None,
        child_id: str | None = None,
        metadata: JsonObject | None = None,
        auto_start: bool = True,
    ) -> DurableChildHandle:
        """Persist a durable child of the run ``parent_run_id`` and (unless not) start it here.

        Args:
            parent_run_id: a run with an orchestration scope (a run of a profile that requires
                ``orchestration.scope``, or a child of one).
            agent: a spawnable agent's id, or an agent.
            input: the child's input.
            effect: what a crash mid-run may have done (default: :attr:`effects` of the agent,
                else ``side-effect``).
            idempotency_key: makes an ``idempotent-write`` child replayable.
            child_id: the child's id (default: a new UUID).
            metadata: caller metadata (strict JSON).
            auto_start: False leaves it ``queued`` for a worker's :meth:`recover_children`.

        Raises:
            LookupError: the agent is not spawnable or the parent has no scope.
            ChildPolicyError / BudgetExceededError / StorageConflictError: see the manager.
        """
        spec = agent if isinstance(agent, AgentSpec) else self._agent(agent)
        if spec is None:
            raise LookupError(f'Agent "{agent}" is not spawnable here.')
        parent = self.orchestrator.runner.tree.scope(parent_run_id)
        if parent is None:
            raise LookupError(
                "background.spawn needs the orchestration.scope middleware on the calling run."
            )
        return await self.manager.spawn(
            parent,
            spec,
            input,
            child_id=child_id,
            metadata=metadata,
            effect=effect or self.effects.get(spec.id, "side-effect"),
            idempotency_key=idempotency_key,
            auto_start=auto_start,
        )

    async def start(
        self,
        agent: str | AgentSpec[Any, Any],
        input: AgentInput,
        *,
        budget: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> DurableChildHandle:
        """Start ``agent`` (a background profile's spec, say) as a durable child of a new root.

        The host's entry point: the root scope carries ``budget`` (``maxChildRuns``,
        ``maxDepth``, ``maxTotalTokens``, ``maxCostUsd``; default: the agent's profile
        ``childBudget``) and is pruned once its child settles. ``options`` are :meth:`spawn`'s.
        """
        from actoviq.orchestration import BudgetLimits

        spec = agent if isinstance(agent, AgentSpec) else self._agent(agent)
        if spec is None:
            raise LookupError(f'Agent "{agent}" is not spawnable here.')
        if budget is None:
            profile = (spec.metadata or {}).get("hadamardProfile")
            orchestration = profile.get("orchestration") if isinstance(profile, dict) else None
            value = orchestration.get("childBudget") if isinstance(orchestration, dict) else None
            budget = cast(Mapping[str, Any], value) if isinstance(value, dict) else None
        limits = (
            BudgetLimits(
                max_child_runs=budget.get("maxChildRuns"),
                max_depth=budget.get("maxDepth"),
                max_total_tokens=budget.get("maxTotalTokens"),
                max_cost_usd=budget.get("maxCostUsd"),
            )
            if budget is not None
            else None
        )
        tree = self.orchestrator.runner.tree
        root = self.orchestrator.runner.create_root(
            budget=InMemoryBudgetLedger(limits) if limits is not None else None
        )
        try:
            return await self.spawn(root.run_id, spec, input, **options)
        finally:
            tree.complete(root.run_id)  # pruned once its child is gone

    async def query(self, child_id: str) -> DurableChildRecord:
        """The child's record (wherever it runs).

        Raises:
            DurableChildNotFoundError: unknown child.
        """
        return await self.manager.query(child_id)

    async def children_of(self, run_id: str) -> list[DurableChildRecord]:
        """The durable children whose parent is ``run_id``."""
        return await self.manager.list_children(parent_run_id=run_id)

    async def result(self, child_id: str) -> RunResult[Any]:
        """The child's result (awaits it when it runs here; see the manager's ``result``)."""
        return await self.manager.result(child_id)

    async def wait(self, child_id: str, *, poll_interval: float = 0.05) -> DurableChildRecord:
        """Wait until the child settles wherever it runs (bound it with ``asyncio.timeout``)."""
        return await self.manager.wait(child_id, poll_interval=poll_interval)

    async def cancel(
        self, child_id: str, reason: str = DEFAULT_CANCEL_REASON
    ) -> DurableChildRecord:
        """Cancel the child (and its descendants) wherever they run."""
        record = await self.manager.cancel(child_id, reason)
        await self.manager.cancel_children(child_id, reason)
        return record

    async def resume_child(
        self, child_id: str, decisions: Sequence[InterruptionDecision] = ()
    ) -> DurableChildHandle:
        """Run a queued, stale replay-safe or interrupted (with decisions) child here."""
        return await self.manager.resume(child_id, decisions)

    async def recover_children(self) -> RecoveryReport:
        """Take over what is safe after a restart (see the manager's ``recover``)."""
        return await self.manager.recover()

    async def reconcile(self, child_id: str, resolution: Any, **options: Any) -> DurableChildRecord:
        """Record a human's decision about a child whose worker died mid-run."""
        return await self.manager.reconcile(child_id, resolution, **options)

    async def aclose(self) -> None:
        """Close the manager: leases of children still running here are released. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await self.manager.aclose()


async def _child_of(runs: BackgroundRuns, run_id: str, child_id: str) -> DurableChildRecord:
    """The record of ``child_id`` when it descends from ``run_id``'s tree."""
    try:
        record = await runs.query(child_id)
    except DurableChildNotFoundError as error:
        raise BackgroundChildAccessError(
            f'Unknown background child "{child_id}".', details={"childId": child_id}
        ) from error
    if run_id not in _lineage(record):
        raise BackgroundChildAccessError(
            f'Background child "{child_id}" does not belong to this run.',
            details={"childId": child_id},
        )
    return record


def background_middleware(runs: BackgroundRuns, *, priority: int = -250) -> MiddlewareDefinition:
    """``beforeRun``: refuse a background run the runtime would not checkpoint."""

    def check(ctx: RuntimeMiddlewareContext, next: Any) -> Any:
        runs.require_checkpoints()
        return next()

    return define_middleware("background.checkpoint", "beforeRun", check, priority=priority)


def background_tools(runs: BackgroundRuns) -> tuple[RuntimeTool, ...]:
    """``background.spawn``/``await``/``query``/``list``/``cancel`` on the run's children."""

    @tool(name="background.spawn", effect="side-effect")
    async def spawn(ctx: ToolExecutionContext, agent: str, task: str) -> JsonObject:
        """Start a durable background child that keeps running after this run ends.

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
            agent: the id of the agent to run.
            task: what the agent should do.
        """
        handle = await runs.spawn(ctx.run_id, agent, task)
        return _summary(await handle.query())

    @tool(name="background.await", effect="read")
    async def await_child(ctx: ToolExecutionContext, child_id: str) -> JsonObject:
        """Wait until a background child finishes (or needs a decision) and get its outcome.

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
            child_id: the child's id, as background.spawn returned it.
        """
        await _child_of(runs, ctx.run_id, child_id)
        remaining = None
        if ctx.deadline is not None:  # epoch milliseconds
            remaining = max(0.0, (ctx.deadline - time.time() * 1000) / 1000)
        async with asyncio.timeout(remaining):
            return _summary(await runs.wait(child_id))

    @tool(name="background.query", effect="read")
    async def query(ctx: ToolExecutionContext, child_id: str) -> JsonObject:
        """Read the durable status of a background child.

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
            child_id: the child's id.
        """
        return _summary(await _child_of(runs, ctx.run_id, child_id))

    @tool(name="background.list", effect="read")
    async def list_children(ctx: ToolExecutionContext) -> list[JsonValue]:
        """List the background children this run started.

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
        """
        return [_summary(record) for record in await runs.children_of(ctx.run_id)]

    @tool(name="background.cancel", effect="idempotent-write")
    async def cancel(
        ctx: ToolExecutionContext, child_id: str, reason: str = DEFAULT_CANCEL_REASON
    ) -> JsonObject:
        """Cancel a background child (and its own children) wherever it runs.

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
            child_id: the child's id.
            reason: why.
        """
        await _child_of(runs, ctx.run_id, child_id)
        return _summary(await runs.cancel(child_id, reason))

    return (spawn, await_child, query, list_children, cancel)
