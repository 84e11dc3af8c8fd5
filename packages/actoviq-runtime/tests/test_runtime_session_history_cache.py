"""The adapter's decoded-history cache: correct under other writers, invalidated, bounded."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from actoviq.core import CanonicalItem, JsonObject, TextItem, ToolCallItem, ToolResultItem
from actoviq.runtime import InMemorySessionStore, StoreRuntimeSessionAdapter
from actoviq.runtime.stores import (
    NewSessionItem,
    SessionChanges,
    SessionChangeStore,
    SessionHistoryCache,
    SessionLoad,
    SessionRecord,
    SessionRevisionConflictError,
    SessionSnapshot,
    StorageDataError,
)
from actoviq.runtime.stores.history_cache import CachedTranscript

T = "default"


class SpyStore(InMemorySessionStore):
    """The in-memory store, counting full loads and the entries each ``load_changes`` read."""

    def __init__(self) -> None:
        super().__init__()
        self.full_loads = 0
        self.changes_read: list[tuple[int, int]] = []  # (after_sequence, entries returned)

    async def load(
        self,
        *,
        tenant_id: str,
        session_id: str,
        after_sequence: int | None = None,
        use_snapshot: bool = True,
        limit: int | None = None,
    ) -> SessionLoad:
        self.full_loads += 1
        return await super().load(
            tenant_id=tenant_id,
            session_id=session_id,
            after_sequence=after_sequence,
            use_snapshot=use_snapshot,
            limit=limit,
        )

    async def load_changes(
        self, *, tenant_id: str, session_id: str, after_sequence: int
    ) -> SessionChanges:
        changes = await super().load_changes(
            tenant_id=tenant_id, session_id=session_id, after_sequence=after_sequence
        )
        self.changes_read.append((after_sequence, len(changes.items)))
        return changes


class PlainStore:
    """A session store without ``load_changes`` (delegates the base protocol only)."""

    def __init__(self, inner: InMemorySessionStore) -> None:
        self.inner = inner
        self.full_loads = 0

    async def create(
        self,
        *,
        tenant_id: str,
        session_id: str,
        metadata: JsonObject | None = None,
        created_at: str | None = None,
    ) -> SessionRecord:
        return await self.inner.create(tenant_id=tenant_id, session_id=session_id)

    async def get(self, *, tenant_id: str, session_id: str) -> SessionRecord | None:
        return await self.inner.get(tenant_id=tenant_id, session_id=session_id)

    async def append(
        self,
        *,
        tenant_id: str,
        session_id: str,
        expected_revision: int,
        items: Sequence[NewSessionItem],
        updated_at: str | None = None,
    ) -> SessionRecord:
        return await self.inner.append(
            tenant_id=tenant_id,
            session_id=session_id,
            expected_revision=expected_revision,
            items=items,
            updated_at=updated_at,
        )

    async def load(
        self,
        *,
        tenant_id: str,
        session_id: str,
        after_sequence: int | None = None,
        use_snapshot: bool = True,
        limit: int | None = None,
    ) -> SessionLoad:
        self.full_loads += 1
        return await self.inner.load(
            tenant_id=tenant_id,
            session_id=session_id,
            after_sequence=after_sequence,
            use_snapshot=use_snapshot,
            limit=limit,
        )

    async def compact(
        self,
        *,
        tenant_id: str,
        session_id: str,
        expected_revision: int,
        through_sequence: int,
        state: JsonObject,
        created_at: str | None = None,
    ) -> SessionSnapshot:
        return await self.inner.compact(
            tenant_id=tenant_id,
            session_id=session_id,
            expected_revision=expected_revision,
            through_sequence=through_sequence,
            state=state,
        )

    async def list_sessions(
        self, *, tenant_id: str, limit: int | None = None
    ) -> list[SessionRecord]:
        return await self.inner.list_sessions(tenant_id=tenant_id, limit=limit)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _turn(n: int) -> list[CanonicalItem]:
    return [
        TextItem(role="user", text=f"question {n}"),
        ToolCallItem(id=f"c{n}", name="lookup", input={"n": n, "deep": {"list": [1, "é"]}}),
        ToolResultItem(call_id=f"c{n}", status="success", output={"rows": [n, None, 1.5]}),
        TextItem(role="assistant", text=f"answer {n} ✓", metadata={"k": [n]}),
    ]


async def _append(adapter: StoreRuntimeSessionAdapter, session: str, n: int) -> str:
    loaded = await adapter.load(tenant_id=T, session_id=session)
    return await adapter.append(
        tenant_id=T, session_id=session, items=_turn(n), expected_revision=loaded.revision
    )


async def _fresh(store: InMemorySessionStore, session: str = "s") -> tuple[CanonicalItem, ...]:
    """The transcript as an adapter without any cache reads it."""
    adapter = StoreRuntimeSessionAdapter(store, history_cache_items=0)
    return (await adapter.load(tenant_id=T, session_id=session)).items


def test_the_in_memory_store_reports_changes() -> None:
    assert isinstance(InMemorySessionStore(), SessionChangeStore)


async def test_a_newer_revision_by_another_writer_loads_only_the_missing_turns() -> None:
    store = SpyStore()
    ours = StoreRuntimeSessionAdapter(store)
    theirs = StoreRuntimeSessionAdapter(store)
    for n in range(3):
        await _append(ours, "s", n)
    before = await ours.load(tenant_id=T, session_id="s")
    assert len(before.items) == 12
    await _append(theirs, "s", 3)  # another writer (its own adapter and cache)
    await _append(theirs, "s", 4)
    full_loads = store.full_loads
    store.changes_read.clear()
    after = await ours.load(tenant_id=T, session_id="s")
    assert store.full_loads == full_loads  # no full reload
    assert store.changes_read == [(12, 8)]  # exactly the two missing turns were read
    assert after.items == await _fresh(store)
    assert after.revision == str((await store.get(tenant_id=T, session_id="s")).revision)  # type: ignore[union-attr]
    # the turns already held were not decoded again: the very same objects come back
    assert all(new is old for new, old in zip(after.items, before.items, strict=False))
    assert after.items[12:] == (*_turn(3), *_turn(4))


async def test_an_unchanged_session_is_served_from_the_cache_after_one_read() -> None:
    store = SpyStore()
    adapter = StoreRuntimeSessionAdapter(store)
    await _append(adapter, "s", 0)
    first = await adapter.load(tenant_id=T, session_id="s")
    full_loads = store.full_loads
    store.changes_read.clear()
    second = await adapter.load(tenant_id=T, session_id="s")
    assert store.full_loads == full_loads
    assert store.changes_read == [(4, 0)]  # the store is still read on every load
    assert second.items is first.items and second.revision == first.revision


async def test_a_revision_conflict_invalidates_the_entry() -> None:
    store = SpyStore()
    ours = StoreRuntimeSessionAdapter(store)
    theirs = StoreRuntimeSessionAdapter(store)
    await _append(ours, "s", 0)
    stale = await ours.load(tenant_id=T, session_id="s")
    assert ("default", "s") in ours.history_cache
    await _append(theirs, "s", 1)
    with pytest.raises(SessionRevisionConflictError):
        await ours.append(
            tenant_id=T, session_id="s", items=_turn(9), expected_revision=stale.revision
        )
    assert ("default", "s") not in ours.history_cache
    full_loads = store.full_loads
    again = await ours.load(tenant_id=T, session_id="s")
    assert store.full_loads == full_loads + 1  # read whole again, not patched
    assert again.items == (*_turn(0), *_turn(1))
    assert again.items == await _fresh(store)


async def test_a_compaction_by_another_writer_reloads_and_our_own_keeps_the_entry() -> None:
    store = SpyStore()
    ours = StoreRuntimeSessionAdapter(store)
    theirs = StoreRuntimeSessionAdapter(store)
    await _append(ours, "s", 0)
    await ours.load(tenant_id=T, session_id="s")
    await _append(theirs, "s", 1)
    await theirs.compact(tenant_id=T, session_id="s")
    full_loads = store.full_loads
    loaded = await ours.load(tenant_id=T, session_id="s")
    assert store.full_loads == full_loads + 1
    assert loaded.items == (*_turn(0), *_turn(1)) == await _fresh(store)
    # our own compaction changes the revision, not the transcript: no reload afterwards
    await _append(ours, "s", 2)
    grown = await ours.load(tenant_id=T, session_id="s")
    revision = await ours.compact(tenant_id=T, session_id="s")
    full_loads = store.full_loads
    after = await ours.load(tenant_id=T, session_id="s")
    assert store.full_loads == full_loads
    assert after.revision == revision and after.items is grown.items
    assert after.items == (*_turn(0), *_turn(1), *_turn(2)) == await _fresh(store)


async def test_a_store_without_changes_reuses_the_entry_only_at_the_same_revision() -> None:
    inner = InMemorySessionStore()
    store = PlainStore(inner)
    assert not isinstance(store, SessionChangeStore)
    ours = StoreRuntimeSessionAdapter(store)
    await _append(ours, "s", 0)
    first = await ours.load(tenant_id=T, session_id="s")
    loads = store.full_loads
    assert (await ours.load(tenant_id=T, session_id="s")).items is first.items
    assert store.full_loads == loads
    await _append(StoreRuntimeSessionAdapter(inner), "s", 1)
    moved = await ours.load(tenant_id=T, session_id="s")
    assert store.full_loads == loads + 1
    assert moved.items == (*_turn(0), *_turn(1)) == await _fresh(inner)


async def test_memory_is_bounded_by_items_least_recently_used_first() -> None:
    store = InMemorySessionStore()
    writer = StoreRuntimeSessionAdapter(store, history_cache_items=0)
    for session in ("a", "b", "c", "big"):
        await _append(writer, session, 0)
    await _append(writer, "big", 1)
    await _append(writer, "big", 2)  # 12 items: more than the bound alone
    adapter = StoreRuntimeSessionAdapter(store, history_cache_items=10)
    cache = adapter.history_cache
    assert cache.max_items == 10
    await adapter.load(tenant_id=T, session_id="a")
    await adapter.load(tenant_id=T, session_id="b")
    assert cache.items == 8 and len(cache) == 2
    await adapter.load(tenant_id=T, session_id="a")  # a is now the most recently used
    await adapter.load(tenant_id=T, session_id="c")  # 12 > 10: b goes, not a
    assert (T, "a") in cache and (T, "c") in cache and (T, "b") not in cache
    assert cache.items == 8
    big = await adapter.load(tenant_id=T, session_id="big")
    assert len(big.items) == 12 and (T, "big") not in cache  # alone it exceeds the bound
    assert cache.items <= cache.max_items
    # a session grown past the bound by appends leaves the cache too
    await _append(adapter, "a", 1)
    await _append(adapter, "a", 2)
    assert (await adapter.load(tenant_id=T, session_id="a")).items == await _fresh(store, "a")
    assert (T, "a") not in cache and cache.items <= 10


async def test_cache_off_and_invalid_bounds() -> None:
    store = InMemorySessionStore()
    adapter = StoreRuntimeSessionAdapter(store, history_cache_items=0)
    await _append(adapter, "s", 0)
    assert len(adapter.history_cache) == 0 and adapter.history_cache.items == 0
    for bad in (-1, 1.5, "10", True):
        with pytest.raises(StorageDataError):
            StoreRuntimeSessionAdapter(store, history_cache_items=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_items"):
        SessionHistoryCache(-1)


def test_a_stale_put_never_replaces_a_newer_entry() -> None:
    cache = SessionHistoryCache(100)
    newer = CachedTranscript(revision=5, last_sequence=4, created_at="t", items=tuple(_turn(0)))
    older = CachedTranscript(revision=3, last_sequence=2, created_at="t", items=())
    cache.put((T, "s"), newer)
    cache.put((T, "s"), older)
    assert cache.get((T, "s")) is newer
    recreated = CachedTranscript(revision=1, last_sequence=0, created_at="t2", items=())
    cache.put((T, "s"), recreated)  # another session under the same key
    assert cache.get((T, "s")) is recreated
    cache.discard((T, "s"))
    cache.discard((T, "missing"))
    assert len(cache) == 0 and cache.items == 0


async def test_a_corrupt_appended_entry_fails_closed_and_drops_the_entry() -> None:
    store = InMemorySessionStore()
    adapter = StoreRuntimeSessionAdapter(store)
    await _append(adapter, "s", 0)
    record = await store.get(tenant_id=T, session_id="s")
    assert record is not None
    await adapter.load(tenant_id=T, session_id="s")
    # another writer stores a transcript entry that is not a canonical item
    await store.append(
        tenant_id=T,
        session_id="s",
        expected_revision=record.revision,
        items=[NewSessionItem(item_id="x", kind="text", payload={"type": "text", "role": "bot"})],
    )
    with pytest.raises(StorageDataError):
        await adapter.load(tenant_id=T, session_id="s")
    assert (T, "s") not in adapter.history_cache
    with pytest.raises(StorageDataError):
        await adapter.load(tenant_id=T, session_id="s")  # still refused on a full load
