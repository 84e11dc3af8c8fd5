"""Release gate: every canonical item type survives the session stores (in-memory and SQLite)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from harness import register_persistence

from actoviq.core import CanonicalItem
from actoviq.runtime import InMemorySessionStore, StoreRuntimeSessionAdapter
from actoviq.storage.sqlite import SqliteRuntimeSessionAdapter, SqliteStorage


async def _memory_roundtrip(items: Sequence[CanonicalItem]) -> Sequence[CanonicalItem]:
    sessions = StoreRuntimeSessionAdapter(InMemorySessionStore())
    await sessions.append(tenant_id="gate", session_id="s", items=items, expected_revision="0")
    return (await sessions.load(tenant_id="gate", session_id="s")).items


async def _sqlite_roundtrip(items: Sequence[CanonicalItem]) -> Sequence[CanonicalItem]:
    with tempfile.TemporaryDirectory() as folder:
        async with await SqliteStorage.open(Path(folder) / "gate.db") as storage:
            writer = SqliteRuntimeSessionAdapter(storage.sessions)
            await writer.append(
                tenant_id="gate", session_id="s", items=items, expected_revision="0"
            )
        # Reopen: the round-trip goes through the file, not a cache.
        async with await SqliteStorage.open(Path(folder) / "gate.db") as storage:
            reader = SqliteRuntimeSessionAdapter(storage.sessions)
            return (await reader.load(tenant_id="gate", session_id="s")).items


register_persistence("memory-sessions", _memory_roundtrip)
register_persistence("sqlite-sessions", _sqlite_roundtrip)
