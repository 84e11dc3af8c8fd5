"""Runtime-facing adapters over the storage protocols (spec 04 §3.13.1-3.13.2, §8.1.8).

The adapters never own the store they wrap: ``aclose()`` is a no-op and the host closes the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

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
)
from actoviq.runtime.stores.errors import SessionRevisionConflictError, StorageDataError
from actoviq.runtime.stores.protocols import SessionStore
from actoviq.runtime.stores.records import (
    NewSessionItem,
    RuntimeSessionLoad,
    SessionRecord,
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
    """

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    @property
    def store(self) -> SessionStore:
        """The wrapped session store (owned by the host)."""
        return self._store

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
        await self._ensure(tenant_id, session_id)
        loaded = await self._store.load(tenant_id=tenant_id, session_id=session_id)
        items: list[CanonicalItem] = []
        if loaded.snapshot is not None:
            items.extend(self._snapshot_items(loaded.snapshot.state))
        for entry in loaded.items:
            items.extend(self.transcript_items(entry))
        return RuntimeSessionLoad(items=tuple(items), revision=str(loaded.session.revision))

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
        if expected == 0:
            await self._ensure(tenant_id, session_id)
        record = await self._store.append(
            tenant_id=tenant_id,
            session_id=session_id,
            expected_revision=expected,
            items=entries,
            updated_at=stamp,
        )
        return str(record.revision)

    async def compact(self, *, tenant_id: str, session_id: str) -> str:
        """Snapshot the transcript so later loads read only the tail; returns the new revision."""
        record = await self._ensure(tenant_id, session_id)
        loaded = await self.load(tenant_id=tenant_id, session_id=session_id)
        snapshot = await self._store.compact(
            tenant_id=tenant_id,
            session_id=session_id,
            expected_revision=record.revision,
            through_sequence=record.last_sequence,
            state={"items": [item_to_json(item) for item in loaded.items]},
        )
        return str(snapshot.revision)

    async def aclose(self) -> None:
        """No-op: the store belongs to the host."""
