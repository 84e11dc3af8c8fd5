"""The in-memory :class:`~actoviq.runtime.stores.protocols.SessionStore` (tests, scripts).

Each operation runs without awaiting, so it is atomic on the event loop: the same CAS semantics as
the SQL backends, with no persistence. Everything returned is a copy.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from actoviq.core import JsonObject, iso_now
from actoviq.runtime.stores.errors import (
    SessionRevisionConflictError,
    StorageDataError,
    StorageNotFoundError,
)
from actoviq.runtime.stores.records import (
    NewSessionItem,
    SessionChanges,
    SessionLoad,
    SessionRecord,
    SessionSnapshot,
    StoredSessionItem,
)
from actoviq.runtime.stores.rules import (
    prepare_append,
    session_key,
    session_resource,
    validate_compact,
    validate_load,
    validate_session_create,
)
from actoviq.runtime.stores.validation import (
    require_json_object,
    require_key,
    require_limit,
    require_revision,
)

__all__ = ["InMemorySessionStore"]


def _copy_items(items: Sequence[StoredSessionItem]) -> tuple[StoredSessionItem, ...]:
    return tuple(
        item._replace(payload=require_json_object(item.payload, "payload")) for item in items
    )


@attrs.define
class _Session:
    record: SessionRecord
    items: list[StoredSessionItem] = attrs.field(factory=lambda: list[StoredSessionItem]())
    by_id: dict[str, StoredSessionItem] = attrs.field(
        factory=lambda: dict[str, StoredSessionItem]()
    )
    snapshots: list[SessionSnapshot] = attrs.field(factory=lambda: list[SessionSnapshot]())


class InMemorySessionStore:
    """A :class:`~actoviq.runtime.stores.protocols.SessionStore` held in a dict.

    It is a :class:`~actoviq.runtime.stores.protocols.SessionChangeStore` too.
    """

    def __init__(self) -> None:
        self._sessions: dict[tuple[str, str], _Session] = {}

    async def create(
        self,
        *,
        tenant_id: str,
        session_id: str,
        metadata: JsonObject | None = None,
        created_at: str | None = None,
    ) -> SessionRecord:
        """See :meth:`SessionStore.create`."""
        record = validate_session_create(tenant_id, session_id, metadata, created_at)
        key = (tenant_id, session_id)
        existing = self._sessions.get(key)
        if existing is not None:
            raise SessionRevisionConflictError(
                session_resource(*key),
                expected_revision=None,
                actual_revision=existing.record.revision,
            )
        self._sessions[key] = _Session(record=record)
        return self._copy_record(record)

    async def get(self, *, tenant_id: str, session_id: str) -> SessionRecord | None:
        """See :meth:`SessionStore.get`."""
        key = session_key(tenant_id, session_id)
        session = self._sessions.get(key)
        return None if session is None else self._copy_record(session.record)

    @staticmethod
    def _copy_record(record: SessionRecord) -> SessionRecord:
        return attrs.evolve(record, metadata=require_json_object(record.metadata, "metadata"))

    async def append(
        self,
        *,
        tenant_id: str,
        session_id: str,
        expected_revision: int,
        items: Sequence[NewSessionItem],
        updated_at: str | None = None,
    ) -> SessionRecord:
        """See :meth:`SessionStore.append`."""
        key = session_key(tenant_id, session_id)
        expected = require_revision(expected_revision, "expectedRevision")
        stamp = updated_at or iso_now()
        prepared = prepare_append(items, stamp)
        session = self._sessions.get(key)
        if session is None:
            raise StorageNotFoundError(session_resource(*key))
        record = session.record
        known = [session.by_id.get(item.item_id) for item in prepared]
        if any(found is not None for found in known):
            if all(
                found is not None and found.kind == new.kind and found.payload == new.payload
                for found, new in zip(known, prepared, strict=True)
            ):
                return self._copy_record(record)
            if record.revision == expected:
                raise StorageDataError(
                    "Session items already exist with different content in "
                    f"{session_resource(*key)}"
                )
        if record.revision != expected:
            raise SessionRevisionConflictError(
                session_resource(*key), expected_revision=expected, actual_revision=record.revision
            )
        sequence = record.last_sequence
        for new in prepared:
            sequence += 1
            stored = StoredSessionItem(
                sequence=sequence,
                item_id=new.item_id,
                kind=new.kind,
                payload=new.payload,
                created_at=new.created_at or stamp,
            )
            session.items.append(stored)
            session.by_id[new.item_id] = stored
        session.record = attrs.evolve(
            record, revision=record.revision + 1, updated_at=stamp, last_sequence=sequence
        )
        return self._copy_record(session.record)

    async def load(
        self,
        *,
        tenant_id: str,
        session_id: str,
        after_sequence: int | None = None,
        use_snapshot: bool = True,
        limit: int | None = None,
    ) -> SessionLoad:
        """See :meth:`SessionStore.load`."""
        cap = validate_load(tenant_id, session_id, after_sequence, limit)
        key = (tenant_id, session_id)
        session = self._sessions.get(key)
        if session is None:
            raise StorageNotFoundError(session_resource(*key))
        snapshot = (
            session.snapshots[-1]
            if after_sequence is None and use_snapshot and session.snapshots
            else None
        )
        start = snapshot.through_sequence if snapshot is not None else after_sequence or 0
        # Sequences are 1..n without gaps, so the tail is a slice.
        tail = session.items[start:]
        if cap is not None:
            tail = tail[:cap]
        return SessionLoad(
            session=self._copy_record(session.record),
            snapshot=None
            if snapshot is None
            else attrs.evolve(snapshot, state=require_json_object(snapshot.state, "state")),
            items=_copy_items(tail),
        )

    async def load_changes(
        self, *, tenant_id: str, session_id: str, after_sequence: int
    ) -> SessionChanges:
        """See :meth:`SessionChangeStore.load_changes`."""
        validate_load(tenant_id, session_id, after_sequence, None)
        key = (tenant_id, session_id)
        session = self._sessions.get(key)
        if session is None:
            raise StorageNotFoundError(session_resource(*key))
        return SessionChanges(
            session=self._copy_record(session.record),
            items=_copy_items(session.items[after_sequence:]),
            snapshot_revision=session.snapshots[-1].revision if session.snapshots else None,
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
        """See :meth:`SessionStore.compact`."""
        expected, through, body, stamp = validate_compact(
            tenant_id, session_id, expected_revision, through_sequence, state, created_at
        )
        key = (tenant_id, session_id)
        session = self._sessions.get(key)
        if session is None:
            raise StorageNotFoundError(session_resource(*key))
        record = session.record
        if record.revision != expected:
            raise SessionRevisionConflictError(
                session_resource(*key), expected_revision=expected, actual_revision=record.revision
            )
        if through > record.last_sequence:
            raise StorageDataError(
                f"Snapshot sequence {through} exceeds session tail {record.last_sequence}"
            )
        if session.snapshots and session.snapshots[-1].through_sequence >= through:
            raise StorageDataError("A compacted snapshot must advance throughSequence")
        snapshot = SessionSnapshot(
            through_sequence=through, revision=record.revision + 1, state=body, created_at=stamp
        )
        session.snapshots.append(snapshot)
        session.record = attrs.evolve(record, revision=record.revision + 1, updated_at=stamp)
        return attrs.evolve(snapshot, state=require_json_object(body, "state"))

    async def list_sessions(
        self, *, tenant_id: str, limit: int | None = None
    ) -> list[SessionRecord]:
        """See :meth:`SessionStore.list_sessions`."""
        tenant = require_key(tenant_id, "tenantId")
        cap = require_limit(limit)
        records = [s.record for (t, _), s in self._sessions.items() if t == tenant]
        records.sort(key=lambda r: r.session_id)
        records.sort(key=lambda r: r.updated_at, reverse=True)
        return [self._copy_record(r) for r in records[:cap]]

    async def aclose(self) -> None:
        """Nothing to release."""
