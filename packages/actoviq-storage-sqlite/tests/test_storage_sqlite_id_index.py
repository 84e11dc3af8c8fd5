"""Item-id uniqueness without a unique index: the append-time id index and its refreshes."""

from __future__ import annotations

from pathlib import Path

import pytest

from actoviq.runtime import NewSessionItem, StorageDataError
from actoviq.storage.sqlite import SqliteStorage
from actoviq.storage.sqlite._id_index import IdLookup, SessionIdIndex

T = "default"


def _item(item_id: str, text: str = "same") -> NewSessionItem:
    return NewSessionItem(item_id=item_id, kind="text", payload={"type": "text", "text": text})


async def test_a_writer_with_a_stale_index_still_sees_ids_written_elsewhere(
    tmp_path: Path,
) -> None:
    db = tmp_path / "ids.db"
    async with await SqliteStorage.open(db) as one, await SqliteStorage.open(db) as two:
        await one.sessions.create(tenant_id=T, session_id="s")
        await one.sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=[_item("a")]
        )
        # ``two`` has never seen the session: it reads every turn's ids.
        with pytest.raises(StorageDataError, match="already exist with different content"):
            await two.sessions.append(
                tenant_id=T, session_id="s", expected_revision=1, items=[_item("a", "other")]
            )
        await two.sessions.append(
            tenant_id=T, session_id="s", expected_revision=1, items=[_item("b")]
        )
        # ``one`` knows the ids through sequence 1 only: it reads the newer turn and sees "b".
        with pytest.raises(StorageDataError, match="already exist with different content"):
            await one.sessions.append(
                tenant_id=T,
                session_id="s",
                expected_revision=2,
                items=[_item("c"), _item("b", "other")],
            )
        # Nothing of the refused append was written; an identical retry is a no-op.
        same = await one.sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=[_item("b")]
        )
        assert (same.revision, same.last_sequence) == (2, 2)
        record = await one.sessions.append(
            tenant_id=T, session_id="s", expected_revision=2, items=[_item("c")]
        )
        assert (record.revision, record.last_sequence) == (3, 3)
        loaded = await two.sessions.load(tenant_id=T, session_id="s")
        assert [i.item_id for i in loaded.items] == ["a", "b", "c"]


async def test_a_partial_replay_at_the_current_revision_is_refused(tmp_path: Path) -> None:
    async with await SqliteStorage.open(tmp_path / "p.db") as storage:
        await storage.sessions.create(tenant_id=T, session_id="s")
        await storage.sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=[_item("a")]
        )
        # "a" exists with the same content but "z" is new: not a replay, a duplicate id.
        with pytest.raises(StorageDataError, match="already exist"):
            await storage.sessions.append(
                tenant_id=T, session_id="s", expected_revision=1, items=[_item("a"), _item("z")]
            )
        record = await storage.sessions.get(tenant_id=T, session_id="s")
        assert record is not None and (record.revision, record.last_sequence) == (1, 1)


def test_the_index_extends_in_place_and_evicts_the_least_recently_used() -> None:
    index = SessionIdIndex(max_ids=3)
    key_a, key_b = ("t", "a"), ("t", "b")
    base, after = index.start(key_a, "inc", 0)
    assert (base, after) == (None, 0)
    index.commit(key_a, IdLookup("inc", 0, None, 0, frozenset([])), ["x", "y"], 2)
    base, after = index.start(key_a, "inc", 2)
    assert base is not None and after == 2
    lookup = IdLookup("inc", 2, base, after, frozenset([]))
    assert lookup.clashes(["y"]) and not lookup.clashes(["z"])
    # Another incarnation, or a state older than the entry: read everything again.
    assert index.start(key_a, "other", 2) == (None, 0)
    assert index.start(key_a, "inc", 1) == (None, 0)
    index.commit(key_b, IdLookup("inc", 0, None, 0, frozenset(["p"])), ["q"], 2)
    assert index.size == 2  # "a" (2 ids) was evicted to stay within 3
    assert index.start(key_a, "inc", 2) == (None, 0)
    # A commit whose base moved on meanwhile drops the entry instead of guessing.
    stale = IdLookup("inc", 2, None, 0, frozenset([]))
    base_b, after_b = index.start(key_b, "inc", 2)
    moved = IdLookup("inc", 2, base_b, after_b - 1, frozenset([]))
    index.commit(key_b, moved, ["r"], 3)
    assert index.start(key_b, "inc", 3) == (None, 0)
    assert not stale.clashes(["anything"])


async def test_a_session_created_again_is_a_new_incarnation(tmp_path: Path) -> None:
    from sqlalchemy import text

    from actoviq.storage.sqlite._tables import (
        resume_append_only_triggers,
        suspend_append_only_triggers,
    )

    db = tmp_path / "inc.db"
    async with await SqliteStorage.open(db) as one, await SqliteStorage.open(db) as two:
        await one.sessions.create(tenant_id=T, session_id="s")
        await one.sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=[_item("a")]
        )
        # ``two`` deletes the session the way the migrator's rollback does, creates it again and
        # appends "b": the state is again at last_sequence 1, under another incarnation, and
        # ``one``'s index still holds "a" for last_sequence 1.
        async with two.database.write() as conn:
            for statement in suspend_append_only_triggers("sqlite"):
                await conn.execute(text(statement))
            await conn.execute(text("DELETE FROM storage_v2_session_turns"))
            await conn.execute(text("DELETE FROM storage_v2_sessions"))
            for statement in resume_append_only_triggers("sqlite"):
                await conn.execute(text(statement))
        await two.sessions.create(tenant_id=T, session_id="s")
        await two.sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=[_item("b")]
        )
        # "a" is not in the new session: the stale entry must not refuse it.
        record = await one.sessions.append(
            tenant_id=T, session_id="s", expected_revision=1, items=[_item("a", "new")]
        )
        assert (record.revision, record.last_sequence) == (2, 2)
        loaded = await one.sessions.load(tenant_id=T, session_id="s")
        assert [(i.item_id, i.payload["text"]) for i in loaded.items] == [
            ("b", "same"),
            ("a", "new"),
        ]


async def test_a_big_append_runs_on_a_worker_thread(tmp_path: Path) -> None:
    async with await SqliteStorage.open(tmp_path / "big.db") as storage:
        await storage.sessions.create(tenant_id=T, session_id="s")
        before = storage.database.stats
        big = [_item(f"i{n}", "x" * 1000) for n in range(1200)]  # > 1 MiB of payload JSON
        await storage.sessions.append(tenant_id=T, session_id="s", expected_revision=0, items=big)
        await storage.sessions.append(
            tenant_id=T, session_id="s", expected_revision=1, items=[_item("small")]
        )
        after = storage.database.stats
        assert after.thread_writes == before.thread_writes + 1
        assert after.inline_writes == before.inline_writes + 1
        loaded = await storage.sessions.load(tenant_id=T, session_id="s")
        assert len(loaded.items) == 1201 and loaded.items[-1].item_id == "small"
