"""The session journal's hot-path SQL, per backend.

Appends and loads need eight statements: the CAS bump of the session row, the turn insert, the
session row, the newest snapshot (whole, or only its revision), the turns after a sequence (as
rows, or packed into one row of JSON array texts on a SQLite file) and (for the item-id check)
the id columns after a sequence. Two implementations share one shape (positional rows, tuple
parameters):

* :class:`DriverJournalSql` (SQLite file): pre-written SQL strings with tuple parameters on the
  stdlib ``sqlite3`` connection :meth:`Database.run_journal_write` / ``run_journal_read`` hand over
  (inside ``BEGIN IMMEDIATE`` / ``BEGIN``). This skips SQLAlchemy's ``Connection`` set-up,
  compilation cache look-ups, per-row bind processing and ``Row`` construction. ``sqlite3`` caches
  each prepared statement per connection; :meth:`DriverJournalSql.warm` prepares the reads.
* :class:`CoreJournalSql` (PostgreSQL, ``:memory:``): the same statements in SQLAlchemy Core on a
  ``Connection`` (bound parameters, compiled once per dialect; :meth:`CoreJournalSql.warm`
  compiles them when the database opens).

Turn reads are ranges of the primary key ``(tenant_id, session_id, last_sequence)``: the turns
holding items ``after < sequence <= end`` are those with ``after < last_sequence <= L`` where ``L``
is the ``last_sequence`` of the turn holding ``end`` (sequences have no gaps), found by one seek.

Errors are the driver's: ``sqlite3.IntegrityError`` / ``OperationalError`` on the driver path,
SQLAlchemy's wrappers on the Core path; the callers handle both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, cast

from sqlalchemy import Integer, and_, bindparam, func, insert, select, update
from sqlalchemy.engine import Connection

from actoviq.storage.sqlite._tables import session_snapshots, session_turns, sessions

__all__ = [
    "SESSION_COLUMNS",
    "TURN_COLUMNS",
    "CoreJournalSql",
    "DriverJournalSql",
    "JournalSql",
    "TurnInsert",
]

SESSION_COLUMNS = (
    "tenant_id",
    "session_id",
    "revision",
    "metadata_json",
    "created_at",
    "updated_at",
    "last_sequence",
    "incarnation",
)
"""Column order of every session row the journal returns."""

TURN_COLUMNS = (
    "tenant_id",
    "session_id",
    "last_sequence",
    "first_sequence",
    "created_at",
    "item_ids_json",
    "kinds_json",
    "item_created_at_json",
    "payloads_json",
)

TurnInsert = tuple[str, str, int, int, str, str, str, str | None, str]
"""One turn row to insert, in :data:`TURN_COLUMNS` order."""

_READ_COLUMNS = (  # ``_journal.TurnRow``
    "first_sequence",
    "last_sequence",
    "created_at",
    "item_ids_json",
    "kinds_json",
    "item_created_at_json",
    "payloads_json",
)


class JournalSql(Protocol):
    """The hot-path statements; every row comes back positional.

    Session rows are in :data:`SESSION_COLUMNS` order, snapshot rows are
    ``(through_sequence, session_revision, state_json, created_at)``, turn rows are
    ``_journal.TurnRow`` and id rows ``(first_sequence, last_sequence, item_ids_json)``, all in
    sequence order.
    """

    def bump(
        self, conn: Any, tenant: str, session: str, expected: int, stamp: str, count: int
    ) -> Sequence[Any] | None:
        """CAS: bump revision and tail if the revision is ``expected``; the new row or None."""
        ...

    def insert_turn(self, conn: Any, row: TurnInsert) -> None:
        """Insert one turn row."""
        ...

    def session(
        self, conn: Any, tenant: str, session: str, *, lock: bool = False
    ) -> Sequence[Any] | None:
        """The session row, or None (``lock``: ``FOR UPDATE`` where the backend needs it)."""
        ...

    def newest_snapshot(self, conn: Any, tenant: str, session: str) -> Sequence[Any] | None:
        """The snapshot with the highest ``through_sequence``, or None."""
        ...

    def snapshot_revision(self, conn: Any, tenant: str, session: str) -> object:
        """The ``session_revision`` of the newest snapshot (unchecked), or None."""
        ...

    def turns(
        self, conn: Any, tenant: str, session: str, after: int, end: int | None
    ) -> list[Sequence[Any]]:
        """The turns holding items ``after < sequence <= end`` (``end`` None: to the tail)."""
        ...

    def turn_ids(self, conn: Any, tenant: str, session: str, after: int) -> list[Sequence[Any]]:
        """``(first_sequence, last_sequence, item_ids_json)`` of turns ending after ``after``."""
        ...

    def packed_turns(
        self, conn: Any, tenant: str, session: str, after: int
    ) -> Sequence[Any] | None:
        """The turns ending after ``after`` as one ``_journal_packed.PackedTurns`` row.

        None when the backend does not pack (then read :meth:`turns`).
        """
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
    f"INSERT INTO storage_v2_session_turns ({', '.join(TURN_COLUMNS)}) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SQL_SESSION = (
    f"SELECT {_SESSION_SELECT} FROM storage_v2_sessions WHERE tenant_id = ? AND session_id = ?"
)
_SQL_SNAPSHOT = (
    "SELECT through_sequence, session_revision, state_json, created_at "
    "FROM storage_v2_session_snapshots WHERE tenant_id = ? AND session_id = ? "
    "ORDER BY through_sequence DESC LIMIT 1"
)
_SQL_SNAPSHOT_REVISION = (
    "SELECT session_revision FROM storage_v2_session_snapshots "
    "WHERE tenant_id = ? AND session_id = ? ORDER BY through_sequence DESC LIMIT 1"
)
_TURNS_SELECT = f"SELECT {', '.join(_READ_COLUMNS)} FROM storage_v2_session_turns "
_SQL_TURNS = (
    _TURNS_SELECT + "WHERE tenant_id = ? AND session_id = ? AND last_sequence > ? "
    "ORDER BY last_sequence"
)
_SQL_TURNS_UNTIL = (
    _TURNS_SELECT + "WHERE tenant_id = ? AND session_id = ? AND last_sequence > ? "
    "AND last_sequence <= COALESCE((SELECT min(last_sequence) FROM storage_v2_session_turns "
    "WHERE tenant_id = ? AND session_id = ? AND last_sequence >= ?), ?) "
    "ORDER BY last_sequence"
)
_SQL_TURN_IDS = (
    "SELECT first_sequence, last_sequence, item_ids_json FROM storage_v2_session_turns "
    "WHERE tenant_id = ? AND session_id = ? AND last_sequence > ? ORDER BY last_sequence"
)
# The tail as one row: each column's values joined by SQLite into one JSON array text (in the
# primary key's order, which the decoder checks), so a load makes a few Python objects instead of
# seven per turn. ``created_at`` is joined inside one JSON string list (a stamp with a backslash or
# a quote is caught by the decoder); the last column counts rows holding a BLOB anywhere (``max``
# of values of mixed types is the BLOB if there is one), which the join would read as text.
_SQL_TURNS_PACKED = (
    "SELECT count(*), '[' || group_concat(first_sequence) || ']', "
    "'[' || group_concat(last_sequence) || ']', "
    "'[\"' || group_concat(created_at, '\",\"') || '\"]', "
    "'[' || group_concat(item_ids_json) || ']', '[' || group_concat(kinds_json) || ']', "
    "'[' || group_concat(payloads_json) || ']', count(item_created_at_json), "
    "total(typeof(max(first_sequence, last_sequence, created_at, item_ids_json, kinds_json, "
    "payloads_json)) = 'blob') "
    "FROM storage_v2_session_turns WHERE tenant_id = ? AND session_id = ? AND last_sequence > ?"
)
_NO_KEY = ("", "")  # tenant and session ids are never empty, so warm-up reads match no row


def warm_driver_connection(dbapi_connection: Any) -> None:
    """Prepare the read statements into ``sqlite3``'s per-connection statement cache.

    Only reads that match no row run here; the ``UPDATE``/``INSERT`` are prepared on first use
    (running them would need a write transaction).
    """
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(_SQL_SESSION, _NO_KEY).fetchall()
        cursor.execute(_SQL_SNAPSHOT, _NO_KEY).fetchall()
        cursor.execute(_SQL_SNAPSHOT_REVISION, _NO_KEY).fetchall()
        cursor.execute(_SQL_TURNS, (*_NO_KEY, 0)).fetchall()
        cursor.execute(_SQL_TURNS_UNTIL, (*_NO_KEY, 0, *_NO_KEY, 1, 1)).fetchall()
        cursor.execute(_SQL_TURN_IDS, (*_NO_KEY, 0)).fetchall()
        cursor.execute(_SQL_TURNS_PACKED, (*_NO_KEY, 0)).fetchall()
    finally:
        cursor.close()


class DriverJournalSql:
    """:class:`JournalSql` as driver SQL on a ``sqlite3.Connection`` (SQLite file)."""

    def bump(
        self, conn: Any, tenant: str, session: str, expected: int, stamp: str, count: int
    ) -> Sequence[Any] | None:
        """See :meth:`JournalSql.bump`."""
        cursor = conn.execute(_SQL_BUMP, (stamp, count, tenant, session, expected))
        row = cursor.fetchone()
        cursor.close()  # finishes the RETURNING statement
        return cast(Sequence[Any] | None, row)

    def insert_turn(self, conn: Any, row: TurnInsert) -> None:
        """See :meth:`JournalSql.insert_turn`."""
        conn.execute(_SQL_INSERT, row)

    def session(
        self, conn: Any, tenant: str, session: str, *, lock: bool = False
    ) -> Sequence[Any] | None:
        """See :meth:`JournalSql.session` (``BEGIN IMMEDIATE`` already locks the file)."""
        return cast(Sequence[Any] | None, conn.execute(_SQL_SESSION, (tenant, session)).fetchone())

    def newest_snapshot(self, conn: Any, tenant: str, session: str) -> Sequence[Any] | None:
        """See :meth:`JournalSql.newest_snapshot`."""
        row = conn.execute(_SQL_SNAPSHOT, (tenant, session)).fetchone()
        return cast(Sequence[Any] | None, row)

    def snapshot_revision(self, conn: Any, tenant: str, session: str) -> object:
        """See :meth:`JournalSql.snapshot_revision`."""
        row = conn.execute(_SQL_SNAPSHOT_REVISION, (tenant, session)).fetchone()
        return None if row is None else row[0]

    def turns(
        self, conn: Any, tenant: str, session: str, after: int, end: int | None
    ) -> list[Sequence[Any]]:
        """See :meth:`JournalSql.turns`."""
        if end is None:
            return conn.execute(_SQL_TURNS, (tenant, session, after)).fetchall()
        params = (tenant, session, after, tenant, session, end, end)
        return conn.execute(_SQL_TURNS_UNTIL, params).fetchall()

    def turn_ids(self, conn: Any, tenant: str, session: str, after: int) -> list[Sequence[Any]]:
        """See :meth:`JournalSql.turn_ids`."""
        return conn.execute(_SQL_TURN_IDS, (tenant, session, after)).fetchall()

    def packed_turns(
        self, conn: Any, tenant: str, session: str, after: int
    ) -> Sequence[Any] | None:
        """See :meth:`JournalSql.packed_turns`."""
        return cast(
            Sequence[Any], conn.execute(_SQL_TURNS_PACKED, (tenant, session, after)).fetchone()
        )

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
_INSERT_TURN = insert(session_turns)
_SESSION = select(*(sessions.c[name] for name in SESSION_COLUMNS)).where(_KEY)
_SESSION_LOCKED = _SESSION.with_for_update()
_IN_JOURNAL = (session_turns.c.tenant_id == bindparam("p_tenant")) & (
    session_turns.c.session_id == bindparam("p_session")
)
_AFTER = session_turns.c.last_sequence > bindparam("p_after")
_TURNS = (
    select(*(session_turns.c[name] for name in _READ_COLUMNS))
    .where(_IN_JOURNAL, _AFTER)
    .order_by(session_turns.c.last_sequence)
)
_END = bindparam("p_end", type_=Integer)
_TURN_HOLDING_END = (
    select(func.min(session_turns.c.last_sequence))
    .where(_IN_JOURNAL, session_turns.c.last_sequence >= _END)
    .scalar_subquery()
)
_TURNS_UNTIL = _TURNS.where(session_turns.c.last_sequence <= func.coalesce(_TURN_HOLDING_END, _END))
_TURN_IDS = (
    select(
        session_turns.c.first_sequence,
        session_turns.c.last_sequence,
        session_turns.c.item_ids_json,
    )
    .where(_IN_JOURNAL, _AFTER)
    .order_by(session_turns.c.last_sequence)
)
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

_NEWEST_SNAPSHOT_REVISION = (
    select(session_snapshots.c.session_revision)
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

    def insert_turn(self, conn: Connection, row: TurnInsert) -> None:
        """See :meth:`JournalSql.insert_turn`."""
        conn.execute(_INSERT_TURN, dict(zip(TURN_COLUMNS, row, strict=True)))

    def session(
        self, conn: Connection, tenant: str, session: str, *, lock: bool = False
    ) -> Sequence[Any] | None:
        """See :meth:`JournalSql.session` (``lock``: ``SELECT ... FOR UPDATE``)."""
        params = {"p_tenant": tenant, "p_session": session}
        return conn.execute(_SESSION_LOCKED if lock else _SESSION, params).first()

    def newest_snapshot(self, conn: Connection, tenant: str, session: str) -> Sequence[Any] | None:
        """See :meth:`JournalSql.newest_snapshot`."""
        params = {"p_tenant": tenant, "p_session": session}
        return conn.execute(_NEWEST_SNAPSHOT, params).first()

    def snapshot_revision(self, conn: Connection, tenant: str, session: str) -> object:
        """See :meth:`JournalSql.snapshot_revision`."""
        params = {"p_tenant": tenant, "p_session": session}
        row = conn.execute(_NEWEST_SNAPSHOT_REVISION, params).first()
        return None if row is None else row[0]

    def turns(
        self, conn: Connection, tenant: str, session: str, after: int, end: int | None
    ) -> list[Sequence[Any]]:
        """See :meth:`JournalSql.turns`."""
        params: dict[str, Any] = {"p_tenant": tenant, "p_session": session, "p_after": after}
        if end is None:
            return list(conn.execute(_TURNS, params).all())
        return list(conn.execute(_TURNS_UNTIL, {**params, "p_end": end}).all())

    def turn_ids(
        self, conn: Connection, tenant: str, session: str, after: int
    ) -> list[Sequence[Any]]:
        """See :meth:`JournalSql.turn_ids`."""
        params = {"p_tenant": tenant, "p_session": session, "p_after": after}
        return list(conn.execute(_TURN_IDS, params).all())

    def packed_turns(
        self, conn: Connection, tenant: str, session: str, after: int
    ) -> Sequence[Any] | None:
        """See :meth:`JournalSql.packed_turns`: None (Core reads :meth:`turns`)."""
        return None

    def warm(self, conn: Connection) -> None:
        """See :meth:`JournalSql.warm`: run each read once and compile the writes.

        The reads match no row (ids are never empty); compiling through ``conn`` fills the
        engine's compiled cache the first real statements hit.
        """
        self.session(conn, *_NO_KEY)
        self.newest_snapshot(conn, *_NO_KEY)
        self.snapshot_revision(conn, *_NO_KEY)
        self.turns(conn, *_NO_KEY, 0, None)
        self.turns(conn, *_NO_KEY, 0, 1)
        self.turn_ids(conn, *_NO_KEY, 0)
        # An UPDATE that matches no row: compiled and cached, nothing changes.
        self.bump(conn, *_NO_KEY, 0, "", 0)
