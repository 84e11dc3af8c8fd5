"""``actoviq.runtime.open_runtime``: storage found through entry points, never imported (D1).

The backends here are registered by replacing the entry-point lookup, so the runtime's own
resolution, loading and errors run; the real SQLite wheel's entry point is exercised in the
storage package's tests.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
from runtime_testkit import make_agent

import actoviq.runtime.storage_entry_points as module
from actoviq.core import TextItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import (
    STORAGE_ENTRY_POINT_GROUP,
    RuntimeConfigurationError,
    RuntimeStorage,
    StorageBackendAmbiguousError,
    StorageBackendNotFoundError,
    open_runtime,
    resolve_storage_backend,
    storage_backends,
)
from actoviq.runtime.stores import (
    InMemoryCheckpointStore,
    InMemorySessionStore,
    RunCheckpointStore,
    RuntimeSessionStore,
    StoreRunCheckpointAdapter,
    StoreRuntimeSessionAdapter,
)


class _Database:
    """One in-memory "database" per name, shared by every open (like a file)."""

    def __init__(self) -> None:
        self.sessions = StoreRuntimeSessionAdapter(InMemorySessionStore())
        self.checkpoints = StoreRunCheckpointAdapter(InMemoryCheckpointStore())
        self.opened = 0
        self.closed = 0

    def runtime_sessions(self) -> RuntimeSessionStore:
        return self.sessions

    def runtime_checkpoints(self) -> RunCheckpointStore:
        return self.checkpoints


DATABASES: dict[str, _Database] = {}


class MemoryBackend:
    name = "memory"

    def handles(self, target: str) -> bool:
        return target.startswith("mem://")

    def open(self, target: str) -> AbstractAsyncContextManager[RuntimeStorage]:
        @asynccontextmanager
        async def opened() -> AsyncGenerator[RuntimeStorage]:
            database = DATABASES.setdefault(target, _Database())
            database.opened += 1
            try:
                yield database
            finally:
                database.closed += 1

        return opened()


class GreedyBackend(MemoryBackend):
    name = "greedy"

    def handles(self, target: str) -> bool:
        return True


class _Entry:
    def __init__(self, name: str, load: Any) -> None:
        self.name = name
        self.value = f"tests:{name}"
        self.group = STORAGE_ENTRY_POINT_GROUP
        self._load = load

    def load(self) -> Any:
        return self._load()


def _install(monkeypatch: pytest.MonkeyPatch, *entries: _Entry) -> None:
    def lookup(*, group: str) -> list[_Entry]:
        assert group == STORAGE_ENTRY_POINT_GROUP
        return list(entries)

    monkeypatch.setattr(module, "entry_points", lookup)


async def test_a_session_survives_reopening_the_target(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, _Entry("memory", lambda: MemoryBackend))
    agent = make_agent()
    async with open_runtime(
        "mem://chat", models=ModelRegistry([ScriptedProvider(["Hello Ada."])])
    ) as runtime:
        await runtime.run(agent, "I am Ada.", session_id="me")
    assert runtime.closed
    database = DATABASES["mem://chat"]
    assert (database.opened, database.closed) == (1, 1)  # the runtime closed it on the way out
    provider = ScriptedProvider(["You are Ada."])
    async with open_runtime("mem://chat", models=ModelRegistry([provider])) as runtime:
        await runtime.run(agent, "Who am I?", session_id="me")
    seen = [item.text for item in provider.requests[0].input if isinstance(item, TextItem)]
    assert "I am Ada." in seen


async def test_no_backend_names_the_wheel_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch)
    with pytest.raises(StorageBackendNotFoundError) as caught:
        async with open_runtime("postgresql://admin:hunter2@db/app"):
            pass
    assert caught.value.code == "STORAGE_BACKEND_NOT_FOUND"
    assert isinstance(caught.value, RuntimeConfigurationError)
    assert "pip install actoviq-storage-sqlite" in caught.value.message
    assert "hunter2" not in str(caught.value) and "***@db" in str(caught.value)
    _install(monkeypatch, _Entry("memory", lambda: MemoryBackend))
    with pytest.raises(StorageBackendNotFoundError, match=r"installed: memory"):
        resolve_storage_backend("chat.db")


def test_two_backends_for_one_target_need_a_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(
        monkeypatch,
        _Entry("greedy", lambda: GreedyBackend),
        _Entry("memory", lambda: MemoryBackend),
    )
    assert [backend.name for backend in storage_backends()] == ["greedy", "memory"]
    assert resolve_storage_backend("chat.db").name == "greedy"  # only one handles a path
    with pytest.raises(StorageBackendAmbiguousError) as caught:
        resolve_storage_backend("mem://x")
    assert caught.value.code == "STORAGE_BACKEND_AMBIGUOUS"
    assert resolve_storage_backend("mem://x", backend="memory").name == "memory"
    with pytest.raises(StorageBackendNotFoundError, match='named "nope"'):
        resolve_storage_backend("mem://x", backend="nope")


def test_a_broken_backend_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> Any:
        raise ImportError("No module named 'sqlalchemy'")

    _install(monkeypatch, _Entry("broken", broken))
    with pytest.raises(RuntimeConfigurationError, match="sqlalchemy") as caught:
        storage_backends()
    assert caught.value.code == "STORAGE_BACKEND_LOAD_FAILED"
    _install(monkeypatch, _Entry("odd", lambda: object))
    with pytest.raises(RuntimeConfigurationError, match="not a RuntimeStorageBackend"):
        storage_backends()


async def test_stores_of_your_own_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, _Entry("memory", lambda: MemoryBackend))
    with pytest.raises(RuntimeConfigurationError, match="sessions"):
        async with open_runtime("mem://y", sessions=InMemorySessionStore()):
            pass
    assert "mem://y" not in DATABASES  # refused before anything was opened
