"""The background engine contract: what sits behind ``BackgroundChildManager``.

:class:`BackgroundChildManager <actoviq.orchestration.background.manager.BackgroundChildManager>`
is a façade over one :class:`BackgroundEngine`. The in-repo engine,
:class:`~actoviq.orchestration.background.store_engine.StoreBackgroundEngine`, keeps children in
a :class:`~actoviq.runtime.stores.DurableChildStore` (in memory, SQLite, PostgreSQL) with lease
heartbeats and fencing revisions. Another engine (DBOS, Temporal, ...) implements the same
protocol and is selected by configuration: :class:`BackgroundConfig` names it, and
:func:`register_background_engine` (or the ``actoviq.orchestration.background_engines`` entry
point group) maps the name to a factory. Every engine must pass the conformance kit in
:mod:`actoviq.orchestration.background.conformance`.

Semantics every engine keeps (spec 04 §1.9, §8.1.3-5, §8.2-15):

* one logical child per spawn, its record durable before ``spawn`` returns;
* a crashed worker's child is taken over after its lease expires only when replaying it is safe
  (``read``, or ``idempotent-write`` with a key); a side-effect child goes to
  ``needs_reconciliation`` and is never replayed;
* ``completed``, ``failed`` and ``cancelled`` are terminal and never overwritten;
* an ``interrupted`` child (waiting for an approval) is resumed exactly once, with decisions;
* cancelling a parent scope cancels its children.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from actoviq.core import UNSET, AgentSpec, JsonObject, JsonValue, RunResult, Unset
from actoviq.orchestration.background.errors import UnknownBackgroundEngineError
from actoviq.orchestration.background.records import DurableChildRecord, ReconcileResolution
from actoviq.orchestration.errors import OrchestrationConfigError
from actoviq.orchestration.outcomes import ChildFailurePolicy, SessionMode
from actoviq.orchestration.scope import OrchestrationScope
from actoviq.runtime import AgentInput, InterruptionDecision, ToolEffect

if TYPE_CHECKING:
    from actoviq.orchestration.child_runner import ChildRunner

__all__ = [
    "DEFAULT_CANCEL_REASON",
    "ENGINE_ENTRY_POINT_GROUP",
    "AgentResolver",
    "BackgroundConfig",
    "BackgroundEngine",
    "BackgroundEngineFactory",
    "Clock",
    "RecoveryReport",
    "create_background_engine",
    "register_background_engine",
    "registered_background_engines",
]

DEFAULT_CANCEL_REASON = "Background child cancelled."
"""The reason recorded when a background child is cancelled without one."""
ENGINE_ENTRY_POINT_GROUP = "actoviq.orchestration.background_engines"
"""The entry-point group background engines register under."""

AgentResolver = Callable[
    [str], "AgentSpec[Any, Any] | Awaitable[AgentSpec[Any, Any] | None] | None"
]
"""Maps a stored ``agentId`` to the agent to run (in whichever worker runs the child)."""
Clock = Callable[[], "int | Awaitable[int]"]
"""Epoch milliseconds (leases are compared against it)."""


@attrs.frozen(kw_only=True, slots=True)
class RecoveryReport:
    """What :meth:`BackgroundEngine.recover` found and did.

    Attributes:
        started: children this worker started (queued ones, and stale replay-safe ones it took
            over); await them with ``result()`` or ``join()``.
        needs_reconciliation: side-effect children whose worker died mid-run (now or earlier
            moved to ``needs_reconciliation``); resolve each with ``reconcile()``.
        leased: children another worker holds, with the epoch ms their lease expires.
        interrupted: children waiting for decisions (resume them with decisions).
    """

    started: tuple[str, ...] = ()
    needs_reconciliation: tuple[str, ...] = ()
    leased: tuple[tuple[str, int | None], ...] = ()
    interrupted: tuple[str, ...] = ()

    def to_json(self) -> JsonObject:
        """``{started, needsReconciliation, leased: [{childId, leaseExpiresAt}], interrupted}``."""
        return {
            "started": list(self.started),
            "needsReconciliation": list(self.needs_reconciliation),
            "leased": [{"childId": c, "leaseExpiresAt": e} for c, e in self.leased],
            "interrupted": list(self.interrupted),
        }


@runtime_checkable
class BackgroundEngine(Protocol):
    """Durable background children: the operations ``BackgroundChildManager`` delegates."""

    @property
    def owner_id(self) -> str:
        """This worker's id (what its leases name)."""
        ...

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
        """Persist a ``queued`` child (and start it here unless ``auto_start`` is false)."""
        ...

    async def query(self, child_id: str) -> DurableChildRecord:
        """The child's record (``DurableChildNotFoundError`` when unknown)."""
        ...

    async def list_children(
        self,
        *,
        parent_run_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[DurableChildRecord]:
        """Records ordered by ``createdAt`` then id."""
        ...

    async def resume(
        self,
        child_id: str,
        decisions: Sequence[InterruptionDecision] = (),
        *,
        context: JsonValue | Unset = UNSET,
    ) -> None:
        """Start (or continue, with decisions) the child in this worker; outcomes via result()."""
        ...

    async def result(self, child_id: str) -> RunResult[Any]:
        """The child's result: its run here, else its record (typed errors otherwise)."""
        ...

    async def wait(self, child_id: str, *, poll_interval: float = 0.05) -> DurableChildRecord:
        """Wait until the child is terminal, interrupted or needs reconciliation."""
        ...

    async def cancel(
        self, child_id: str, reason: str = DEFAULT_CANCEL_REASON
    ) -> DurableChildRecord:
        """Cancel the child wherever it runs (terminal records are left as they are)."""
        ...

    async def cancel_children(
        self, parent_run_id: str, reason: str = DEFAULT_CANCEL_REASON
    ) -> list[DurableChildRecord]:
        """Cancel every non-terminal child of ``parent_run_id``, and theirs, recursively."""
        ...

    async def recover(self) -> RecoveryReport:
        """Scan non-terminal children: start what is safe, report the rest."""
        ...

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
        """Record a human's decision about a child whose worker died mid-run."""
        ...

    async def join(self) -> None:
        """Wait for every child running in this worker to settle."""
        ...

    async def aclose(self) -> None:
        """Stop: release the leases of children still running here; idempotent."""
        ...


@attrs.frozen(kw_only=True)
class BackgroundConfig:
    """How to build a background engine (selected by ``engine`` name).

    Attributes:
        engine: the engine's registered name (``"store"`` is the in-repo engine).
        store: the durable child store (``"store"`` engine).
        tenant_id: the tenant of the records.
        lease_ms: how long a lease outlives its worker's last heartbeat.
        owner_id: this worker's id (default: host, pid and a random part).
        resolve_agent: how a worker finds the agent of a stored child.
        clock: epoch-ms clock for leases (default: the store's clock, else the wall clock).
        ledger_store: the budget ledger store (children of durable-ledger trees).
        capacity: how many restored children this worker runs at once.
        options: engine-specific settings.
    """

    engine: str = "store"
    store: Any = None
    tenant_id: str = "default"
    lease_ms: int = 30_000
    owner_id: str | None = None
    resolve_agent: AgentResolver | None = None
    clock: Clock | None = None
    ledger_store: Any = None
    capacity: int = 8
    options: Mapping[str, Any] = attrs.field(factory=lambda: {})


BackgroundEngineFactory = Callable[["ChildRunner", BackgroundConfig], BackgroundEngine]
"""Builds an engine for a runner from a configuration."""

_FACTORIES: dict[str, BackgroundEngineFactory] = {}


def register_background_engine(name: str, factory: BackgroundEngineFactory) -> None:
    """Make ``factory`` the engine built for ``BackgroundConfig(engine=name)``.

    Raises:
        OrchestrationConfigError: ``name`` is not a non-blank string or ``factory`` is not
            callable (nothing registered).
    """
    if not isinstance(name, str) or not name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise OrchestrationConfigError(
            "A background engine name must be a non-empty string.", details={"field": "name"}
        )
    if not callable(factory):
        raise OrchestrationConfigError(
            f'The factory of background engine "{name}" must be callable.',
            details={"field": "factory"},
        )
    _FACTORIES[name] = factory


def _entry_points() -> Iterable[importlib.metadata.EntryPoint]:
    return importlib.metadata.entry_points(group=ENGINE_ENTRY_POINT_GROUP)


def registered_background_engines() -> tuple[str, ...]:
    """Every engine name known: registered ones and installed entry points, sorted."""
    return tuple(sorted({*_FACTORIES, *(ep.name for ep in _entry_points())}))


def create_background_engine(runner: ChildRunner, config: BackgroundConfig) -> BackgroundEngine:
    """Build the engine ``config.engine`` names.

    Raises:
        UnknownBackgroundEngineError: no engine of that name is registered or installed.
    """
    factory = _FACTORIES.get(config.engine)
    if factory is None:
        for entry in _entry_points():
            if entry.name == config.engine:
                factory = entry.load()
                break
    if factory is None:
        known = ", ".join(registered_background_engines()) or "none"
        raise UnknownBackgroundEngineError(
            f'No background engine named "{config.engine}" (known: {known}). Register one with '
            "register_background_engine() or install a package that provides it.",
            details={"engine": config.engine},
        )
    return factory(runner, config)
