"""``BackgroundChildManager``: spawn, query, cancel, resume, recover and reconcile durable children.

The façade over one :class:`~actoviq.orchestration.background.engine.BackgroundEngine`. By
default that is the in-repo store engine over a
:class:`~actoviq.runtime.stores.DurableChildStore` (``SqliteStorage.children`` on one SQLite file
or one PostgreSQL database shared by several workers); ``engine="<name>"`` selects another
registered engine (see :class:`~actoviq.orchestration.background.engine.BackgroundConfig`).

Example:
    >>> # async with await SqliteStorage.open("state.db") as storage:
    >>> #     async with BackgroundChildManager(runner, storage.children) as manager:
    >>> #         handle = await manager.spawn(root, researcher, "Summarise the logs.",
    >>> #                                      effect="read")
    >>> #         result = await handle.result()
    >>> # In another worker process, after a crash:
    >>> #     report = await manager.recover()   # takes over what is safe to replay
    >>> #     await manager.reconcile(child_id, "completed", actor="ops", output={...})
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from actoviq.core import UNSET, AbortSignal, AgentSpec, JsonObject, JsonValue, RunResult, Unset
from actoviq.orchestration.background.engine import (
    DEFAULT_CANCEL_REASON,
    AgentResolver,
    BackgroundConfig,
    BackgroundEngine,
    Clock,
    RecoveryReport,
    create_background_engine,
    register_background_engine,
)
from actoviq.orchestration.background.records import DurableChildRecord, ReconcileResolution
from actoviq.orchestration.background.store_engine import StoreBackgroundEngine
from actoviq.orchestration.outcomes import ChildFailurePolicy, SessionMode
from actoviq.orchestration.scope import OrchestrationScope
from actoviq.runtime import AgentInput, InterruptionDecision, ToolEffect

if TYPE_CHECKING:
    from actoviq.orchestration.child_runner import ChildRunner

__all__ = ["BackgroundChildManager", "DurableChildHandle", "store_engine_factory"]


def store_engine_factory(runner: ChildRunner, config: BackgroundConfig) -> StoreBackgroundEngine:
    """The ``"store"`` engine of :class:`BackgroundConfig` (``config.store`` is required).

    Raises:
        OrchestrationConfigError: ``config.store`` is not set.
    """
    return StoreBackgroundEngine.from_config(runner, config)


register_background_engine("store", store_engine_factory)


class DurableChildHandle:
    """A reference to one durable child (it need not run in this process)."""

    def __init__(self, manager: BackgroundChildManager, child_id: str) -> None:
        self._manager = manager
        self.child_id = child_id

    def __repr__(self) -> str:
        return f"DurableChildHandle({self.child_id!r})"

    async def query(self) -> DurableChildRecord:
        """The child's record."""
        return await self._manager.query(self.child_id)

    async def result(self) -> RunResult[Any]:
        """The child's result (see :meth:`BackgroundChildManager.result`)."""
        return await self._manager.result(self.child_id)

    async def wait(self) -> DurableChildRecord:
        """Wait until the child settles (see :meth:`BackgroundChildManager.wait`)."""
        return await self._manager.wait(self.child_id)

    async def resume(
        self,
        decisions: Sequence[InterruptionDecision] = (),
        *,
        context: JsonValue | Unset = UNSET,
    ) -> DurableChildHandle:
        """Start or continue the child here; returns this handle."""
        return await self._manager.resume(self.child_id, decisions, context=context)

    async def cancel(self, reason: str = DEFAULT_CANCEL_REASON) -> DurableChildRecord:
        """Cancel the child wherever it runs."""
        return await self._manager.cancel(self.child_id, reason)


class BackgroundChildManager:
    """Durable background children of orchestration scopes (see the module doc).

    Args:
        runner: the child runner (the runtime every child runs on).
        store: the durable child store of the default ``"store"`` engine.
        engine: an engine instance, or the registered name of one (default ``"store"``).
        tenant_id: the tenant of the records.
        lease_ms: lease length (renewed every third while a child runs).
        owner_id: this worker's id.
        resolve_agent: maps a stored ``agentId`` to the agent to run in this worker.
        clock: epoch-ms lease clock (default: the store's clock, else the wall clock).
        ledger_store: budget ledger store for children of durable-ledger trees.
        capacity: how many children of restored parents run here at once.
        options: engine-specific settings (named engines).

    Raises:
        OrchestrationConfigError: invalid settings ("leaseMs"), or no store for ``"store"``.
        UnknownBackgroundEngineError: ``engine`` names no registered engine.
    """

    def __init__(
        self,
        runner: ChildRunner,
        store: Any = None,
        *,
        engine: BackgroundEngine | str | None = None,
        tenant_id: str = "default",
        lease_ms: int = 30_000,
        owner_id: str | None = None,
        resolve_agent: AgentResolver | None = None,
        clock: Clock | None = None,
        ledger_store: Any = None,
        capacity: int = 8,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.runner = runner
        if engine is not None and not isinstance(engine, str):
            self.engine: BackgroundEngine = engine
            return
        self.engine = create_background_engine(
            runner,
            BackgroundConfig(
                engine=engine or "store",
                store=store,
                tenant_id=tenant_id,
                lease_ms=lease_ms,
                owner_id=owner_id,
                resolve_agent=resolve_agent,
                clock=clock,
                ledger_store=ledger_store,
                capacity=capacity,
                options=dict(options or {}),
            ),
        )

    @classmethod
    def from_config(cls, runner: ChildRunner, config: BackgroundConfig) -> Self:
        """A manager whose engine ``config`` selects and configures."""
        return cls(runner, engine=create_background_engine(runner, config))

    @property
    def owner_id(self) -> str:
        """This worker's id (what its leases name)."""
        return self.engine.owner_id

    def handle(self, child_id: str) -> DurableChildHandle:
        """A handle to ``child_id`` (not checked: ``query`` tells whether it exists)."""
        return DurableChildHandle(self, child_id)

    async def spawn(
        self,
        parent: OrchestrationScope,
        agent: AgentSpec[Any, Any],
        input: AgentInput,
        *,
        child_id: str | None = None,
        context: JsonValue | Unset = UNSET,
        metadata: JsonObject | None = None,
        effect: ToolEffect | None = None,
        idempotency_key: str | None = None,
        failure_policy: ChildFailurePolicy | None = None,
        session_mode: SessionMode | None = None,
        auto_start: bool = True,
        cancel_with_parent: bool = True,
    ) -> DurableChildHandle:
        """Persist a child of ``parent`` (``queued``) and, unless ``auto_start`` is false, run it.

        Args:
            parent: the parent scope (must carry the runner's services).
            agent: the agent the child runs (by id in other workers: see ``resolve_agent``).
            input: text, one item or a list of items.
            child_id: the child's id, also its run id (default: a new UUID).
            context: run context (strict JSON: it is persisted).
            metadata: caller metadata (strict JSON).
            effect: ``read``, ``idempotent-write`` or ``side-effect`` (default): what a crash
                mid-run may have done, hence whether another worker may replay it.
            idempotency_key: makes an ``idempotent-write`` child replayable.
            failure_policy: ``fail-fast`` (default), ``collect`` or ``retry-safe`` (only for
                replay-safe children).
            session_mode: the child's session mode (default: the runner's).
            auto_start: run it in this worker now (False: leave it ``queued`` for a worker's
                ``recover()`` or an explicit ``resume()``).
            cancel_with_parent: cancel the child (and its children) when ``parent`` is
                cancelled.

        Raises:
            ChildScopeError / ChildPolicyError / OrchestrationConfigError: see the engine.
            StorageConflictError: ``child_id`` already exists.
        """
        record = await self.engine.spawn(
            parent,
            agent,
            input,
            child_id=child_id,
            context=context,
            metadata=metadata,
            effect=effect,
            idempotency_key=idempotency_key,
            failure_policy=failure_policy,
            session_mode=session_mode,
            auto_start=auto_start,
            cancel_with_parent=cancel_with_parent,
        )
        return self.handle(record.child_id)

    async def query(self, child_id: str) -> DurableChildRecord:
        """The child's record.

        Raises:
            DurableChildNotFoundError: ``Unknown durable child "<id>".``
        """
        return await self.engine.query(child_id)

    async def list_children(
        self,
        *,
        parent_run_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[DurableChildRecord]:
        """Records (of one parent, one status), ordered by ``createdAt`` then id."""
        return await self.engine.list_children(
            parent_run_id=parent_run_id, status=status, limit=limit
        )

    async def resume(
        self,
        child_id: str,
        decisions: Sequence[InterruptionDecision] = (),
        *,
        context: JsonValue | Unset = UNSET,
    ) -> DurableChildHandle:
        """Run the child here: queued, stale and replay-safe, or interrupted (with decisions).

        An interrupted child continues its run state with ``decisions`` exactly once (a second
        resume is refused).

        Returns at once; outcomes come from :meth:`result`. A completed child stays completed.

        Raises:
            DurableChildNotFoundError: unknown child.
            DurableChildStateError: an interrupted child without decisions.
        """
        await self.engine.resume(child_id, decisions, context=context)
        return self.handle(child_id)

    async def result(self, child_id: str) -> RunResult[Any]:
        """The child's :class:`~actoviq.core.RunResult`.

        Awaits the child's run when it runs in this worker; otherwise reads the record.

        Raises:
            DurableChildNotReadyError: queued or running elsewhere ("call resume").
            DurableChildInterruptedError: waiting for decisions (``details["interruptions"]``).
            DurableChildFailedError / DurableChildCancelledError /
                DurableChildReconciliationError: the child failed, was cancelled or needs a
                human; a run here re-raises its original error.
        """
        return await self.engine.result(child_id)

    async def wait(self, child_id: str, *, poll_interval: float = 0.05) -> DurableChildRecord:
        """Wait until the child settles wherever it runs; returns the record.

        Settled: terminal, interrupted, or needing reconciliation. Bound the wait with
        ``asyncio.timeout``.
        """
        return await self.engine.wait(child_id, poll_interval=poll_interval)

    async def cancel(
        self, child_id: str, reason: str = DEFAULT_CANCEL_REASON
    ) -> DurableChildRecord:
        """Cancel the child wherever it runs; a terminal child is returned unchanged."""
        return await self.engine.cancel(child_id, reason)

    async def cancel_children(
        self, parent_run_id: str, reason: str = DEFAULT_CANCEL_REASON
    ) -> list[DurableChildRecord]:
        """Cancel every non-terminal descendant of ``parent_run_id`` (any process)."""
        return await self.engine.cancel_children(parent_run_id, reason)

    async def recover(self) -> RecoveryReport:
        """Scan non-terminal children and act on what is safe.

        Queued ones and stale replay-safe ones run here; stale side-effect ones move to
        ``needs_reconciliation``; leased and interrupted ones are reported.
        """
        return await self.engine.recover()

    async def reconcile(
        self,
        child_id: str,
        resolution: ReconcileResolution,
        *,
        actor: str,
        note: str | None = None,
        output: JsonValue | Unset = UNSET,
        error: str | None = None,
    ) -> DurableChildRecord:
        """Record a human's decision about a child whose worker died mid-run.

        ``"completed"`` (with the ``output`` it produced), ``"failed"`` (with ``error``) or
        ``"requeue"`` (run it again: the human checked that replaying is safe). The decision,
        its actor, note and the state it replaced are kept on the record.
        """
        return await self.engine.reconcile(
            child_id, resolution, actor=actor, note=note, output=output, error=error
        )

    async def join(self) -> None:
        """Wait for every child running in this worker to settle."""
        await self.engine.join()

    async def serve(self, *, stop: AbortSignal, poll_interval: float = 1.0) -> None:
        """Work as a background worker until ``stop`` aborts.

        Calls ``recover()`` every ``poll_interval`` seconds, taking over children whose worker
        died.
        """
        stopped = asyncio.Event()
        remove = stop.add_listener(lambda _reason: stopped.set())
        try:
            while not stop.aborted:
                await self.recover()
                try:
                    await asyncio.wait_for(stopped.wait(), timeout=poll_interval)
                except TimeoutError:
                    continue
        finally:
            remove()

    async def aclose(self) -> None:
        """Close the engine; idempotent.

        Leases of children still running here are released: another worker applies the
        takeover rules.
        """
        await self.engine.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
