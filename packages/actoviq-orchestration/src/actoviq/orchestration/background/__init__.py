"""Durable background children (spec 04 §1.9, §8.1.2-5, §8.2-15, issue 15 point 7).

:class:`BackgroundChildManager` spawns, queries, cancels, resumes, recovers and reconciles
children whose state lives in a durable store, so they outlive the process that spawned them.
"""

from actoviq.orchestration.background.engine import (
    DEFAULT_CANCEL_REASON,
    ENGINE_ENTRY_POINT_GROUP,
    AgentResolver,
    BackgroundConfig,
    BackgroundEngine,
    BackgroundEngineFactory,
    Clock,
    RecoveryReport,
    create_background_engine,
    register_background_engine,
    registered_background_engines,
)
from actoviq.orchestration.background.errors import (
    DurableChildAgentError,
    DurableChildCancelledError,
    DurableChildConflictError,
    DurableChildError,
    DurableChildFailedError,
    DurableChildInterruptedError,
    DurableChildLeasedError,
    DurableChildLeaseLostError,
    DurableChildNotFoundError,
    DurableChildNotReadyError,
    DurableChildReconciliationError,
    DurableChildStateError,
    UnknownBackgroundEngineError,
)
from actoviq.orchestration.background.manager import (
    BackgroundChildManager,
    DurableChildHandle,
    store_engine_factory,
)
from actoviq.orchestration.background.records import (
    DURABLE_CHILD_SCHEMA_VERSION,
    TERMINAL_STATUSES,
    DurableChildRecord,
    DurableChildStatus,
    LedgerRef,
    ReconcileResolution,
    ReconciliationEntry,
)
from actoviq.orchestration.background.store_engine import StoreBackgroundEngine

__all__ = [
    "DEFAULT_CANCEL_REASON",
    "DURABLE_CHILD_SCHEMA_VERSION",
    "ENGINE_ENTRY_POINT_GROUP",
    "TERMINAL_STATUSES",
    "AgentResolver",
    "BackgroundChildManager",
    "BackgroundConfig",
    "BackgroundEngine",
    "BackgroundEngineFactory",
    "Clock",
    "DurableChildAgentError",
    "DurableChildCancelledError",
    "DurableChildConflictError",
    "DurableChildError",
    "DurableChildFailedError",
    "DurableChildHandle",
    "DurableChildInterruptedError",
    "DurableChildLeaseLostError",
    "DurableChildLeasedError",
    "DurableChildNotFoundError",
    "DurableChildNotReadyError",
    "DurableChildReconciliationError",
    "DurableChildRecord",
    "DurableChildStateError",
    "DurableChildStatus",
    "LedgerRef",
    "ReconcileResolution",
    "ReconciliationEntry",
    "RecoveryReport",
    "StoreBackgroundEngine",
    "UnknownBackgroundEngineError",
    "create_background_engine",
    "register_background_engine",
    "registered_background_engines",
    "store_engine_factory",
]
