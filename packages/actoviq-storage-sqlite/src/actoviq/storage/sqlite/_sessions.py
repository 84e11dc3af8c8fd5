"""SQL session store: one writer transaction per append, snapshot + tail loads (spec 04 §3.4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, and_, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from actoviq.core import JsonObject, iso_now
from actoviq.runtime.stores import (
    NewSessionItem,
    SessionLoad,
    SessionRecord,
    SessionRevisionConflictError,
    SessionSnapshot,
    StorageDataError,
    StorageNotFoundError,
    StoredSessionItem,
)
from actoviq.runtime.stores._rules import prepare_append, session_resource
from actoviq.runtime.stores.validation import (
    decode_json_object,
    dump_json,
    require_json_object,
    require_key,
    require_limit,
    require_revision,
)
from actoviq.storage.sqlite._engine import Database
from actoviq.storage.sqlite._tables import session_items, session_snapshots, sessions


def _text(value: object, field: str) -> str:
    if type(value) is not str:
        raise StorageDataError(f"stored {field} must be text")
    return value


def _int(value: object, field: str) -> int:
    if type(value) is not int:
        raise StorageDataError(f"stored {field} must be an integer")
    return require_revision(value, field)


def record_from_row(row: Row[Any]) -> SessionRecord:
    """Decode and re-validate a session row (fail closed)."""
    return SessionRecord(
        tenant_id=_text(row.tenant_id, "tenant_id"),
        session_id=_text(row.session_id, "session_id"),
        revision=_int(row.revision, "revision"),
        metadata=decode_json_object(row.metadata_json, "metadata_json"),
        created_at=_text(row.created_at, "created_at"),
        updated_at=_text(row.updated_at, "updated_at"),
        last_sequence=_int(row.last_sequence, "last_sequence"),
    )


def item_from_row(row: Row[Any]) -> StoredSessionItem:
    """Decode and re-validate a journal row."""
    return StoredSessionItem(
        sequence=_int(row.sequence, "sequence"),
        item_id=_text(row.item_id, "item_id"),
        kind=_text(row.kind, "kind"),
        payload=decode_json_object(row.payload_json, "payload_json"),
        created_at=_text(row.created_at, "created_at"),
    )


def _key(tenant_id: str, session_id: str) -> Any:
    return and_(sessions.c.tenant_id == tenant_id, sessions.c.session_id == session_id)


class SqlSessionStore:
    """:class:`~actoviq.runtime.stores.SessionStore` on SQLAlchemy Core."""

    def __init__(self, database: Database) -> None:
        self._db = database

    async def _session_row(
        self, conn: AsyncConnection, tenant_id: str, session_id: str, *, lock: bool = False
    ) -> Row[Any] | None:
        query = select(sessions).where(_key(tenant_id, session_id))
        if lock:
            query = query.with_for_update()
        return (await conn.execute(query)).first()

    async def create(
        self,
        *,
        tenant_id: str,
        session_id: str,
        metadata: JsonObject | None = None,
        created_at: str | None = None,
    ) -> SessionRecord:
        """See :meth:`SessionStore.create`."""
        require_key(tenant_id, "tenantId")
        require_key(session_id, "sessionId")
        meta = require_json_object({} if metadata is None else metadata, "metadata")
        stamp = require_key(created_at or iso_now(), "createdAt")
        try:
            async with self._db.write() as conn:
                existing = await self._session_row(conn, tenant_id, session_id, lock=True)
                if existing is not None:
                    raise SessionRevisionConflictError(
                        session_resource(tenant_id, session_id),
                        expected_revision=None,
                        actual_revision=_int(existing.revision, "revision"),
                    )
                await conn.execute(
                    insert(sessions).values(
                        tenant_id=tenant_id,
                        session_id=session_id,
                        revision=0,
                        metadata_json=dump_json(meta),
                        created_at=stamp,
                        updated_at=stamp,
                        last_sequence=0,
                    )
                )
        except IntegrityError:
            # Another writer (PostgreSQL: no lock on an absent row) created it first.
            current = await self.get(tenant_id=tenant_id, session_id=session_id)
            raise SessionRevisionConflictError(
                session_resource(tenant_id, session_id),
                expected_revision=None,
                actual_revision=None if current is None else current.revision,
            ) from None
        return SessionRecord(
            tenant_id=tenant_id,
            session_id=session_id,
            revision=0,
            metadata=meta,
            created_at=stamp,
            updated_at=stamp,
            last_sequence=0,
        )

    async def get(self, *, tenant_id: str, session_id: str) -> SessionRecord | None:
        """See :meth:`SessionStore.get`."""
        require_key(tenant_id, "tenantId")
        require_key(session_id, "sessionId")
        async with self._db.read() as conn:
            row = await self._session_row(conn, tenant_id, session_id)
        return None if row is None else record_from_row(row)

    async def _existing(
        self, conn: AsyncConnection, tenant_id: str, session_id: str, ids: list[str]
    ) -> dict[str, tuple[str, JsonObject]]:
        found: dict[str, tuple[str, JsonObject]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = await conn.execute(
                select(session_items.c.item_id, session_items.c.kind, session_items.c.payload_json)
                .where(session_items.c.tenant_id == tenant_id)
                .where(session_items.c.session_id == session_id)
                .where(session_items.c.item_id.in_(chunk))
            )
            for row in rows:
                found[row.item_id] = (row.kind, decode_json_object(row.payload_json, "payload"))
        return found

    async def _replay(
        self,
        conn: AsyncConnection,
        tenant_id: str,
        session_id: str,
        prepared: list[NewSessionItem],
    ) -> bool:
        """True when every item already exists with the same kind and payload."""
        found = await self._existing(conn, tenant_id, session_id, [i.item_id for i in prepared])
        return len(found) == len(prepared) and all(
            found[i.item_id] == (i.kind, i.payload) for i in prepared
        )

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
        require_key(tenant_id, "tenantId")
        require_key(session_id, "sessionId")
        expected = require_revision(expected_revision, "expectedRevision")
        stamp = updated_at or iso_now()
        prepared = prepare_append(items, stamp)
        resource = session_resource(tenant_id, session_id)
        count = len(prepared)
        try:
            async with self._db.write() as conn:
                # The conditional UPDATE is the CAS (and takes the row lock on PostgreSQL); on
                # success RETURNING gives the new tail, so the happy path is two statements.
                bumped = (
                    await conn.execute(
                        update(sessions)
                        .where(_key(tenant_id, session_id))
                        .where(sessions.c.revision == expected)
                        .values(
                            revision=sessions.c.revision + 1,
                            updated_at=stamp,
                            last_sequence=sessions.c.last_sequence + count,
                        )
                        .returning(*sessions.c)
                    )
                ).first()
                if bumped is None:
                    row = await self._session_row(conn, tenant_id, session_id, lock=True)
                    if row is None:
                        raise StorageNotFoundError(resource)
                    current = record_from_row(row)
                    if await self._replay(conn, tenant_id, session_id, prepared):
                        return current
                    raise SessionRevisionConflictError(
                        resource, expected_revision=expected, actual_revision=current.revision
                    )
                updated = record_from_row(bumped)
                first = updated.last_sequence - count + 1
                await conn.execute(
                    insert(session_items),
                    [
                        {
                            "tenant_id": tenant_id,
                            "session_id": session_id,
                            "sequence": first + offset,
                            "item_id": item.item_id,
                            "kind": item.kind,
                            "payload_json": dump_json(item.payload),
                            "created_at": item.created_at or stamp,
                        }
                        for offset, item in enumerate(prepared)
                    ],
                )
        except IntegrityError:
            # An item id from an earlier append: an idempotent retry, or a real clash.
            async with self._db.read() as conn:
                if await self._replay(conn, tenant_id, session_id, prepared):
                    row = await self._session_row(conn, tenant_id, session_id)
                    if row is not None:
                        return record_from_row(row)
            raise StorageDataError(
                f"Session items already exist with different content in {resource}"
            ) from None
        return updated

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
        require_key(tenant_id, "tenantId")
        require_key(session_id, "sessionId")
        if after_sequence is not None:
            require_revision(after_sequence, "afterSequence")
        cap = require_limit(limit)
        async with self._db.read() as conn:
            row = await self._session_row(conn, tenant_id, session_id)
            if row is None:
                raise StorageNotFoundError(session_resource(tenant_id, session_id))
            record = record_from_row(row)
            snapshot: SessionSnapshot | None = None
            if after_sequence is None and use_snapshot:
                snap = (
                    await conn.execute(
                        select(session_snapshots)
                        .where(session_snapshots.c.tenant_id == tenant_id)
                        .where(session_snapshots.c.session_id == session_id)
                        .order_by(session_snapshots.c.through_sequence.desc())
                        .limit(1)
                    )
                ).first()
                if snap is not None:
                    snapshot = SessionSnapshot(
                        through_sequence=_int(snap.through_sequence, "through_sequence"),
                        revision=_int(snap.session_revision, "session_revision"),
                        state=decode_json_object(snap.state_json, "state_json"),
                        created_at=_text(snap.created_at, "created_at"),
                    )
            start = snapshot.through_sequence if snapshot is not None else after_sequence or 0
            query = (
                select(session_items)
                .where(session_items.c.tenant_id == tenant_id)
                .where(session_items.c.session_id == session_id)
                .where(session_items.c.sequence > start)
                .order_by(session_items.c.sequence)
            )
            if cap is not None:
                query = query.limit(cap)
            rows = (await conn.execute(query)).all()
        return SessionLoad(
            session=record, snapshot=snapshot, items=tuple(item_from_row(r) for r in rows)
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
        require_key(tenant_id, "tenantId")
        require_key(session_id, "sessionId")
        expected = require_revision(expected_revision, "expectedRevision")
        through = require_revision(through_sequence, "throughSequence")
        body = require_json_object(state, "state")
        stamp = require_key(created_at or iso_now(), "createdAt")
        resource = session_resource(tenant_id, session_id)
        async with self._db.write() as conn:
            row = await self._session_row(conn, tenant_id, session_id, lock=True)
            if row is None:
                raise StorageNotFoundError(resource)
            current = record_from_row(row)
            if current.revision != expected:
                raise SessionRevisionConflictError(
                    resource, expected_revision=expected, actual_revision=current.revision
                )
            if through > current.last_sequence:
                raise StorageDataError(
                    f"Snapshot sequence {through} exceeds session tail {current.last_sequence}"
                )
            newest = (
                await conn.execute(
                    select(func.max(session_snapshots.c.through_sequence))
                    .where(session_snapshots.c.tenant_id == tenant_id)
                    .where(session_snapshots.c.session_id == session_id)
                )
            ).scalar_one_or_none()
            if newest is not None and newest >= through:
                raise StorageDataError("A compacted snapshot must advance throughSequence")
            revision = current.revision + 1
            await conn.execute(
                insert(session_snapshots).values(
                    tenant_id=tenant_id,
                    session_id=session_id,
                    through_sequence=through,
                    session_revision=revision,
                    state_json=dump_json(body),
                    created_at=stamp,
                )
            )
            changed = await conn.execute(
                update(sessions)
                .where(_key(tenant_id, session_id))
                .where(sessions.c.revision == current.revision)
                .values(revision=revision, updated_at=stamp)
            )
            if changed.rowcount != 1:
                raise SessionRevisionConflictError(
                    resource, expected_revision=expected, actual_revision=None
                )
        return SessionSnapshot(
            through_sequence=through, revision=revision, state=body, created_at=stamp
        )

    async def list_sessions(
        self, *, tenant_id: str, limit: int | None = None
    ) -> list[SessionRecord]:
        """See :meth:`SessionStore.list_sessions`."""
        require_key(tenant_id, "tenantId")
        cap = require_limit(limit)
        query = (
            select(sessions)
            .where(sessions.c.tenant_id == tenant_id)
            .order_by(sessions.c.updated_at.desc(), sessions.c.session_id)
        )
        if cap is not None:
            query = query.limit(cap)
        async with self._db.read() as conn:
            rows = (await conn.execute(query)).all()
        return [record_from_row(r) for r in rows]

    async def aclose(self) -> None:
        """No-op: the :class:`SqliteStorage` owns the engine."""
