"""SQL session store: one writer transaction per append, snapshot + tail loads (spec 04 §3.4).

The journal is one turn row per append (``_tables``, ``_journal``); item-id uniqueness is checked
in the append's transaction against ``_id_index`` (the ids of the locked state).

Every operation is one synchronous function of a ``Connection`` run by
:meth:`Database.run_write` / :meth:`Database.run_read`: on a SQLite file the whole transaction is
one hop to a worker thread, on PostgreSQL it is the async engine's ``run_sync``. The hot path
(append, load) goes through :meth:`Database.run_journal_write` / ``run_journal_read`` and
:attr:`Database.journal_sql`: driver SQL on a SQLite file (inline on the event loop when the
transaction is small), Core elsewhere. The rarer statements (create, conflicts, compaction,
listing) stay in Core, built once at import (bound parameters only), so SQLAlchemy compiles
each once per dialect.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer, Row, and_, bindparam, func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from actoviq.core import JsonObject, iso_now
from actoviq.runtime.stores import (
    NewSessionItem,
    SessionChanges,
    SessionLoad,
    SessionRecord,
    SessionRevisionConflictError,
    SessionSnapshot,
    StorageDataError,
    StorageNotFoundError,
    StoredItems,
)
from actoviq.runtime.stores.rules import (
    session_key,
    session_resource,
    validate_compact,
    validate_load,
    validate_session_create,
)
from actoviq.runtime.stores.validation import (
    decode_json_object,
    dump_json,
    require_key,
    require_limit,
    require_revision,
)
from actoviq.storage.sqlite._engine import Database
from actoviq.storage.sqlite._id_index import IdLookup, SessionIdIndex
from actoviq.storage.sqlite._journal import (
    PreparedTurn,
    decode_id_rows,
    decode_turns,
    prepare_turn,
)
from actoviq.storage.sqlite._journal_packed import decode_packed
from actoviq.storage.sqlite._journal_sql import SESSION_COLUMNS, JournalSql
from actoviq.storage.sqlite._keyed_rows import stored_int, stored_text
from actoviq.storage.sqlite._tables import session_snapshots, sessions


def record_from_row(row: Sequence[Any]) -> SessionRecord:
    """Decode and re-validate a session row in ``SESSION_COLUMNS`` order (fail closed)."""
    tenant_id, session_id, revision, metadata_json, created_at, updated_at, last_sequence = row[:7]
    return SessionRecord(
        tenant_id=stored_text(tenant_id, "tenant_id"),
        session_id=stored_text(session_id, "session_id"),
        revision=stored_int(revision, "revision"),
        metadata=decode_json_object(metadata_json, "metadata_json"),
        created_at=stored_text(created_at, "created_at"),
        updated_at=stored_text(updated_at, "updated_at"),
        last_sequence=stored_int(last_sequence, "last_sequence"),
    )


_KEY = and_(
    sessions.c.tenant_id == bindparam("p_tenant"), sessions.c.session_id == bindparam("p_session")
)
_SESSION = select(*(sessions.c[name] for name in SESSION_COLUMNS)).where(_KEY)
_SESSION_LOCKED = _SESSION.with_for_update()
_COMPACT_BUMP = (
    update(sessions)
    .where(_KEY)
    .where(sessions.c.revision == bindparam("p_expected"))
    .values(revision=sessions.c.revision + 1, updated_at=bindparam("p_stamp"))
)
_CREATE = insert(sessions)
_NEWEST_THROUGH = select(func.max(session_snapshots.c.through_sequence)).where(
    session_snapshots.c.tenant_id == bindparam("p_tenant"),
    session_snapshots.c.session_id == bindparam("p_session"),
)
_INSERT_SNAPSHOT = insert(session_snapshots)
_LIST = (
    select(*(sessions.c[name] for name in SESSION_COLUMNS))
    .where(sessions.c.tenant_id == bindparam("p_tenant"))
    .order_by(sessions.c.updated_at.desc(), sessions.c.session_id)
)
_LIST_LIMITED = _LIST.limit(bindparam("p_limit", type_=Integer))


def _session_row(
    conn: Connection, tenant_id: str, session_id: str, *, lock: bool = False
) -> Row[Any] | None:
    params = {"p_tenant": tenant_id, "p_session": session_id}
    return conn.execute(_SESSION_LOCKED if lock else _SESSION, params).first()


_INLINE_PAYLOAD_CHARS = 1 << 20  # a bigger append runs its transaction on a worker thread


class _Replayed(Exception):
    """The append is an idempotent retry: roll back (nothing was written) and return ``record``."""

    def __init__(self, record: SessionRecord) -> None:
        super().__init__()
        self.record = record


class _IdClash(Exception):
    """An id of the append is already in the session: roll back, then sort out why."""


def _incarnation(row: Sequence[Any]) -> str:
    return stored_text(row[7], "incarnation")


def _replay(
    sql: JournalSql, conn: Any, tenant_id: str, session_id: str, turn: PreparedTurn
) -> bool:
    """True when every item already exists with the same kind and payload.

    Reads the id columns of the whole journal, then decodes only the turns holding the ids.
    """
    wanted = {item_id: index for index, item_id in enumerate(turn.ids)}
    holders: dict[int, list[tuple[int, int]]] = {}  # turn's first sequence -> (offset, index)
    found = 0
    for first, ids in decode_id_rows(sql.turn_ids(conn, tenant_id, session_id, 0)):
        for offset, item_id in enumerate(ids):
            index = wanted.get(item_id)
            if index is not None:
                holders.setdefault(first, []).append((offset, index))
                found += 1
    if found != len(wanted):
        return False
    for first, hits in holders.items():
        stored = decode_turns(
            sql.turns(conn, tenant_id, session_id, first - 1, first), first - 1, None
        )
        for offset, index in hits:
            if offset >= len(stored):
                return False
            item = stored[offset]
            if (item.kind, item.payload) != (turn.kinds[index], turn.payloads[index]):
                return False
    return True


PACK_FROM_ITEMS = 32
"""Tails of at least this many items are read packed (shorter ones read their few rows)."""


def _tail(
    sql: JournalSql,
    conn: Any,
    tenant_id: str,
    session_id: str,
    after: int,
    end: int,
    *,
    to_tail: bool,
) -> StoredItems:
    """The items ``after < sequence <= end`` of a session, decoded in the read transaction.

    With ``to_tail`` (``end`` is the session's tail) and at least ``PACK_FROM_ITEMS`` items to
    read, the driver's packed row is tried first (``_journal_packed``); the turn rows are read and
    decoded when the tail is short (a turn's ``load_changes``: fewer statements and parses), the
    backend does not pack or the packed form cannot prove the rows valid, so a corrupt row fails
    with its own message.

    Raises:
        StorageDataError: a corrupt turn, or fewer items than the session row promises.
    """
    items: StoredItems | None = None
    if to_tail and end - after >= PACK_FROM_ITEMS:
        row = sql.packed_turns(conn, tenant_id, session_id, after)
        if row is not None:
            items = decode_packed(row, after, end)
    if items is None:
        rows = sql.turns(conn, tenant_id, session_id, after, None if to_tail else end)
        items = decode_turns(rows, after, end)
    if len(items) != max(0, end - after):  # a missing turn: fail closed, never a short read
        raise StorageDataError(
            f"stored journal of {session_resource(tenant_id, session_id)} is missing turns"
        )
    return items


class SqlSessionStore:
    """:class:`~actoviq.runtime.stores.SessionStore` on SQLAlchemy Core.

    Also a :class:`~actoviq.runtime.stores.SessionChangeStore` (``load_changes``).
    """

    def __init__(self, database: Database) -> None:
        self._db = database
        self._ids = SessionIdIndex()

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

        def work(conn: Connection) -> None:
            existing = _session_row(conn, tenant_id, session_id, lock=True)
            if existing is not None:
                raise SessionRevisionConflictError(
                    session_resource(tenant_id, session_id),
                    expected_revision=None,
                    actual_revision=stored_int(existing.revision, "revision"),
                )
            conn.execute(
                _CREATE,
                {
                    "tenant_id": tenant_id,
                    "session_id": session_id,
                    "revision": 0,
                    "metadata_json": dump_json(record.metadata),
                    "created_at": record.created_at,
                    "updated_at": record.updated_at,
                    "last_sequence": 0,
                    "incarnation": uuid.uuid4().hex,
                },
            )

        try:
            await self._db.run_write(work)
        except IntegrityError:
            # Another writer (PostgreSQL: no lock on an absent row) created it first.
            current = await self.get(tenant_id=tenant_id, session_id=session_id)
            raise SessionRevisionConflictError(
                session_resource(tenant_id, session_id),
                expected_revision=None,
                actual_revision=None if current is None else current.revision,
            ) from None
        return record

    async def get(self, *, tenant_id: str, session_id: str) -> SessionRecord | None:
        """See :meth:`SessionStore.get`."""
        session_key(tenant_id, session_id)
        sql = self._db.journal_sql
        row = await self._db.run_journal_read(lambda conn: sql.session(conn, tenant_id, session_id))
        return None if row is None else record_from_row(row)

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
        turn = prepare_turn(items, stamp)
        resource = session_resource(tenant_id, session_id)
        count = len(turn.ids)
        sql = self._db.journal_sql
        index = self._ids

        def work(conn: Any) -> tuple[SessionRecord, IdLookup]:
            bumped = sql.bump(conn, tenant_id, session_id, expected, stamp, count)
            if bumped is None:
                row = sql.session(conn, tenant_id, session_id, lock=True)
                if row is None:
                    raise StorageNotFoundError(resource)
                current = record_from_row(row)
                if _replay(sql, conn, tenant_id, session_id, turn):
                    raise _Replayed(current)
                raise SessionRevisionConflictError(
                    resource, expected_revision=expected, actual_revision=current.revision
                )
            updated = record_from_row(bumped)
            incarnation = _incarnation(bumped)
            before = updated.last_sequence - count
            base, read_after = index.start(key, incarnation, before)
            read: list[str] = []
            if read_after < before:
                for _, ids in decode_id_rows(sql.turn_ids(conn, tenant_id, session_id, read_after)):
                    read.extend(ids)
            lookup = IdLookup(incarnation, before, base, read_after, frozenset(read))
            if lookup.clashes(turn.ids):
                raise _IdClash
            sql.insert_turn(
                conn,
                (
                    tenant_id,
                    session_id,
                    updated.last_sequence,
                    before + 1,
                    stamp,
                    turn.ids_json,
                    turn.kinds_json,
                    turn.created_json,
                    turn.payloads_json,
                ),
            )
            return updated, lookup

        def committed(outcome: tuple[SessionRecord, IdLookup]) -> None:
            record, lookup = outcome
            index.commit(key, lookup, turn.ids, record.last_sequence)

        def replayed(conn: Any) -> SessionRecord | None:
            if not _replay(sql, conn, tenant_id, session_id, turn):
                return None
            row = sql.session(conn, tenant_id, session_id)
            return None if row is None else record_from_row(row)

        try:
            record, _ = await self._db.run_journal_write(
                work, on_commit=committed, inline=len(turn.payloads_json) <= _INLINE_PAYLOAD_CHARS
            )
            return record
        except _Replayed as done:
            return done.record
        except (_IdClash, IntegrityError):
            pass
        # An item id from an earlier append: an idempotent retry, or a real clash.
        record = await self._db.run_journal_read(replayed)
        if record is None:
            raise StorageDataError(
                f"Session items already exist with different content in {resource}"
            )
        return record

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
        sql = self._db.journal_sql

        def work(
            conn: Any,
        ) -> tuple[SessionRecord, Sequence[Any] | None, int, StoredItems]:
            row = sql.session(conn, tenant_id, session_id)
            if row is None:
                raise StorageNotFoundError(session_resource(tenant_id, session_id))
            record = record_from_row(row)
            snap = None
            if after_sequence is None and use_snapshot:
                snap = sql.newest_snapshot(conn, tenant_id, session_id)
            start = (
                stored_int(snap[0], "through_sequence") if snap is not None else after_sequence or 0
            )
            end = record.last_sequence if cap is None else min(record.last_sequence, start + cap)
            items = _tail(sql, conn, tenant_id, session_id, start, end, to_tail=cap is None)
            return record, snap, start, items

        record, snap, start, items = await self._db.run_journal_read(work)
        snapshot: SessionSnapshot | None = None
        if snap is not None:
            _, revision, state_json, created_at = snap
            snapshot = SessionSnapshot(
                through_sequence=start,
                revision=stored_int(revision, "session_revision"),
                state=decode_json_object(state_json, "state_json"),
                created_at=stored_text(created_at, "created_at"),
            )
        return SessionLoad(session=record, snapshot=snapshot, items=items)

    async def load_changes(
        self, *, tenant_id: str, session_id: str, after_sequence: int
    ) -> SessionChanges:
        """See :meth:`SessionChangeStore.load_changes` (one read: row, snapshot marker, turns)."""
        validate_load(tenant_id, session_id, after_sequence, None)
        sql = self._db.journal_sql

        def work(conn: Any) -> tuple[SessionRecord, object, StoredItems]:
            row = sql.session(conn, tenant_id, session_id)
            if row is None:
                raise StorageNotFoundError(session_resource(tenant_id, session_id))
            record = record_from_row(row)
            marker = sql.snapshot_revision(conn, tenant_id, session_id)
            end = record.last_sequence
            items = _tail(sql, conn, tenant_id, session_id, after_sequence, end, to_tail=True)
            return record, marker, items

        record, marker, items = await self._db.run_journal_read(work)
        return SessionChanges(
            session=record,
            items=items,
            snapshot_revision=None if marker is None else stored_int(marker, "session_revision"),
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
        resource = session_resource(tenant_id, session_id)
        params = {"p_tenant": tenant_id, "p_session": session_id}

        def work(conn: Connection) -> int:
            row = _session_row(conn, tenant_id, session_id, lock=True)
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
            newest = conn.execute(_NEWEST_THROUGH, params).scalar_one_or_none()
            if newest is not None and newest >= through:
                raise StorageDataError("A compacted snapshot must advance throughSequence")
            revision = current.revision + 1
            conn.execute(
                _INSERT_SNAPSHOT,
                {
                    "tenant_id": tenant_id,
                    "session_id": session_id,
                    "through_sequence": through,
                    "session_revision": revision,
                    "state_json": dump_json(body),
                    "created_at": stamp,
                },
            )
            changed = conn.execute(
                _COMPACT_BUMP, {**params, "p_expected": current.revision, "p_stamp": stamp}
            )
            if changed.rowcount != 1:
                raise SessionRevisionConflictError(
                    resource, expected_revision=expected, actual_revision=None
                )
            return revision

        revision = await self._db.run_write(work)
        return SessionSnapshot(
            through_sequence=through, revision=revision, state=body, created_at=stamp
        )

    async def list_sessions(
        self, *, tenant_id: str, limit: int | None = None
    ) -> list[SessionRecord]:
        """See :meth:`SessionStore.list_sessions`."""
        require_key(tenant_id, "tenantId")
        cap = require_limit(limit)
        query = _LIST if cap is None else _LIST_LIMITED
        params = {"p_tenant": tenant_id, "p_limit": cap}
        rows = await self._db.run_read(lambda conn: list(conn.execute(query, params).all()))
        return [record_from_row(r) for r in rows]

    async def aclose(self) -> None:
        """No-op: the :class:`SqliteStorage` owns the engine."""
