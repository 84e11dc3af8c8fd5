"""The runtime session adapter's decoded-history cache over a SQLite file shared by two writers."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from actoviq.core import AgentSpec, CanonicalItem, TextItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime
from actoviq.runtime.stores import (
    SessionChanges,
    SessionChangeStore,
    SessionRevisionConflictError,
    StorageDataError,
)
from actoviq.storage.sqlite import SqliteRuntimeSessionAdapter, SqliteStorage

CHAT = AgentSpec(id="chat", name="Chat", instructions="Be brief.", model="scripted:m")
T = "default"


def _texts(items: tuple[CanonicalItem, ...] | list[CanonicalItem]) -> list[str]:
    return [item.text for item in items if isinstance(item, TextItem)]


async def test_load_changes_reads_the_row_the_snapshot_marker_and_the_tail(tmp_path: Path) -> None:
    async with await SqliteStorage.open(tmp_path / "a.db") as storage:
        sessions = storage.sessions
        assert isinstance(sessions, SessionChangeStore)
        adapter = SqliteRuntimeSessionAdapter(sessions)
        for n in range(3):
            loaded = await adapter.load(tenant_id=T, session_id="s")
            await adapter.append(
                tenant_id=T,
                session_id="s",
                items=[TextItem(role="user", text=f"q{n}"), TextItem(role="assistant", text="a")],
                expected_revision=loaded.revision,
            )
        changes = await sessions.load_changes(tenant_id=T, session_id="s", after_sequence=3)
        assert isinstance(changes, SessionChanges)
        assert changes.session.last_sequence == 6 and changes.snapshot_revision is None
        assert [entry.sequence for entry in changes.items] == [4, 5, 6]
        assert [entry.payload["text"] for entry in changes.items] == ["a", "q2", "a"]
        await adapter.compact(tenant_id=T, session_id="s")
        after = await sessions.load_changes(tenant_id=T, session_id="s", after_sequence=6)
        assert after.items == () or list(after.items) == []
        assert after.snapshot_revision == after.session.revision


async def test_a_second_process_turns_are_read_alone_and_a_conflict_invalidates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "chat.db"
    async with (
        await SqliteStorage.open(path) as first,
        await SqliteStorage.open(path) as second,  # another process on the same file
    ):
        ours = SqliteRuntimeSessionAdapter(first.sessions)
        theirs = SqliteRuntimeSessionAdapter(second.sessions)
        reads: list[tuple[int, int]] = []
        changes_store = first.sessions
        assert isinstance(changes_store, SessionChangeStore)
        real = changes_store.load_changes

        async def spy(*, tenant_id: str, session_id: str, after_sequence: int) -> SessionChanges:
            changes = await real(
                tenant_id=tenant_id, session_id=session_id, after_sequence=after_sequence
            )
            reads.append((after_sequence, len(changes.items)))
            return changes

        monkeypatch.setattr(changes_store, "load_changes", spy)
        provider = ScriptedProvider(["one", "two", "three"])
        async with (
            AgentRuntime(models=ModelRegistry([provider]), sessions=ours) as runtime,
            AgentRuntime(
                models=ModelRegistry([ScriptedProvider(["theirs"])]), sessions=theirs
            ) as other,
        ):
            await runtime.run(CHAT, "q1", session_id="s")
            await runtime.run(CHAT, "q2", session_id="s")
            held = await ours.load(tenant_id=T, session_id="s")
            await other.run(CHAT, "from elsewhere", session_id="s")
            reads.clear()
            await runtime.run(CHAT, "q3", session_id="s")
            assert reads[0] == (4, 2)  # only the other writer's turn was read
            seen = _texts(provider.requests[-1].input)
            assert seen[1:] == ["q1", "one", "q2", "two", "from elsewhere", "theirs", "q3"]
            # a stale append conflicts and drops the entry; the next load is whole and right
            with pytest.raises(SessionRevisionConflictError):
                await ours.append(
                    tenant_id=T,
                    session_id="s",
                    items=[TextItem(role="user", text="stale")],
                    expected_revision=held.revision,
                )
            assert (T, "s") not in ours.history_cache
            fresh = SqliteRuntimeSessionAdapter(second.sessions, history_cache_items=0)
            expected = await fresh.load(tenant_id=T, session_id="s")
            again = await ours.load(tenant_id=T, session_id="s")
            assert again.items == expected.items and again.revision == expected.revision
            assert "stale" not in _texts(again.items)


async def test_a_corrupt_turn_written_behind_the_cache_fails_closed(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    async with await SqliteStorage.open(path) as storage:
        adapter = SqliteRuntimeSessionAdapter(storage.sessions)
        for n in range(2):
            loaded = await adapter.load(tenant_id=T, session_id="s")
            await adapter.append(
                tenant_id=T,
                session_id="s",
                items=[TextItem(role="user", text=f"q{n}")],
                expected_revision=loaded.revision,
            )
        await adapter.load(tenant_id=T, session_id="s")  # cached through sequence 2
        # a damaged turn appended behind the cache (closing(): `with connect()` only commits)
        with contextlib.closing(sqlite3.connect(path)) as raw, raw:
            raw.execute(
                "INSERT INTO storage_v2_session_turns SELECT tenant_id, session_id, 3, 3, "
                "created_at, '[\"x\"]', kinds_json, item_created_at_json, "
                '\'[{"type":"text","role":"robot","text":"x"}]\' '
                "FROM storage_v2_session_turns WHERE last_sequence = 1"
            )
            raw.execute("UPDATE storage_v2_sessions SET revision = revision + 1, last_sequence = 3")
        with pytest.raises(StorageDataError):
            await adapter.load(tenant_id=T, session_id="s")
        assert (T, "s") not in adapter.history_cache
        with pytest.raises(StorageDataError):  # a whole load refuses the damaged rows too
            await adapter.load(tenant_id=T, session_id="s")
