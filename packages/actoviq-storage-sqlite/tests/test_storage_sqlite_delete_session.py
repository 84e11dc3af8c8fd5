"""``SqliteStorage.delete_session``: the one maintenance path that removes a session."""

from __future__ import annotations

import contextlib
import sqlite3
import uuid
from pathlib import Path

import pytest

from actoviq.runtime import NewSessionItem, StorageDataError, StorageNotFoundError
from actoviq.storage.sqlite import SqliteStorage

from .conftest import POSTGRES_URL, asyncpg_url

TARGETS = [
    "sqlite",
    ":memory:",
    pytest.param(
        "postgres",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(not POSTGRES_URL, reason="ACTOVIQ_TEST_POSTGRES_URL is not set"),
        ],
    ),
]


def _target(name: str, tmp_path: Path) -> str:
    if name == "sqlite":
        return str(tmp_path / "delete.db")
    if name == "postgres":
        return asyncpg_url(POSTGRES_URL or "")
    return name


def _items(prefix: str, count: int) -> list[NewSessionItem]:
    return [
        NewSessionItem(item_id=f"{prefix}{i}", kind="text", payload={"type": "text", "n": i})
        for i in range(count)
    ]


@pytest.mark.parametrize("name", TARGETS)
async def test_delete_removes_journal_and_snapshots_and_the_id_can_be_reused(
    name: str, tmp_path: Path
) -> None:
    async with await SqliteStorage.open(_target(name, tmp_path)) as storage:
        sessions = storage.sessions
        # Unique per run: the PostgreSQL database outlives the test session, and the last step
        # creates the id again (tmp_path names repeat from one pytest session to the next).
        session = f"gone-{uuid.uuid4().hex}"
        await sessions.create(tenant_id="t", session_id=session)
        await sessions.create(tenant_id="t", session_id=f"{session}-kept")
        await sessions.append(
            tenant_id="t", session_id=session, expected_revision=0, items=_items("a", 3)
        )
        await sessions.compact(
            tenant_id="t", session_id=session, expected_revision=1, through_sequence=3, state={}
        )
        await sessions.append(
            tenant_id="t", session_id=session, expected_revision=2, items=_items("b", 2)
        )

        assert await storage.delete_session(tenant_id="t", session_id=session) is True
        assert await sessions.get(tenant_id="t", session_id=session) is None
        with pytest.raises(StorageNotFoundError):
            await sessions.load(tenant_id="t", session_id=session)
        assert await storage.delete_session(tenant_id="t", session_id=session) is False
        # Another tenant's or another session's rows are untouched.
        assert await sessions.get(tenant_id="t", session_id=f"{session}-kept") is not None

        # The same id starts over, and the same item ids are accepted again.
        await sessions.create(tenant_id="t", session_id=session)
        await sessions.append(
            tenant_id="t", session_id=session, expected_revision=0, items=_items("a", 2)
        )
        loaded = await sessions.load(tenant_id="t", session_id=session)
        assert [entry.item_id for entry in loaded.items] == ["a0", "a1"]
        assert loaded.snapshot is None
        # The journal is append-only again outside the maintenance transaction.
        await sessions.append(
            tenant_id="t", session_id=session, expected_revision=1, items=_items("c", 1)
        )
        assert (await sessions.get(tenant_id="t", session_id=session)).last_sequence == 3  # type: ignore[union-attr]


async def test_append_only_triggers_are_back_after_a_delete(tmp_path: Path) -> None:
    path = tmp_path / "triggers.db"
    async with await SqliteStorage.open(path) as storage:
        await storage.sessions.create(tenant_id="t", session_id="a")
        await storage.sessions.create(tenant_id="t", session_id="b")
        await storage.sessions.append(
            tenant_id="t", session_id="b", expected_revision=0, items=_items("x", 1)
        )
        assert await storage.delete_session(tenant_id="t", session_id="a")
    with contextlib.closing(sqlite3.connect(path)) as conn, pytest.raises(sqlite3.DatabaseError):
        conn.execute("DELETE FROM storage_v2_session_turns WHERE session_id = 'b'")


async def test_delete_refuses_empty_keys(tmp_path: Path) -> None:
    async with await SqliteStorage.open(tmp_path / "keys.db") as storage:
        with pytest.raises(StorageDataError):
            await storage.delete_session(tenant_id="", session_id="s")
        with pytest.raises(StorageDataError):
            await storage.delete_session(tenant_id="t", session_id="")
