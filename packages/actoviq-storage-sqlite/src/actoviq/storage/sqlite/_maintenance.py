"""SQL side of the JSON v1 migration: ledger reads, chunk cutover, rollback by ledger."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import delete, insert, select, text

from actoviq.runtime.stores import SessionRevisionConflictError, StorageDataError
from actoviq.runtime.stores.rules import session_resource
from actoviq.runtime.stores.validation import dump_json
from actoviq.storage.sqlite._engine import Database
from actoviq.storage.sqlite._journal import prepare_turn
from actoviq.storage.sqlite._tables import (
    json_v1_migrations,
    resume_append_only_triggers,
    session_snapshots,
    session_turns,
    sessions,
    suspend_append_only_triggers,
)
from actoviq.storage.sqlite.legacy import LegacySessionFile

TURN_ITEMS = 1000  # items per journal turn row when a legacy session is written


async def read_ledger(
    db: Database, tenant_id: str, source_id: str
) -> dict[str, tuple[str, str, int]]:
    """``source_key -> (content_hash, session_id, item_count)`` for one source."""
    async with db.read() as conn:
        rows = await conn.execute(
            select(
                json_v1_migrations.c.source_key,
                json_v1_migrations.c.content_hash,
                json_v1_migrations.c.session_id,
                json_v1_migrations.c.item_count,
            )
            .where(json_v1_migrations.c.tenant_id == tenant_id)
            .where(json_v1_migrations.c.source_id == source_id)
        )
        return {r.source_key: (r.content_hash, r.session_id, int(r.item_count)) for r in rows}


async def cutover_chunk(
    db: Database, tenant_id: str, source_id: str, plans: Sequence[LegacySessionFile], stamp: str
) -> list[str]:
    """Write one chunk of sessions, items and ledger rows in ONE transaction.

    Returns the source keys written (already-migrated identical ones are skipped).

    Raises:
        SessionRevisionConflictError: a target session exists (the chunk rolls back).
        StorageDataError: a ledger row for the same key has other content.
    """
    written: list[str] = []
    async with db.write() as conn:
        for plan in plans:
            seen = (
                await conn.execute(
                    select(json_v1_migrations.c.content_hash, json_v1_migrations.c.session_id)
                    .where(json_v1_migrations.c.tenant_id == tenant_id)
                    .where(json_v1_migrations.c.source_id == source_id)
                    .where(json_v1_migrations.c.source_key == plan.source_key)
                )
            ).first()
            if seen is not None:
                if (seen.content_hash, seen.session_id) == (plan.content_hash, plan.session_id):
                    continue
                raise StorageDataError(
                    f"Previously migrated JSON v1 source changed: {plan.path.name}"
                )
            existing = (
                await conn.execute(
                    select(sessions.c.revision)
                    .where(sessions.c.tenant_id == tenant_id)
                    .where(sessions.c.session_id == plan.session_id)
                )
            ).first()
            if existing is not None:
                raise SessionRevisionConflictError(
                    session_resource(tenant_id, plan.session_id),
                    expected_revision=None,
                    actual_revision=int(existing.revision),
                )
            count = len(plan.items)
            await conn.execute(
                insert(sessions).values(
                    tenant_id=tenant_id,
                    session_id=plan.session_id,
                    revision=1 if count else 0,
                    metadata_json=dump_json(plan.metadata),
                    created_at=plan.created_at,
                    updated_at=plan.created_at,
                    last_sequence=count,
                    incarnation=uuid.uuid4().hex,
                )
            )
            for first in range(0, count, TURN_ITEMS):
                chunk = plan.items[first : first + TURN_ITEMS]
                turn = prepare_turn(chunk, plan.created_at)
                await conn.execute(
                    insert(session_turns).values(
                        tenant_id=tenant_id,
                        session_id=plan.session_id,
                        last_sequence=first + len(chunk),
                        first_sequence=first + 1,
                        created_at=plan.created_at,
                        item_ids_json=turn.ids_json,
                        kinds_json=turn.kinds_json,
                        item_created_at_json=turn.created_json,
                        payloads_json=turn.payloads_json,
                    )
                )
            await conn.execute(
                insert(json_v1_migrations).values(
                    tenant_id=tenant_id,
                    source_id=source_id,
                    source_key=plan.source_key,
                    content_hash=plan.content_hash,
                    session_id=plan.session_id,
                    item_count=count,
                    migrated_at=stamp,
                )
            )
            written.append(plan.source_key)
    return written


async def rollback_ledger(
    db: Database, tenant_id: str, source_id: str, *, dry_run: bool, force: bool
) -> list[str]:
    """Delete the ledger's sessions (journal, snapshots, rows) and ledger rows; returns ids."""
    async with db.write() as conn:
        rows = (
            await conn.execute(
                select(
                    json_v1_migrations.c.source_key,
                    json_v1_migrations.c.session_id,
                    json_v1_migrations.c.item_count,
                    sessions.c.revision,
                )
                .select_from(
                    json_v1_migrations.outerjoin(
                        sessions,
                        (sessions.c.tenant_id == json_v1_migrations.c.tenant_id)
                        & (sessions.c.session_id == json_v1_migrations.c.session_id),
                    )
                )
                .where(json_v1_migrations.c.tenant_id == tenant_id)
                .where(json_v1_migrations.c.source_id == source_id)
                .order_by(json_v1_migrations.c.source_key)
            )
        ).all()
        changed = [
            r.session_id
            for r in rows
            if r.revision is not None and r.revision != (1 if r.item_count else 0)
        ]
        if changed and not force:
            raise StorageDataError(
                "Sessions changed since the migration (use force to remove them anyway): "
                + ", ".join(changed)
            )
        ids = [r.session_id for r in rows]
        if dry_run or not ids:
            return ids
        for statement in suspend_append_only_triggers(db.dialect):
            await conn.execute(text(statement))
        for table in (session_turns, session_snapshots, sessions):
            await conn.execute(
                delete(table)
                .where(table.c.tenant_id == tenant_id)
                .where(table.c.session_id.in_(ids))
            )
        await conn.execute(
            delete(json_v1_migrations)
            .where(json_v1_migrations.c.tenant_id == tenant_id)
            .where(json_v1_migrations.c.source_id == source_id)
        )
        for statement in resume_append_only_triggers(db.dialect):
            await conn.execute(text(statement))
    return ids


async def delete_session(db: Database, tenant_id: str, session_id: str) -> bool:
    """Delete one session with its journal and snapshots in one maintenance transaction.

    Returns False when the session does not exist. The append-only triggers are suspended for
    this transaction only (as for a rollback); migration ledger rows are kept, so ``verify``
    reports a deleted migrated session as missing.
    """
    async with db.write() as conn:
        found = (
            await conn.execute(
                select(sessions.c.session_id)
                .where(sessions.c.tenant_id == tenant_id)
                .where(sessions.c.session_id == session_id)
            )
        ).first()
        if found is None:
            return False
        for statement in suspend_append_only_triggers(db.dialect):
            await conn.execute(text(statement))
        for table in (session_turns, session_snapshots, sessions):
            await conn.execute(
                delete(table)
                .where(table.c.tenant_id == tenant_id)
                .where(table.c.session_id == session_id)
            )
        for statement in resume_append_only_triggers(db.dialect):
            await conn.execute(text(statement))
    return True
