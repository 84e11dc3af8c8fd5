"""This wheel's ``actoviq.runtime.storage`` entry point: ``actoviq.runtime.open_runtime`` opens a
SQLite file (and PostgreSQL URLs) with no import of ``actoviq.storage`` in the program (D1)."""

from __future__ import annotations

from pathlib import Path

from actoviq.core import AgentSpec, TextItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import open_runtime, resolve_storage_backend
from actoviq.storage.sqlite import SqliteStorageBackend

CHAT = AgentSpec(id="chat", name="Chat", instructions="Be brief.", model="scripted:m")


def test_the_entry_point_handles_paths_and_sql_urls() -> None:
    backend = resolve_storage_backend("chat.db")
    assert isinstance(backend, SqliteStorageBackend) and backend.name == "sqlite"
    for target in (
        ":memory:",
        "data/app.db",
        "sqlite+aiosqlite:///x.db",
        "postgresql+asyncpg://u@h/db",
        "POSTGRES://h/db",
    ):
        assert backend.handles(target), target
    for target in ("", "s3://bucket/key", "redis://h"):
        assert not backend.handles(target), target


async def test_open_runtime_from_the_runtime_keeps_a_session_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    async with open_runtime(path, models=ModelRegistry([ScriptedProvider(["Hi Ada."])])) as rt:
        await rt.run(CHAT, "I am Ada.", session_id="me")
    assert rt.closed
    provider = ScriptedProvider(["You are Ada."])
    async with open_runtime(str(path), models=ModelRegistry([provider])) as rt:
        await rt.run(CHAT, "Who am I?", session_id="me")
    seen = [item.text for item in provider.requests[0].input if isinstance(item, TextItem)]
    assert "I am Ada." in seen
