"""The storage-v2 schema version 1 (reference layout plus durable children and ledger counts).

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""

from __future__ import annotations

from alembic import op

from actoviq.storage.sqlite._tables import create_append_only_triggers
from actoviq.storage.sqlite.migrations.schema_v1 import APPEND_ONLY_TABLES_V1, metadata_v1

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Version 1 exactly as shipped (``schema_v1``); 0002 drops the tail index, 0003 converts the
# per-item journal to per-append turns.
TAIL_INDEX = "storage_v2_session_items_tail"


def upgrade() -> None:
    """Create the version-1 tables, the schema marker row and the append-only triggers."""
    bind = op.get_bind()
    metadata_v1.create_all(bind, checkfirst=True)
    op.create_index(
        TAIL_INDEX,
        "storage_v2_session_items",
        ["tenant_id", "session_id", "sequence"],
        if_not_exists=True,
    )
    op.execute(
        "INSERT INTO storage_v2_schema (singleton, version) "
        "SELECT 1, 1 WHERE NOT EXISTS (SELECT 1 FROM storage_v2_schema)"
    )
    for statement in create_append_only_triggers(bind.dialect.name, APPEND_ONLY_TABLES_V1):
        op.execute(statement)


def downgrade() -> None:
    """Drop every table (destroys the data; for tests and throwaway databases only)."""
    metadata_v1.drop_all(op.get_bind())
