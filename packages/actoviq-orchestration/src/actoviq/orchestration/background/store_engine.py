"""``StoreBackgroundEngine``: durable background children on a ``DurableChildStore``.

The in-repo engine (spec 04 §1.9, §8.1.2-5): the same code runs on the in-memory store (tests),
a SQLite file (one machine) and PostgreSQL (several workers), through the
:class:`~actoviq.runtime.stores.DurableChildStore` protocol only (no storage import, D1).

A child is a record under compare-and-set. A worker takes a ``queued`` child (or a ``running``
one whose lease expired, when replaying it is safe) by writing ``running`` with its lease; a
:class:`~actoviq.orchestration.background.leases.LeaseKeeper` renews the lease while the child
runs and fences every write on the record's revision; the run goes through the one
:class:`~actoviq.orchestration.child_runner.ChildRunner`
(:mod:`~actoviq.orchestration.background.execution`). Each execution is a task this engine
owns: :meth:`StoreBackgroundEngine.join` awaits them, :meth:`StoreBackgroundEngine.aclose`
releases their leases and awaits them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Final, Self, cast

from actoviq.core import (
    UNSET,
    AgentSpec,
    JsonObject,
    JsonValue,
    JsonValueError,
    RunResult,
    Unset,
    assert_json_value,
    iso_now,
)
from actoviq.orchestration.background._support import (
    SETTLED_STATUSES,
    cancel_error,
    check_durable_policy,
    reconciled_record,
    result_of,
)
from actoviq.orchestration.background.engine import (
    DEFAULT_CANCEL_REASON,
    AgentResolver,
    BackgroundConfig,
    Clock,
    RecoveryReport,
)
from actoviq.orchestration.background.errors import (
    DurableChildAgentError,
    DurableChildCancelledError,
    DurableChildConflictError,
    DurableChildError,
    DurableChildFailedError,
    DurableChildStateError,
)
from actoviq.orchestration.background.execution import ChildExecutor
from actoviq.orchestration.background.parents import ChildContext
from actoviq.orchestration.background.records import (
    DurableChildRecord,
    LedgerRef,
    ReconcileResolution,
    normalize_input,
)
from actoviq.orchestration.background.store_records import StoreRecords
from actoviq.orchestration.durable_budget import DurableBudgetLedger
from actoviq.orchestration.errors import ChildScopeError, OrchestrationConfigError
from actoviq.orchestration.outcomes import ChildFailurePolicy, SessionMode
from actoviq.orchestration.persisted import persist_scope
from actoviq.orchestration.scope import OrchestrationScope
from actoviq.runtime import AgentInput, InterruptionDecision, ToolEffect
from actoviq.runtime.stores import BudgetLedgerStore, DurableChildStore, new_lease_owner

if TYPE_CHECKING:
    from actoviq.orchestration.child_runner import ChildRunner

__all__ = ["StoreBackgroundEngine"]

_MAX_SAFE: Final = 2**53 - 1
_CAS_ATTEMPTS: Final = 32
_SETTLING_ERRORS: Final = (
    DurableChildCancelledError,
    DurableChildFailedError,
    DurableChildAgentError,
)


class StoreBackgroundEngine(StoreRecords):
    """The :class:`~actoviq.orchestration.background.engine.BackgroundEngine` on a store.

    Args:
        runner: the one child runner (its runtime runs every child).
        store: where the records live (``SqliteStorage.children``, an in-memory store, ...).
        tenant_id: the tenant of the records.
        lease_ms: how long a lease outlives the last heartbeat (renewed every third).
        owner_id: this worker's id (default: ``<host>:<pid>:<random>``).
        resolve_agent: maps a stored ``agentId`` to an agent (default: agents spawned here,
            then ``runtime.get_agent``).
        clock: epoch-ms lease clock (default: the store's :class:`StoreClock`, else the wall).
        ledger_store: the budget ledger store, for children of durable-ledger trees.
        capacity: permits shared by the children this worker runs for restored parents.

    Records are read and written through :class:`StoreRecords` (``query``, ``list_children``,
    the lease clock ``now_ms``); :meth:`from_config` builds the engine from a
    :class:`BackgroundConfig`.

    Raises:
        OrchestrationConfigError: ``lease_ms`` is not a positive safe integer ("leaseMs").
    """

    def __init__(
        self,
        runner: ChildRunner,
        store: DurableChildStore,
        *,
        tenant_id: str = "default",
        lease_ms: int = 30_000,
        owner_id: str | None = None,
        resolve_agent: AgentResolver | None = None,
        clock: Clock | None = None,
        ledger_store: BudgetLedgerStore | None = None,
        capacity: int = 8,
    ) -> None:
        if type(lease_ms) is not int or not 1 <= lease_ms <= _MAX_SAFE:
            raise OrchestrationConfigError(
                "Background child leaseMs must be a positive safe integer.",
                details={"field": "leaseMs"},
            )
        super().__init__(store, tenant_id=tenant_id, clock=clock)
        self._runner = runner
        self._lease_ms = lease_ms
        self._owner = owner_id or new_lease_owner()
        self._children = ChildContext(
            runner, resolve_agent=resolve_agent, ledger_store=ledger_store, capacity=capacity
        )
        self._executor = ChildExecutor(
            self,
            runner,
            self._children,
            owner_id=self._owner,
            lease_ms=lease_ms,
            emit=self._emit,
        )
        self._flights: dict[str, asyncio.Future[RunResult[Any]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._listeners: dict[str, Callable[[], None]] = {}
        self._closed = False

    @classmethod
    def from_config(cls, runner: ChildRunner, config: BackgroundConfig, **extra: Any) -> Self:
        """The engine a :class:`BackgroundConfig` describes (``config.options`` aside).

        ``extra`` goes to the constructor as well (an engine's own settings).

        Raises:
            OrchestrationConfigError: ``config.store`` is not set ("store"), or ``lease_ms`` is
                not a positive safe integer ("leaseMs").
        """
        if config.store is None:
            raise OrchestrationConfigError(
                f'The "{config.engine}" background engine needs a durable child store, e.g. '
                "SqliteStorage.children or InMemoryDurableChildStore().",
                details={"field": "store"},
            )
        return cls(
            runner,
            config.store,
            tenant_id=config.tenant_id,
            lease_ms=config.lease_ms,
            owner_id=config.owner_id,
            resolve_agent=config.resolve_agent,
            clock=config.clock,
            ledger_store=config.ledger_store,
            capacity=config.capacity,
            **extra,
        )

    @property
    def owner_id(self) -> str:
        """This worker's id (its leases name it)."""
        return self._owner

    @property
    def lease_ms(self) -> int:
        """The lease length."""
        return self._lease_ms

    # -- spawn and execution --------------------------------------------------------------------

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
    ) -> DurableChildRecord:
        """See :class:`BackgroundEngine`.

        Raises:
            ChildScopeError: ``parent`` carries other services than the runner ("share").
            ChildPolicyError: a durable retry of a side-effect child ("cannot replay") or of a
                keyless idempotent write ("idempotencyKey").
            OrchestrationConfigError: ``context`` or ``metadata`` is not strict JSON, an unknown
                ``session_mode``, or a blank ``child_id``.
            StorageConflictError: ``child_id`` exists ("already exists").
        """
        self._check_open()
        if parent.services is not self._runner.services:
            raise ChildScopeError(
                "Background child parent must share the runner RuntimeServices instance.",
                details={"runId": parent.run_id},
            )
        parent.signal.throw_if_aborted()
        resolved: ToolEffect = effect or "side-effect"
        policy = failure_policy or ChildFailurePolicy.fail_fast()
        check_durable_policy(policy, resolved, idempotency_key)
        if session_mode not in (None, "child", "transfer", "ephemeral"):
            raise OrchestrationConfigError(  # refused now, not as the child's failure later
                f'session_mode must be "child", "transfer" or "ephemeral", got {session_mode!r}.',
                details={"field": "sessionMode"},
            )
        if child_id is not None and (type(child_id) is not str or not child_id.strip()):
            raise OrchestrationConfigError(
                "A durable child id must be a non-blank string.", details={"field": "childId"}
            )
        try:
            if not isinstance(context, Unset):
                assert_json_value(context, "context")
            assert_json_value(metadata or {}, "metadata")
        except JsonValueError as error:
            raise OrchestrationConfigError(
                f"A durable child's context and metadata must be strict JSON: {error}",
                details={"field": "context"},
            ) from error
        ledger = parent.budget
        stamp = iso_now()
        record = DurableChildRecord(
            child_id=child_id or str(uuid.uuid4()),
            revision=0,
            parent=(await persist_scope(parent)).to_json(),
            agent_id=agent.id,
            input=normalize_input(input),
            context=context,
            metadata=dict(metadata or {}),
            effect=resolved,
            idempotency_key=idempotency_key,
            failure_policy=policy,
            status="queued",
            created_at=stamp,
            updated_at=stamp,
            session_mode=session_mode,
            budget_ledger=LedgerRef(tenant_id=ledger.tenant_id, ledger_id=ledger.ledger_id)
            if isinstance(ledger, DurableBudgetLedger)
            else None,
            cancel_with_parent=cancel_with_parent,
        )
        await self._store.create(tenant_id=self._tenant, record=record.to_json())
        self._children.remember(parent, agent)
        if cancel_with_parent:
            self._listen_to_parent(parent, record.child_id)
        await self._emit(
            record,
            "orchestration.background.spawned",
            {"agentId": agent.id, "effect": resolved, "autoStart": auto_start},
        )
        if auto_start:
            self._launch(record)
        return record

    def _listen_to_parent(self, parent: OrchestrationScope, child_id: str) -> None:
        def on_abort(reason: object) -> None:
            self._listeners.pop(child_id, None)
            if self._closed:
                return
            text = getattr(reason, "message", None) or str(reason) or DEFAULT_CANCEL_REASON
            self._track(self._cancel_tree(child_id, f"Parent run cancelled: {text}"))

        self._listeners[child_id] = parent.signal.add_listener(on_abort)

    def _forget(self, child_id: str) -> None:
        remove = self._listeners.pop(child_id, None)
        if remove is not None:
            remove()

    async def _cancel_tree(self, child_id: str, reason: str) -> None:
        try:
            await self.cancel(child_id, reason)
            await self.cancel_children(child_id, reason)
        except DurableChildError:
            pass  # gone or changed meanwhile: the next cancel or recover settles it

    def _track(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    def _quiet_future() -> asyncio.Future[Any]:
        """A future on the running loop whose exception is no warning when nobody awaits it."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        return future

    def _launch(
        self,
        record: DurableChildRecord,
        decisions: Sequence[InterruptionDecision] | None = None,
        context: JsonValue | Unset = UNSET,
    ) -> asyncio.Future[RunResult[Any]]:
        """The child's in-flight result: the one already registered, else a new one, started."""
        flight = self._flights.get(record.child_id)
        if flight is None:
            flight = self._flights[record.child_id] = self._quiet_future()
            self._track(self._fly(record, decisions, context, flight))
        return flight

    async def _fly(
        self,
        record: DurableChildRecord,
        decisions: Sequence[InterruptionDecision] | None,
        context: JsonValue | Unset,
        flight: asyncio.Future[RunResult[Any]],
    ) -> None:
        """Settle the registered ``flight`` (an engine task): here, the child runs here."""
        child_id = record.child_id
        try:
            result, settled = await self._executor.execute(record, decisions, context)
        except asyncio.CancelledError:
            flight.cancel()
            raise
        except BaseException as error:  # handed to whoever awaits result()
            flight.set_exception(error)
            if isinstance(error, _SETTLING_ERRORS) or not isinstance(error, DurableChildError):
                self._forget(child_id)  # the record is terminal now
        else:
            assert result is not None
            flight.set_result(result)
            if settled.terminal:
                self._forget(child_id)
        finally:
            self._land(child_id, flight)

    def _land(self, child_id: str, flight: asyncio.Future[RunResult[Any]] | None) -> None:
        """The outcome is handed over: later ``result()`` calls read the record."""
        if flight is not None and self._flights.get(child_id) is flight:
            del self._flights[child_id]

    # -- operations -------------------------------------------------------------------------------

    async def resume(
        self,
        child_id: str,
        decisions: Sequence[InterruptionDecision] = (),
        *,
        context: JsonValue | Unset = UNSET,
    ) -> None:
        """See :class:`BackgroundEngine`.

        Raises:
            DurableChildNotFoundError: unknown child.
            DurableChildStateError: an interrupted child resumed without decisions.
        """
        self._check_open()
        if child_id in self._flights:
            return
        record = await self.query(child_id)
        if record.status == "interrupted" and not decisions:
            raise DurableChildStateError(
                f'Durable child "{child_id}" is interrupted: resume it with decisions for '
                f"{[i.id for i in record.interruptions]}.",
                child_id=child_id,
            )
        self._launch(record, list(decisions) if decisions else None, context)

    async def result(self, child_id: str) -> RunResult[Any]:
        """See :class:`BackgroundEngine`."""
        flight = self._flights.get(child_id)
        if flight is not None:
            return await asyncio.shield(flight)
        return result_of(await self.query(child_id))

    async def wait(self, child_id: str, *, poll_interval: float = 0.05) -> DurableChildRecord:
        """See :class:`BackgroundEngine` (polls the store for children running elsewhere)."""
        while True:
            flight = self._flights.get(child_id)
            if flight is not None:
                await asyncio.wait({flight})
            record = await self.query(child_id)
            if record.status in SETTLED_STATUSES:
                return record
            await asyncio.sleep(poll_interval)

    async def cancel(
        self, child_id: str, reason: str = DEFAULT_CANCEL_REASON
    ) -> DurableChildRecord:
        """See :class:`BackgroundEngine`: the record first, then this worker's run (if any).

        A worker running the child elsewhere sees the cancel at its next heartbeat (at most a
        third of the lease later) and aborts its run.
        """
        for _ in range(_CAS_ATTEMPTS):
            record = await self.query(child_id)
            if record.terminal:
                return record
            cancelled = record.next(
                status="cancelled",
                updated_at=iso_now(),
                lease_owner=None,
                lease_expires_at=None,
                heartbeat_at=None,
                error=cancel_error(reason),
                run_state=None,
                interruptions=(),
            )
            if await self.cas(record, cancelled):
                self._runner.tree.cancel_tree(
                    child_id, DurableChildCancelledError(child_id, reason=reason)
                )
                self._forget(child_id)
                await self._emit(
                    cancelled,
                    "orchestration.background.cancelled",
                    {"previousStatus": record.status, "reason": reason},
                )
                return cancelled
        raise DurableChildConflictError(
            f'Durable child "{child_id}" kept changing while being cancelled.', child_id=child_id
        )

    async def cancel_children(
        self, parent_run_id: str, reason: str = DEFAULT_CANCEL_REASON
    ) -> list[DurableChildRecord]:
        """See :class:`BackgroundEngine`."""
        cancelled: list[DurableChildRecord] = []
        pending, seen = [parent_run_id], {parent_run_id}
        while pending:
            for child in await self.list_children(parent_run_id=pending.pop()):
                if not child.terminal:
                    record = await self.cancel(child.child_id, reason)
                    if record.status == "cancelled" and record.revision != child.revision:
                        cancelled.append(record)
                if child.child_id not in seen:
                    seen.add(child.child_id)
                    pending.append(child.child_id)
        return cancelled

    async def recover(self) -> RecoveryReport:
        """See :class:`BackgroundEngine`."""
        self._check_open()
        return await self._recover_children(lambda _record, _status: False)

    async def _recover_children(
        self, held_elsewhere: Callable[[DurableChildRecord, str], bool]
    ) -> RecoveryReport:
        """Sort the open children: relaunch, leave under lease, reconcile, or report interrupted.

        ``held_elsewhere(record, status)`` names children another scheduler (an engine's queue) is
        already starting; they are left alone.
        """
        started: list[str] = []
        reconcile: list[str] = []
        leased: list[tuple[str, int | None]] = []
        interrupted: list[str] = []
        now = await self.now_ms()
        seen: set[str] = set()
        for status in ("queued", "running", "interrupted", "needs_reconciliation"):
            for record in await self.list_children(status=status):
                child_id = record.child_id
                if child_id in self._flights or child_id in seen:
                    continue
                if held_elsewhere(record, status):
                    continue
                seen.add(child_id)
                if status == "running":
                    if record.lease_expires_at is not None and record.lease_expires_at > now:
                        leased.append((child_id, record.lease_expires_at))
                        continue
                    if not record.replay_safe:
                        await self._executor.mark_needs_reconciliation(record, now)
                        reconcile.append(child_id)
                        continue
                if status in ("queued", "running"):
                    self._launch(record)
                    started.append(child_id)
                elif status == "interrupted":
                    interrupted.append(child_id)
                else:
                    reconcile.append(child_id)
        return RecoveryReport(
            started=tuple(started),
            needs_reconciliation=tuple(reconcile),
            leased=tuple(leased),
            interrupted=tuple(interrupted),
        )

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
        """See :class:`BackgroundEngine` (rules in ``_support.reconciled_record``).

        Raises:
            OrchestrationConfigError: a blank ``actor``, an unknown resolution, a non-JSON output.
            DurableChildStateError: the child is in another status, or its lease is live.
            DurableChildConflictError: the record changed meanwhile.
        """
        record = await self.query(child_id)
        settled = reconciled_record(
            record,
            resolution,
            actor=actor,
            now_ms=await self.now_ms(),
            note=note,
            output=output,
            error=error,
        )
        if not await self.cas(record, settled):
            raise DurableChildConflictError(
                f'Durable child "{child_id}" changed while being reconciled.', child_id=child_id
            )
        if settled.terminal:
            self._forget(child_id)
        await self._emit(
            settled,
            "orchestration.background.reconciled",
            {"resolution": resolution, "actor": actor, "previousStatus": record.status},
        )
        return settled

    async def join(self) -> None:
        """See :class:`BackgroundEngine`."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def aclose(self, *, drain_timeout: float = 0.0) -> None:
        """See :class:`BackgroundEngine`.

        Waits up to ``drain_timeout`` seconds for running children to settle, then releases the
        leases of the rest (their lease expires now: another worker takes over a replay-safe
        child and moves a side-effect one to reconciliation) and aborts their runs here.
        """
        if self._closed:
            return
        self._closed = True
        for remove in self._listeners.values():
            remove()
        self._listeners.clear()
        if self._tasks and drain_timeout > 0:
            await asyncio.wait(set(self._tasks), timeout=drain_timeout)
        for keeper in list(self._executor.keepers.values()):
            await keeper.release()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=max(self._lease_ms / 1000.0, 5.0))
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks))

    def _check_open(self) -> None:
        if self._closed:
            raise OrchestrationConfigError("The background engine is closed.")

    async def _emit(self, record: DurableChildRecord, type: str, data: JsonObject) -> None:
        parent_run_id = record.parent_run_id
        if parent_run_id is None:
            return
        lineage = record.parent.get("lineage")
        ancestors = tuple(cast(list[str], lineage)) if isinstance(lineage, list) else ()
        await self._runner.events.emit(
            parent_run_id,
            type,
            {"childId": record.child_id, "parentRunId": parent_run_id, **data},
            ancestors=ancestors,
        )
