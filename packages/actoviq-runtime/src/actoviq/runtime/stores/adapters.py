"""Runtime-facing adapters over the storage protocols (spec 04 §3.13.1-3.13.2, §8.1.8).

The adapters never own the store they wrap: ``aclose()`` is a no-op and the host closes the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from typing import cast

import attrs

from actoviq.core import (
    ITEM_TYPES,
    CanonicalItem,
    ItemValidationError,
    JsonObject,
    JsonValue,
    PreservedItem,
    UnknownItemTypeError,
    iso_now,
    item_from_json,
    item_to_json,
    items_from_json,
)
from actoviq.runtime.stores.errors import (
    SessionRevisionConflictError,
    StorageDataError,
    StorageNotFoundError,
)
from actoviq.runtime.stores.history_cache import (
    DEFAULT_HISTORY_CACHE_ITEMS,
    CachedTranscript,
    SessionHistoryCache,
)
from actoviq.runtime.stores.protocols import SessionChangeStore, SessionStore
from actoviq.runtime.stores.records import (
    NewSessionItem,
    RuntimeSessionLoad,
    SessionRecord,
    StoredItems,
    StoredSessionItem,
)
from actoviq.runtime.stores.run_checkpoints import DEFAULT_TENANT_ID, StoreRunCheckpointAdapter
from actoviq.runtime.stores.validation import MAX_SAFE_INTEGER

__all__ = [
    "AUDIT_ONLY_KINDS",
    "DEFAULT_TENANT_ID",
    "StoreRunCheckpointAdapter",
    "StoreRuntimeSessionAdapter",
    "parse_session_revision",
]

AUDIT_ONLY_KINDS: frozenset[str] = frozenset({"legacy_run", "run"})
"""Journal kinds kept for audit and never shown to the model."""


def parse_session_revision(text: object) -> int:
    """Parse a runtime revision string (a decimal safe integer ``>= 0``).

    Raises:
        StorageDataError: ``Invalid session revision "x".``
    """
    if type(text) is not str or not text.isascii() or not text.isdigit():
        raise StorageDataError(f'Invalid session revision "{text}".')
    value = int(text)
    if value > MAX_SAFE_INTEGER:
        raise StorageDataError(f'Invalid session revision "{text}".')
    return value


_CANONICAL: tuple[type, ...] = (*ITEM_TYPES.values(), PreservedItem)
# Payload types decoded in bulk: raw items may come from the legacy provider (left out).
_TRANSCRIPT_TYPES: frozenset[object] = frozenset(ITEM_TYPES) - {"raw"}
_dict_get = cast("Callable[[object, str], object]", dict.get)  # pyright: ignore[reportUnknownMemberType]


def _canonical_items(items: object) -> Sequence[CanonicalItem]:
    """``items`` if it is a sequence of canonical items (never a dict or tuple standing for one).

    Raises:
        StorageDataError: ``items`` is not a list/tuple of canonical items (naming the first
            wrong entry).
    """
    if isinstance(items, str | bytes | bytearray | Mapping) or not isinstance(items, Sequence):
        raise StorageDataError(
            f"items must be a list of canonical items, got {type(cast(object, items)).__name__}",
            details={"field": "items"},
        )
    sequence = cast(Sequence[object], items)
    for index, item in enumerate(sequence):
        if not isinstance(item, _CANONICAL):
            raise StorageDataError(
                f"items[{index}] must be a canonical item (TextItem, ToolCallItem, ...), "
                f"got {type(item).__name__}",
                details={"field": f"items[{index}]"},
            )
    return cast(Sequence[CanonicalItem], sequence)


class StoreRuntimeSessionAdapter:
    """A :class:`RuntimeSessionStore` over any :class:`SessionStore`.

    ``load`` returns the newest snapshot's items (``state["items"]``) plus the tail, so a compacted
    session never reads its full history; journal entries of kind ``legacy_run``/``run`` and
    ``raw`` items from the ``legacy`` provider stay in the journal but not in the transcript.

    Decoded transcripts are kept between loads (:class:`SessionHistoryCache`, bounded by
    ``history_cache_items``, least recently used sessions dropped first), so a session's turn
    decodes only what was appended since its previous load. Every load still reads the store:
    over a :class:`SessionChangeStore` (the in-memory and SQL stores) one read returns the session
    row, the newest snapshot's revision and the entries after the cached sequence, so a turn
    appended by another writer or process is read and decoded alone; a newer snapshot (another
    writer compacted), a session created again or a shorter journal reloads the whole session.
    Over any other store the cached transcript is used only while the session's revision is the
    cached one. A failed append (a revision conflict above all) drops the session's entry.

    Items handed out are shared between loads: canonical items are frozen values, and nested JSON
    (tool input, metadata) must not be mutated in place.

    Args:
        store: the session store (owned by the host).
        history_cache_items: items kept decoded over all sessions (``0`` turns the cache off).
    """

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # A subclass that maps journal entries itself gets every entry through its hook unless it
        # declares that canonical payloads keep the base mapping (``_canonical_payloads_as_base``).
        if "transcript_items" in cls.__dict__ and "_canonical_payloads_as_base" not in cls.__dict__:
            cls._canonical_payloads_as_base = False

    _canonical_payloads_as_base: bool = True

    def __init__(
        self, store: SessionStore, *, history_cache_items: int = DEFAULT_HISTORY_CACHE_ITEMS
    ) -> None:
        self._store = store
        self._changes = store if isinstance(store, SessionChangeStore) else None
        try:
            self._cache = SessionHistoryCache(history_cache_items)
        except ValueError:
            raise StorageDataError(
                "history_cache_items must be an int >= 0", details={"field": "historyCacheItems"}
            ) from None

    @property
    def store(self) -> SessionStore:
        """The wrapped session store (owned by the host)."""
        return self._store

    @property
    def history_cache(self) -> SessionHistoryCache:
        """The decoded transcripts kept between loads."""
        return self._cache

    async def _ensure(self, tenant_id: str, session_id: str) -> SessionRecord:
        record = await self._store.get(tenant_id=tenant_id, session_id=session_id)
        if record is not None:
            return record
        try:
            return await self._store.create(tenant_id=tenant_id, session_id=session_id)
        except SessionRevisionConflictError:
            # A concurrent creator won the race; its session is as good as ours.
            again = await self._store.get(tenant_id=tenant_id, session_id=session_id)
            if again is None:
                raise
            return again

    async def load(self, *, tenant_id: str, session_id: str) -> RuntimeSessionLoad:
        """See :meth:`RuntimeSessionStore.load`."""
        current = await self._current(tenant_id, session_id)
        return RuntimeSessionLoad(items=current.items, revision=str(current.revision))

    async def _current(self, tenant_id: str, session_id: str) -> CachedTranscript:
        """The transcript as stored now: the cached one brought up to date, or a full load."""
        key = (tenant_id, session_id)
        cached = self._cache.get(key)
        if cached is not None:
            try:
                current = await self._refresh(key, cached)
            except StorageNotFoundError:
                current = None  # gone (a migration rolled back): load creates it again
            except BaseException:
                self._cache.discard(key)
                raise
            if current is not None:
                return current
            self._cache.discard(key)
        try:
            loaded = await self._store.load(tenant_id=tenant_id, session_id=session_id)
        except StorageNotFoundError:
            await self._ensure(tenant_id, session_id)
            loaded = await self._store.load(tenant_id=tenant_id, session_id=session_id)
        items: list[CanonicalItem] = []
        if loaded.snapshot is not None:
            items.extend(self._snapshot_items(loaded.snapshot.state))
        items.extend(self._transcript(loaded.items))
        record = loaded.session
        current = CachedTranscript(
            revision=record.revision,
            last_sequence=record.last_sequence,
            created_at=record.created_at,
            items=tuple(items),
        )
        self._cache.put(key, current)
        return current

    async def _refresh(
        self, key: tuple[str, str], cached: CachedTranscript
    ) -> CachedTranscript | None:
        """``cached`` brought up to the stored state, or None when only a full load can tell."""
        tenant_id, session_id = key
        changes_store = self._changes
        if changes_store is None:
            record = await self._store.get(tenant_id=tenant_id, session_id=session_id)
            same = record is not None and (
                record.revision,
                record.last_sequence,
                record.created_at,
            ) == (cached.revision, cached.last_sequence, cached.created_at)
            return cached if same else None
        changes = await changes_store.load_changes(
            tenant_id=tenant_id, session_id=session_id, after_sequence=cached.last_sequence
        )
        record = changes.session
        compacted = changes.snapshot_revision is not None and (
            changes.snapshot_revision > cached.revision
        )
        if (
            compacted
            or record.created_at != cached.created_at
            or record.revision < cached.revision
            or record.last_sequence != cached.last_sequence + len(changes.items)
        ):
            return None
        if record.revision == cached.revision:
            return cached if not changes.items else None
        if not changes.items:
            return None  # the revision moved with nothing appended: let a full load tell
        current = CachedTranscript(
            revision=record.revision,
            last_sequence=record.last_sequence,
            created_at=record.created_at,
            items=cached.items + tuple(self._transcript(changes.items)),
        )
        self._cache.put(key, current)
        return current

    def _snapshot_items(self, state: JsonObject) -> list[CanonicalItem]:
        raw = state.get("items")
        if type(raw) is not list:
            raise StorageDataError("session snapshot state must hold an 'items' list")
        return [self._decode(value, "snapshot item") for value in cast(list[JsonValue], raw)]

    @staticmethod
    def _decode(value: JsonValue, label: str) -> CanonicalItem:
        try:
            return item_from_json(value)
        except (ItemValidationError, UnknownItemTypeError) as error:
            raise StorageDataError(f"{label} is not a canonical item: {error}") from None

    def _transcript(self, entries: Sequence[StoredSessionItem]) -> list[CanonicalItem]:
        """Journal entries → transcript items, in order (the bulk form of ``transcript_items``).

        When every entry is a canonical payload of a transcript kind (the usual case), all are
        decoded in one ``items_from_json`` call, without a record per entry; otherwise, or to
        name the entry a decoding error is about, entry by entry through ``transcript_items``.
        """
        if type(self)._canonical_payloads_as_base:
            if isinstance(entries, StoredItems):
                kinds, payloads = entries.kinds, entries.payloads
            else:
                kinds = [entry.kind for entry in entries]
                payloads = [entry.payload for entry in entries]
            try:  # a payload that is not a dict, or an unhashable "type": entry by entry
                types = set(map(_dict_get, payloads, repeat("type")))
            except TypeError:
                types = None
            if (
                types is not None
                and types <= _TRANSCRIPT_TYPES
                and AUDIT_ONLY_KINDS.isdisjoint(kinds)
            ):
                try:
                    return items_from_json(payloads)
                except (ItemValidationError, UnknownItemTypeError):
                    pass  # the loop below names the entry
        return [item for entry in entries for item in self.transcript_items(entry)]

    def transcript_items(self, entry: StoredSessionItem) -> list[CanonicalItem]:
        """Map one journal entry to transcript items (subclasses add legacy conversions)."""
        if entry.kind in AUDIT_ONLY_KINDS:
            return []
        payload_type = entry.payload.get("type")
        if not isinstance(payload_type, str) or payload_type not in ITEM_TYPES:
            raise StorageDataError(
                f"Session item {entry.item_id!r} of kind {entry.kind!r} is not a canonical item."
            )
        if payload_type == "raw" and entry.payload.get("provider") == "legacy":
            return []
        return [self._decode(entry.payload, f"Session item {entry.item_id!r}")]

    async def append(
        self,
        *,
        tenant_id: str,
        session_id: str,
        items: Sequence[CanonicalItem],
        expected_revision: str,
    ) -> str:
        """See :meth:`RuntimeSessionStore.append`."""
        expected = parse_session_revision(expected_revision)
        items = _canonical_items(items)
        stamp = iso_now()
        # Ids derive from the expected revision and position (provider ids repeat across turns):
        # retrying the same append after a lost acknowledgement replays idempotently, while a
        # different append at the same revision is an ordinary revision conflict.
        entries = [
            NewSessionItem(
                item_id=f"turn-{expected}:{index}",
                kind=item.type,
                payload=item_to_json(item),
                created_at=stamp,
            )
            for index, item in enumerate(items)
        ]
        if not entries:
            return expected_revision
        try:
            if expected == 0:
                await self._ensure(tenant_id, session_id)
            record = await self._store.append(
                tenant_id=tenant_id,
                session_id=session_id,
                expected_revision=expected,
                items=entries,
                updated_at=stamp,
            )
        except BaseException:
            # A conflict (or any doubt about what is stored): the next load reads it whole.
            self._cache.discard((tenant_id, session_id))
            raise
        # The cached transcript stays at its revision: the next load reads these entries back
        # as stored (the store's own normal form) with the rest of what changed since.
        return str(record.revision)

    async def compact(self, *, tenant_id: str, session_id: str) -> str:
        """Snapshot the transcript so later loads read only the tail; returns the new revision."""
        current = await self._current(tenant_id, session_id)
        snapshot = await self._store.compact(
            tenant_id=tenant_id,
            session_id=session_id,
            expected_revision=current.revision,
            through_sequence=current.last_sequence,
            state={"items": [item_to_json(item) for item in current.items]},
        )
        # Compaction changes the revision, not the transcript.
        self._cache.put((tenant_id, session_id), attrs.evolve(current, revision=snapshot.revision))
        return str(snapshot.revision)

    async def aclose(self) -> None:
        """No-op: the store belongs to the host."""
