"""Store the session journal as one row per append (storage-v2 schema version 2).

Version 1 kept one ``storage_v2_session_items`` row per item under a unique (tenant, session,
item id) index: an append of N items was N row and index inserts, a load N rows. Version 2 keeps
one ``storage_v2_session_turns`` row per append (ids, kinds and payloads as JSON arrays) and a
random ``incarnation`` per session row (see ``_tables``). The upgrade converts the journal in
order, packing each session's consecutive items into turns of at most ``TURN_ITEMS``; the
downgrade explodes the turns back into item rows. Payload texts are copied verbatim.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from actoviq.storage.sqlite._tables import create_append_only_triggers, session_turns
from actoviq.storage.sqlite.migrations.schema_v1 import APPEND_ONLY_TABLES_V1, session_items_v1

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TURN_ITEMS = 1000
_BATCH = 5000  # rows fetched and inserted per round trip


def _dump(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _turn(tenant: str, session: str, rows: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """One turn row from consecutive item rows ``(sequence, item_id, kind, payload, created)``."""
    kinds = [row[2] for row in rows]
    stamps = [row[4] for row in rows]
    return {
        "tenant_id": tenant,
        "session_id": session,
        "first_sequence": rows[0][0],
        "last_sequence": rows[-1][0],
        "created_at": stamps[0],
        "item_ids_json": _dump([row[1] for row in rows]),
        "kinds_json": _dump(kinds[0] if len(set(kinds)) == 1 else kinds),
        "item_created_at_json": None if len(set(stamps)) == 1 else _dump(stamps),
        "payloads_json": "[" + ",".join(row[3] for row in rows) + "]",
    }


def _turns(rows: Iterator[Sequence[Any]]) -> Iterator[dict[str, Any]]:
    """Group ``(tenant, session, sequence, ...)`` rows in journal order into turn rows."""
    key: tuple[str, str] | None = None
    pending: list[Sequence[Any]] = []
    for row in rows:
        row_key = (row[0], row[1])
        if pending and (row_key != key or len(pending) == TURN_ITEMS):
            assert key is not None
            yield _turn(*key, pending)
            pending = []
        key = row_key
        pending.append(row[2:])
    if pending:
        assert key is not None
        yield _turn(*key, pending)


def _insert_in_batches(
    bind: sa.Connection, table: sa.Table, rows: Iterator[dict[str, Any]]
) -> None:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= _BATCH // 10:
            bind.execute(sa.insert(table), batch)
            batch = []
    if batch:
        bind.execute(sa.insert(table), batch)


def upgrade() -> None:
    """Add the incarnation column and the turns table, convert the journal, drop the items."""
    bind = op.get_bind()
    op.add_column(
        "storage_v2_sessions",
        sa.Column("incarnation", sa.Text, nullable=False, server_default="schema-v1"),
    )
    session_turns.create(bind)
    items = session_items_v1.c
    source = bind.execute(
        sa.select(
            items.tenant_id,
            items.session_id,
            items.sequence,
            items.item_id,
            items.kind,
            items.payload_json,
            items.created_at,
        ).order_by(items.tenant_id, items.session_id, items.sequence)
    )
    rows = [tuple(row) for row in source]  # fetched before the inserts reuse the connection
    _insert_in_batches(bind, session_turns, _turns(iter(rows)))
    op.drop_table("storage_v2_session_items")  # its triggers go with it
    for statement in create_append_only_triggers(bind.dialect.name, ("storage_v2_session_turns",)):
        op.execute(statement)
    op.execute("UPDATE storage_v2_schema SET version = 2")


def _items(rows: Sequence[Sequence[Any]]) -> Iterator[dict[str, Any]]:
    for tenant, session, first, stamp, ids_json, kinds_json, stamps_json, payloads_json in rows:
        ids = json.loads(ids_json)
        kinds = json.loads(kinds_json)
        stamps = json.loads(stamps_json) if stamps_json is not None else [stamp] * len(ids)
        # Payload texts are re-dumped compactly: the canonical form the version-1 writer used.
        for offset, payload in enumerate(json.loads(payloads_json)):
            yield {
                "tenant_id": tenant,
                "session_id": session,
                "sequence": first + offset,
                "item_id": ids[offset],
                "kind": kinds if isinstance(kinds, str) else kinds[offset],
                "payload_json": _dump(payload),
                "created_at": stamps[offset],
            }


def downgrade() -> None:
    """Explode the turns back into one item row each and drop the version-2 additions."""
    bind = op.get_bind()
    session_items_v1.create(bind)
    turns = session_turns.c
    rows = bind.execute(
        sa.select(
            turns.tenant_id,
            turns.session_id,
            turns.first_sequence,
            turns.created_at,
            turns.item_ids_json,
            turns.kinds_json,
            turns.item_created_at_json,
            turns.payloads_json,
        ).order_by(turns.tenant_id, turns.session_id, turns.last_sequence)
    ).all()
    _insert_in_batches(bind, session_items_v1, _items(rows))
    op.drop_table("storage_v2_session_turns")
    op.drop_column("storage_v2_sessions", "incarnation")
    for statement in create_append_only_triggers(bind.dialect.name, APPEND_ONLY_TABLES_V1[:1]):
        op.execute(statement)
    op.execute("UPDATE storage_v2_schema SET version = 1")
