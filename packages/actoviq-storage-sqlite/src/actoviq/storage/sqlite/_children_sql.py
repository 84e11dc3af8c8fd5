"""The durable-children store's hot statements, per connection kind.

A background child costs a create, a lease CAS and a settling CAS (plus reads). Like the session
journal (``_journal_sql``), they run through :meth:`Database.run_journal_write` /
``run_journal_read``: on a SQLite file the work gets the stdlib ``sqlite3`` connection (inline on
the event loop when the write lock is free, a worker thread otherwise) and runs pre-written SQL
with tuple parameters; elsewhere (PostgreSQL, ``:memory:``) it gets a SQLAlchemy ``Connection``
and runs the same statements in Core. Rows come back as ``(tenant_id, record_json, revision)``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection

from actoviq.storage.sqlite._tables import durable_children as C

__all__ = ["CHECKED_COLUMNS", "child_cas", "child_exists", "child_insert", "child_row"]

_TABLE = "storage_v2_durable_children"
_VALUE_COLUMNS = (
    "parent_run_id",
    "revision",
    "status",
    "lease_owner",
    "lease_expires_at",
    "heartbeat_at",
    "record_json",
    "created_at",
    "updated_at",
)
CHECKED_COLUMNS = (
    "parent_run_id",
    "status",
    "lease_owner",
    "lease_expires_at",
    "heartbeat_at",
    "created_at",
    "updated_at",
)
"""The indexed columns a read checks against the record they index (besides the revision)."""
_EXISTS = f"SELECT revision FROM {_TABLE} WHERE tenant_id = ? AND child_id = ?"
_ROW = (
    f"SELECT tenant_id, record_json, revision, child_id, {', '.join(CHECKED_COLUMNS)} "
    f"FROM {_TABLE} WHERE tenant_id = ? AND child_id = ?"
)
_INSERT = (
    f"INSERT INTO {_TABLE} (tenant_id, child_id, {', '.join(_VALUE_COLUMNS)}) "
    f"VALUES ({', '.join('?' * (len(_VALUE_COLUMNS) + 2))})"
)
_CAS = (
    f"UPDATE {_TABLE} SET {', '.join(f'{c} = ?' for c in _VALUE_COLUMNS)} "
    "WHERE tenant_id = ? AND child_id = ? AND revision = ?"
)


def child_exists(conn: Any, tenant_id: str, child_id: str) -> Any:
    """The stored revision of the child (None when absent), in a writer transaction."""
    if isinstance(conn, sqlite3.Connection):
        found = conn.execute(_EXISTS, (tenant_id, child_id)).fetchone()
        return None if found is None else found[0]
    core: Connection = conn
    found = core.execute(
        select(C.c.revision)
        .where(C.c.tenant_id == tenant_id, C.c.child_id == child_id)
        .with_for_update()
    ).first()
    return None if found is None else found[0]


def child_insert(conn: Any, tenant_id: str, child_id: str, values: Mapping[str, Any]) -> None:
    """Insert a child row."""
    if isinstance(conn, sqlite3.Connection):
        conn.execute(_INSERT, (tenant_id, child_id, *(values[c] for c in _VALUE_COLUMNS)))
        return
    core: Connection = conn
    core.execute(insert(C).values(tenant_id=tenant_id, child_id=child_id, **values))


def child_cas(
    conn: Any, tenant_id: str, child_id: str, expected_revision: int, values: Mapping[str, Any]
) -> bool:
    """Replace the row when its revision is ``expected_revision``; whether it did."""
    if isinstance(conn, sqlite3.Connection):
        params = (*(values[c] for c in _VALUE_COLUMNS), tenant_id, child_id, expected_revision)
        return conn.execute(_CAS, params).rowcount == 1
    core: Connection = conn
    changed = core.execute(
        update(C)
        .where(
            C.c.tenant_id == tenant_id,
            C.c.child_id == child_id,
            C.c.revision == expected_revision,
        )
        .values(**values)
    )
    return changed.rowcount == 1


def child_row(conn: Any, tenant_id: str, child_id: str) -> tuple[Any, ...] | None:
    """``(tenant_id, record_json, revision, child_id, *CHECKED_COLUMNS)`` of the child, or None."""
    if isinstance(conn, sqlite3.Connection):
        found = conn.execute(_ROW, (tenant_id, child_id)).fetchone()
        return None if found is None else tuple(found)
    core: Connection = conn
    columns = [C.c[name] for name in CHECKED_COLUMNS]
    row = core.execute(
        select(C.c.tenant_id, C.c.record_json, C.c.revision, C.c.child_id, *columns).where(
            C.c.tenant_id == tenant_id, C.c.child_id == child_id
        )
    ).first()
    return None if row is None else tuple(row)
