"""Checking and wiring ``AgentRuntime``'s constructor options (internal).

``sessions=`` and ``checkpoints=`` accept the runtime protocols or the storage protocols (which are
wrapped in the store adapters), so ``AgentRuntime(sessions=storage.sessions)`` works as well as
``storage.runtime_sessions()``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, get_args

from actoviq.core import RunError, RunLimitsPatch
from actoviq.events import KnownEventType, RedactionPolicy
from actoviq.providers import ModelRegistry
from actoviq.runtime.errors import RuntimeConfigurationError
from actoviq.runtime.services import RuntimeServices
from actoviq.runtime.stores import (
    CheckpointStore,
    RunCheckpointStore,
    RuntimeSessionStore,
    SessionStore,
    StoreRunCheckpointAdapter,
    StoreRuntimeSessionAdapter,
)
from actoviq.runtime.tools import ToolPolicy

__all__ = [
    "RESERVED_EVENT_TYPES",
    "check_host_event_type",
    "check_runtime_objects",
    "check_runtime_options",
    "register_sessions",
    "run_checkpoints",
]

_MAX_SAFE: Final = 2**53 - 1
RESERVED_EVENT_TYPES: Final = frozenset(
    (*get_args(KnownEventType), "handoff.prepared", "handoff.requested", "tool.suspended")
)
"""Event types only the runtime emits (``emit_run_event`` refuses them)."""


def check_host_event_type(type: object, run_id: str) -> None:
    """Raise ``RunError`` ``RUN_EVENT_RESERVED`` for a runtime-owned or empty event type."""
    if not isinstance(type, str) or type in RESERVED_EVENT_TYPES or not type.strip():
        raise RunError(
            f'Event type "{type}" is reserved for the runtime or empty.',
            code="RUN_EVENT_RESERVED",
            run_id=run_id,
            phase="runtime",
        )


def check_runtime_options(
    options: tuple[object, object, object, object],
    objects: tuple[object, object, object, object, object, object, object],
) -> None:
    """Raise :class:`RuntimeConfigurationError` for an invalid ``AgentRuntime`` option.

    ``options``: max concurrent runs, max tool threads, checkpoint lease, stream buffer policy;
    ``objects``: see :func:`check_runtime_objects`.
    """
    max_concurrent_runs, max_tool_threads, checkpoint_lease_ms, stream_buffer_policy = options
    if type(max_concurrent_runs) is not int or not 1 <= max_concurrent_runs <= _MAX_SAFE:
        raise RuntimeConfigurationError("maxConcurrentRuns must be a positive safe integer.")
    if type(max_tool_threads) is not int or not 1 <= max_tool_threads <= 1024:
        raise RuntimeConfigurationError("maxToolThreads must be an int between 1 and 1024.")
    if type(checkpoint_lease_ms) is not int or not 1 <= checkpoint_lease_ms <= _MAX_SAFE:
        raise RuntimeConfigurationError("checkpointLeaseMs must be a positive safe integer.")
    if stream_buffer_policy not in ("drop-deltas", "block"):
        raise RuntimeConfigurationError(f"Unknown stream buffer policy {stream_buffer_policy!r}.")
    check_runtime_objects(objects)


def check_runtime_objects(
    given: tuple[object, object, object, object, object, object, object],
) -> None:
    """Raise :class:`RuntimeConfigurationError` for a misplaced object type.

    ``models``, ``tools``, ``event_sinks``, ``default_limits``, ``redaction``, ``tool_policy``
    or ``services`` of the wrong type failed later with a bare ``AttributeError`` or
    ``TypeError``, or (``tool_policy``) was silently never asked.
    """
    models, tools, sinks, limits, redaction, policy, services = given
    for name, value, expected in (
        ("redaction", redaction, RedactionPolicy),
        ("tool_policy", policy, ToolPolicy),
        ("services", services, RuntimeServices),
    ):
        if value is not None and (isinstance(value, type) or not isinstance(value, expected)):
            raise RuntimeConfigurationError(
                f"{name} must be a {expected.__name__}, got {type(value).__name__}."
            )
    if models is not None and not isinstance(models, ModelRegistry):
        raise RuntimeConfigurationError(
            f"models must be a ModelRegistry, got {type(models).__name__}."
        )
    for name, value in (("tools", tools), ("event_sinks", sinks)):
        if value is not None and (
            isinstance(value, str | bytes) or not isinstance(value, Iterable)
        ):
            raise RuntimeConfigurationError(f"{name} must be a list, got {type(value).__name__}.")
    if limits is not None and not isinstance(limits, RunLimitsPatch):
        raise RuntimeConfigurationError(
            f"default_limits must be a RunLimitsPatch, got {type(limits).__name__}."
        )


def register_sessions(
    services: RuntimeServices, sessions: RuntimeSessionStore | SessionStore
) -> None:
    """Register ``sessions`` as the ``sessions`` service (a storage store gets the adapter).

    Raises:
        RuntimeConfigurationError: not a session store, or ``services`` has one already.
    """
    if isinstance(sessions, SessionStore):
        store: RuntimeSessionStore = StoreRuntimeSessionAdapter(sessions)
    elif isinstance(sessions, RuntimeSessionStore):  # pyright: ignore[reportUnnecessaryIsInstance]
        store = sessions
    else:
        raise RuntimeConfigurationError(
            f"sessions must be a RuntimeSessionStore or a SessionStore, "
            f"got {type(sessions).__name__}."
        )
    if services.has("sessions"):
        raise RuntimeConfigurationError(
            'sessions= and a "sessions" service in services= both name the session store.'
        )
    services.register("sessions", lambda: store)


def run_checkpoints(store: RunCheckpointStore | CheckpointStore) -> RunCheckpointStore:
    """The runtime's checkpoint store for ``store`` (a storage store gets the adapter).

    Raises:
        RuntimeConfigurationError: not a checkpoint store.
    """
    if isinstance(store, CheckpointStore):
        return StoreRunCheckpointAdapter(store)
    if isinstance(store, RunCheckpointStore):  # pyright: ignore[reportUnnecessaryIsInstance]
        return store
    raise RuntimeConfigurationError(
        f"checkpoints must be a RunCheckpointStore or a CheckpointStore, "
        f"got {type(store).__name__}."
    )


def checkpoint_store_from(
    checkpoints: RunCheckpointStore | CheckpointStore | None,
    checkpoint_store: RunCheckpointStore | None,
) -> RunCheckpointStore | None:
    """The runtime's checkpoint store from ``checkpoints=`` or ``checkpoint_store=`` (one of them).

    Raises:
        RuntimeConfigurationError: both were given, or ``checkpoints`` is not a checkpoint store.
    """
    if checkpoints is None:
        if checkpoint_store is not None and not isinstance(checkpoint_store, RunCheckpointStore):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise RuntimeConfigurationError(
                f"checkpoint_store must be a RunCheckpointStore, "
                f"got {type(checkpoint_store).__name__}."
            )
        return checkpoint_store
    if checkpoint_store is not None:
        raise RuntimeConfigurationError(
            "Give the checkpoint store once: checkpoints= or checkpoint_store=."
        )
    return run_checkpoints(checkpoints)
