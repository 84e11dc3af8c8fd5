"""A runtime on a database path or URL, through the storage wheels' entry points (D1).

``actoviq.runtime`` may not import ``actoviq.storage.*``. A storage wheel registers a backend in
the :data:`STORAGE_ENTRY_POINT_GROUP` entry-point group instead (``actoviq-storage-sqlite``
registers ``sqlite``: file paths, ``":memory:"``, ``sqlite…://`` and ``postgresql…://`` URLs);
:func:`open_runtime` asks each installed backend whether it handles the target, opens the one
that does and builds an ``AgentRuntime`` on its session and checkpoint stores. With no backend
for the target the error names the wheel to install.

Example:
    >>> import asyncio
    >>> from actoviq.providers import ModelRegistry
    >>> from actoviq.providers.testing import ScriptedProvider
    >>> from actoviq.runtime import AgentSpec
    >>> agent = AgentSpec(id="a", name="A", instructions="Be brief.", model="scripted:m")
    >>> async def main() -> str:
    ...     models = ModelRegistry([ScriptedProvider(["hello"])])
    ...     async with open_runtime(":memory:", models=models) as runtime:
    ...         return (await runtime.run(agent, "hi", session_id="me")).output
    >>> asyncio.run(main())
    'hello'
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from importlib.metadata import EntryPoint, entry_points
from typing import Any, ClassVar, Final, Protocol, runtime_checkable

from actoviq.runtime.errors import RuntimeConfigurationError
from actoviq.runtime.runtime import AgentRuntime
from actoviq.runtime.stores import RunCheckpointStore, RuntimeSessionStore

__all__ = [
    "STORAGE_ENTRY_POINT_GROUP",
    "RuntimeStorage",
    "RuntimeStorageBackend",
    "StorageBackendAmbiguousError",
    "StorageBackendNotFoundError",
    "open_runtime",
    "resolve_storage_backend",
    "storage_backends",
]

STORAGE_ENTRY_POINT_GROUP: Final = "actoviq.runtime.storage"
"""The entry-point group a storage wheel registers its :class:`RuntimeStorageBackend` in.

The entry point names a zero-argument callable (a class) that returns the backend, e.g. in the
wheel's ``pyproject.toml``: ``[project.entry-points."actoviq.runtime.storage"]`` with
``sqlite = "actoviq.storage.sqlite.backend:SqliteStorageBackend"``.
"""

_USER_INFO: Final = re.compile(r"(?<=://)[^/@\s]*@")


@runtime_checkable
class RuntimeStorage(Protocol):
    """An open database that gives a runtime its session and checkpoint stores."""

    def runtime_sessions(self) -> RuntimeSessionStore:
        """The session store (transcripts by ``session_id``)."""
        ...

    def runtime_checkpoints(self) -> RunCheckpointStore:
        """The checkpoint store (interrupted runs, resumable from the store alone)."""
        ...


@runtime_checkable
class RuntimeStorageBackend(Protocol):
    """What a storage wheel registers: which targets it opens, and how."""

    @property
    def name(self) -> str:
        """The backend's name (its entry point's name)."""
        ...

    def handles(self, target: str) -> bool:
        """True when ``target`` (a path or URL) is this backend's to open."""
        ...

    def open(self, target: str) -> AbstractAsyncContextManager[RuntimeStorage]:
        """Open ``target``; leaving the context closes the database."""
        ...


class StorageBackendNotFoundError(RuntimeConfigurationError):
    """No installed storage wheel handles the target (the message names what to install)."""

    default_code: ClassVar[str] = "STORAGE_BACKEND_NOT_FOUND"


class StorageBackendAmbiguousError(RuntimeConfigurationError):
    """More than one installed backend handles the target: pass ``backend=`` to choose."""

    default_code: ClassVar[str] = "STORAGE_BACKEND_AMBIGUOUS"


def _shown(target: str) -> str:
    """The target for a message: credentials in a URL are never shown."""
    return _USER_INFO.sub("***@", target)


def _load(entry: EntryPoint) -> RuntimeStorageBackend:
    try:
        backend = entry.load()()
    except Exception as error:
        raise RuntimeConfigurationError(
            f'The storage backend "{entry.name}" ({entry.value}) could not be loaded '
            f"({type(error).__name__}: {error}); reinstall the wheel that provides it.",
            code="STORAGE_BACKEND_LOAD_FAILED",
            details={"backend": entry.name},
        ) from error
    if not isinstance(backend, RuntimeStorageBackend):
        raise RuntimeConfigurationError(
            f'The storage backend "{entry.name}" ({entry.value}) is not a RuntimeStorageBackend '
            "(it needs name, handles(target) and open(target)).",
            code="STORAGE_BACKEND_LOAD_FAILED",
            details={"backend": entry.name},
        )
    return backend


def storage_backends() -> tuple[RuntimeStorageBackend, ...]:
    """The installed storage backends, by entry-point name.

    Raises:
        RuntimeConfigurationError: ``STORAGE_BACKEND_LOAD_FAILED``: an installed backend cannot
            be loaded.
    """
    found = sorted(entry_points(group=STORAGE_ENTRY_POINT_GROUP), key=lambda entry: entry.name)
    return tuple(_load(entry) for entry in found)


def resolve_storage_backend(
    target: str | os.PathLike[str], *, backend: str | None = None
) -> RuntimeStorageBackend:
    """The one installed backend that handles ``target`` (or the one named ``backend``).

    Raises:
        StorageBackendNotFoundError: no installed backend handles it (or none is so named).
        StorageBackendAmbiguousError: several do and ``backend`` does not choose.
    """
    try:
        text: object = os.fspath(target)
    except TypeError:  # None, a number ...: refused below, typed
        text = target
    if not isinstance(text, str):
        raise RuntimeConfigurationError(
            f"A storage target is a path or URL string, got {type(text).__name__}.",
            code="STORAGE_TARGET_INVALID",
        )
    installed = storage_backends()
    if backend is not None:
        chosen = [found for found in installed if found.name == backend]
    else:
        chosen = [found for found in installed if found.handles(text)]
    if len(chosen) == 1:
        return chosen[0]
    names = [found.name for found in installed]
    if not chosen:
        wanted = f'named "{backend}"' if backend is not None else f"for {_shown(text)!r}"
        raise StorageBackendNotFoundError(
            f"No installed storage backend {wanted} (installed: {', '.join(names) or 'none'}). "
            "For a SQLite file or a PostgreSQL URL: pip install actoviq-storage-sqlite "
            "(PostgreSQL also needs actoviq-storage-sqlite[postgres]).",
            details={"backends": list(names)},
        )
    raise StorageBackendAmbiguousError(
        f"Several storage backends handle {_shown(text)!r}: "
        f"{', '.join(found.name for found in chosen)}; pass backend= to choose one.",
        details={"backends": [found.name for found in chosen]},
    )


@asynccontextmanager
async def open_runtime(
    target: str | os.PathLike[str],
    *,
    backend: str | None = None,
    **runtime_options: Any,  # AgentRuntime's keyword options, checked by AgentRuntime itself
) -> AsyncGenerator[AgentRuntime]:
    """An ``AgentRuntime`` whose sessions and checkpoints live in the database at ``target``.

    Leaving the block closes the runtime, then the database.

    Args:
        target: a file path, ``":memory:"`` or a database URL (``postgresql+asyncpg://…``).
        backend: the name of the storage backend to use (default: the one that handles it).
        runtime_options: keyword options of ``AgentRuntime`` (``models``, ``tools``, ...).

    Raises:
        StorageBackendNotFoundError: no installed storage wheel handles ``target``.
        StorageBackendAmbiguousError: several do.
        RuntimeConfigurationError: ``sessions``/``checkpoints`` were given too.
    """
    clash = sorted({"sessions", "checkpoints"} & runtime_options.keys())
    if clash:
        raise RuntimeConfigurationError(
            f"open_runtime takes the sessions and checkpoints from the database; do not pass "
            f"{' or '.join(clash)} (use AgentRuntime(...) for stores of your own).",
            details={"options": clash},
        )
    chosen = resolve_storage_backend(target, backend=backend)
    async with chosen.open(os.fspath(target)) as storage:
        runtime = AgentRuntime(
            sessions=storage.runtime_sessions(),
            checkpoints=storage.runtime_checkpoints(),
            **runtime_options,
        )
        async with runtime:
            yield runtime
