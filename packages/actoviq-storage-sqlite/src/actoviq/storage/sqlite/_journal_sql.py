"""The session journal's hot-path SQL, per backend.

Appends and loads need five statements: the CAS bump of the session row, the item insert, the
session row, the newest snapshot and the journal tail. Two implementations share one shape
(positional rows, tuple parameters):

* :class:`DriverJournalSql` (SQLite file): pre-written SQL strings with tuple parameters and
  ``executemany`` on the stdlib ``sqlite3`` connection checked out of SQLAlchemy's pool for the
  transaction (:meth:`Database.run_journal_write` has already taken the writer lock and issued
  ``BEGIN IMMEDIATE``). This skips SQLAlchemy's ``Connection`` set-up, compilation cache
  look-ups, per-row bind processing and ``Row`` construction. ``sqlite3`` caches each prepared
  statement per connection; :meth:`DriverJournalSql.warm` (run when the database opens) prepares
  the read statements on the first pooled connection.
* :class:`CoreJournalSql` (PostgreSQL, ``:memory:``): the same statements in SQLAlchemy Core on a
  ``Connection`` (bound parameters, compiled once per dialect; :meth:`CoreJournalSql.warm`
  compiles them when the database opens).

The ``conn`` each method takes is whatever :meth:`Database.run_journal_write` /
:meth:`Database.run_journal_read` hand to the transaction's function: a ``sqlite3.Connection`` for
the driver SQL, a SQLAlchemy ``Connection`` for Core.

Errors are the driver's: ``sqlite3.IntegrityError`` / ``OperationalError`` on the driver path,
SQLAlchemy's wrappers on the Core path; the callers handle both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, cast

from sqlalchemy import Integer, and_, bindparam, insert, select, update
from sqlalchemy.engine import Connection

from actoviq.storage.sqlite._tables import session_items, session_snapshots, sessions

__all__ = [
    "ITEM_COLUMNS",
    "SESSION_COLUMNS",
    "CoreJournalSql",
    "DriverJournalSql",
    "ItemRow",
    "JournalSql",
]

SESSION_COLUMNS = (
    "tenant_id",
    "session_id",
    "revision",
    "metadata_json",
    "created_at",
    "updated_at",
    "last_sequence",
)
"""Column order of every session row the journal returns (the table's own order)."""

ITEM_COLUMNS = (
    "tenant_id",
    "session_id",
    "sequence",
    "item_id",
    "kind",
    "payload_json",
    "created_at",
)

ItemRow = tuple[str, str, int, str, str, str, str]
"""One journal row to insert, in :data:`ITEM_COLUMNS` order."""


class JournalSql(Protocol):
    """The hot-path statements; every row comes back positional.

    Session rows are in :data:`SESSION_COLUMNS` order, snapshot rows are
    ``(through_sequence, session_revision, state_json, created_at)`` and tail rows are
    ``(sequence, item_id, kind, payload_json, created_at)`` in sequence order.
    """

    def bump(
        self, conn: Any, tenant: str, session: str, expected: int, stamp: str, count: int
    ) -> Sequence[Any] | None:
        """CAS: bump revision and tail if the revision is ``expected``; the new row or None."""
        ...

    def insert_items(self, conn: Any, rows: list[ItemRow]) -> None:
        """Insert journal rows in one ``executemany``."""
        ...

    def session(
        self, conn: Any, tenant: str, session: str, *, lock: bool = False
    ) -> Sequence[Any] | None:
        """The session row, or None (``lock``: ``FOR UPDATE`` where the backend needs it)."""
        ...

    def existing(self, conn: Any, tenant: str, session: str, ids: list[str]) -> list[Sequence[Any]]:
        """``(item_id, kind, payload_json)`` of the journal rows among ``ids``."""
        ...

    def newest_snapshot(self, conn: Any, tenant: str, session: str) -> Sequence[Any] | None:
        """The snapshot with the highest ``through_sequence``, or None."""
        ...

    def tail(
        self, conn: Any, tenant: str, session: str, after: int, limit: int | None
    ) -> list[Sequence[Any]]:
        """Journal rows with ``sequence > after``, at most ``limit``."""
        ...

    def warm(self, conn: Any) -> None:
        """Prepare or compile the statements ahead of first use (no rows change)."""
        ...


# --- driver SQL (SQLite file) -----------------------------------------------------------------

_SESSION_SELECT = ", ".join(SESSION_COLUMNS)
_SQL_BUMP = (
    "UPDATE storage_v2_sessions SET revision = revision + 1, updated_at = ?, "
    "last_sequence = last_sequence + ? "
    "WHERE tenant_id = ? AND session_id = ? AND revision = ? "
    f"RETURNING {_SESSION_SELECT}"
)
_SQL_INSERT = (
    f"INSERT INTO storage_v2_session_items ({', '.join(ITEM_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_SQL_SESSION = (
    f"SELECT {_SESSION_SELECT} FROM storage_v2_sessions WHERE tenant_id = ? AND session_id = ?"
)
_SQL_SNAPSHOT = (
    "SELECT through_sequence, session_revision, state_json, created_at "
    "FROM storage_v2_session_snapshots WHERE tenant_id = ? AND session_id = ? "
    "ORDER BY through_sequence DESC LIMIT 1"
)
_SQL_TAIL = (
    "SELECT sequence, item_id, kind, payload_json, created_at FROM storage_v2_session_items "
    "WHERE tenant_id = ? AND session_id = ? AND sequence > ? ORDER BY sequence"
)
_SQL_TAIL_LIMITED = _SQL_TAIL + " LIMIT ?"
_NO_KEY = ("", "")  # tenant and session ids are never empty, so warm-up reads match no row


_ID_CHUNK = 500  # ids per IN list (SQLite allows 32,766 parameters; keep statements small)


def _chunks(ids: list[str]) -> list[list[str]]:
    return [ids[start : start + _ID_CHUNK] for start in range(0, len(ids), _ID_CHUNK)]


def _sql_existing(count: int) -> str:
    marks = ", ".join("?" * count)
    return (
        "SELECT item_id, kind, payload_json FROM storage_v2_session_items "
        f"WHERE tenant_id = ? AND session_id = ? AND item_id IN ({marks})"
    )


def warm_driver_connection(dbapi_connection: Any) -> None:
    """Prepare the read statements into ``sqlite3``'s per-connection statement cache.

    Only reads that match no row run here; the ``UPDATE``/``INSERT`` are prepared on first use
    (running them would need a write transaction).
    """
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(_SQL_SESSION, _NO_KEY).fetchall()
        cursor.execute(_SQL_SNAPSHOT, _NO_KEY).fetchall()
        cursor.execute(_SQL_TAIL, (*_NO_KEY, 0)).fetchall()
        cursor.execute(_SQL_TAIL_LIMITED, (*_NO_KEY, 0, 1)).fetchall()
    finally:
        cursor.close()


class DriverJournalSql:
    """:class:`JournalSql` as driver SQL on a pooled ``sqlite3.Connection`` (SQLite file)."""

    def bump(
        self, conn: Any, tenant: str, session: str, expected: int, stamp: str, count: int
    ) -> Sequence[Any] | None:
        """See :meth:`JournalSql.bump`."""
        cursor = conn.execute(_SQL_BUMP, (stamp, count, tenant, session, expected))
        row = cursor.fetchone()
        cursor.close()  # finishes the RETURNING statement
        return cast(Sequence[Any] | None, row)

    def insert_items(self, conn: Any, rows: list[ItemRow]) -> None:
        """See :meth:`JournalSql.insert_items`."""
        conn.executemany(_SQL_INSERT, rows)

    def session(
        self, conn: Any, tenant: str, session: str, *, lock: bool = False
    ) -> Sequence[Any] | None:
        """See :meth:`JournalSql.session` (``BEGIN IMMEDIATE`` already locks the file)."""
        return cast(Sequence[Any] | None, conn.execute(_SQL_SESSION, (tenant, session)).fetchone())

    def existing(self, conn: Any, tenant: str, session: str, ids: list[str]) -> list[Sequence[Any]]:
        """See :meth:`JournalSql.existing`."""
        rows: list[Sequence[Any]] = []
        for chunk in _chunks(ids):
            rows.extend(conn.execute(_sql_existing(len(chunk)), (tenant, session, *chunk)))
        return rows

    def newest_snapshot(self, conn: Any, tenant: str, session: str) -> Sequence[Any] | None:
        """See :meth:`JournalSql.newest_snapshot`."""
        row = conn.execute(_SQL_SNAPSHOT, (tenant, session)).fetchone()
        return cast(Sequence[Any] | None, row)

    def tail(
        self, conn: Any, tenant: str, session: str, after: int, limit: int | None
    ) -> list[Sequence[Any]]:
        """See :meth:`JournalSql.tail`."""
        if limit is None:
            return conn.execute(_SQL_TAIL, (tenant, session, after)).fetchall()
        return conn.execute(_SQL_TAIL_LIMITED, (tenant, session, after, limit)).fetchall()

    def warm(self, conn: Any) -> None:
        """See :meth:`JournalSql.warm`."""
        warm_driver_connection(conn)


# --- SQLAlchemy Core (PostgreSQL, ``:memory:``) -----------------------------------------------

_KEY = and_(
    sessions.c.tenant_id == bindparam("p_tenant"), sessions.c.session_id == bindparam("p_session")
)
# The conditional UPDATE is the CAS (and takes the row lock on PostgreSQL); RETURNING gives the
# new tail, so the happy path of an append is two statements.
_BUMP = (
    update(sessions)
    .where(_KEY)
    .where(sessions.c.revision == bindparam("p_expected"))
    .values(
        revision=sessions.c.revision + 1,
        updated_at=bindparam("p_stamp"),
        last_sequence=sessions.c.last_sequence + bindparam("p_count"),
    )
    .returning(*(sessions.c[name] for name in SESSION_COLUMNS))
)
_INSERT_ITEMS = insert(session_items)
_SESSION = select(*(sessions.c[name] for name in SESSION_COLUMNS)).where(_KEY)
_SESSION_LOCKED = _SESSION.with_for_update()
_IN_JOURNAL = (session_items.c.tenant_id == bindparam("p_tenant")) & (
    session_items.c.session_id == bindparam("p_session")
)
_EXISTING = select(
    session_items.c.item_id, session_items.c.kind, session_items.c.payload_json
).where(_IN_JOURNAL, session_items.c.item_id.in_(bindparam("p_ids", expanding=True)))
_TAIL = (
    select(
        session_items.c.sequence,
        session_items.c.item_id,
        session_items.c.kind,
        session_items.c.payload_json,
        session_items.c.created_at,
    )
    .where(_IN_JOURNAL, session_items.c.sequence > bindparam("p_after"))
    .order_by(session_items.c.sequence)
)
_TAIL_LIMITED = _TAIL.limit(bindparam("p_limit", type_=Integer))
_NEWEST_SNAPSHOT = (
    select(
        session_snapshots.c.through_sequence,
        session_snapshots.c.session_revision,
        session_snapshots.c.state_json,
        session_snapshots.c.created_at,
    )
    .where(
        session_snapshots.c.tenant_id == bindparam("p_tenant"),
        session_snapshots.c.session_id == bindparam("p_session"),
    )
    .order_by(session_snapshots.c.through_sequence.desc())
    .limit(1)
)


class CoreJournalSql:
    """:class:`JournalSql` in SQLAlchemy Core (PostgreSQL and in-memory SQLite)."""

    def bump(
        self, conn: Connection, tenant: str, session: str, expected: int, stamp: str, count: int
    ) -> Sequence[Any] | None:
        """See :meth:`JournalSql.bump`."""
        params = {
            "p_tenant": tenant,
            "p_session": session,
            "p_expected": expected,
            "p_stamp": stamp,
            "p_count": count,
        }
        return conn.execute(_BUMP, params).first()

    def insert_items(self, conn: Connection, rows: list[ItemRow]) -> None:
        """See :meth:`JournalSql.insert_items`."""
        conn.execute(_INSERT_ITEMS, [dict(zip(ITEM_COLUMNS, row, strict=True)) for row in rows])

    def session(
        self, conn: Connection, tenant: str, session: str, *, lock: bool = False
    ) -> Sequence[Any] | None:
        """See :meth:`JournalSql.session` (``lock``: ``SELECT ... FOR UPDATE``)."""
        params = {"p_tenant": tenant, "p_session": session}
        return conn.execute(_SESSION_LOCKED if lock else _SESSION, params).first()

    def existing(
        self, conn: Connection, tenant: str, session: str, ids: list[str]
    ) -> list[Sequence[Any]]:
        """See :meth:`JournalSql.existing`."""
        rows: list[Sequence[Any]] = []
        for chunk in _chunks(ids):
            params = {"p_tenant": tenant, "p_session": session, "p_ids": chunk}
            rows.extend(conn.execute(_EXISTING, params).all())
        return rows

    def newest_snapshot(self, conn: Connection, tenant: str, session: str) -> Sequence[Any] | None:
        """See :meth:`JournalSql.newest_snapshot`."""
        params = {"p_tenant": tenant, "p_session": session}
        return conn.execute(_NEWEST_SNAPSHOT, params).first()

    def tail(
        self, conn: Connection, tenant: str, session: str, after: int, limit: int | None
    ) -> list[Sequence[Any]]:
        """See :meth:`JournalSql.tail`."""
        params: dict[str, Any] = {"p_tenant": tenant, "p_session": session, "p_after": after}
        if limit is None:
            return list(conn.execute(_TAIL, params).all())
        return list(conn.execute(_TAIL_LIMITED, {**params, "p_limit": limit}).all())

    def warm(self, conn: Connection) -> None:
        """See :meth:`JournalSql.warm`: run each read once and compile the writes.

        The reads match no row (ids are never empty); compiling through ``conn`` fills the
        engine's compiled cache the first real statements hit.
        """
        self.session(conn, *_NO_KEY)
        self.newest_snapshot(conn, *_NO_KEY)
        self.tail(conn, *_NO_KEY, 0, None)
        self.tail(conn, *_NO_KEY, 0, 1)
        # An UPDATE that matches no row: compiled and cached, nothing changes.
        self.bump(conn, *_NO_KEY, 0, "", 0)
