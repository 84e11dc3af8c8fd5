"""Drop ``storage_v2_session_items_tail``: it indexed exactly the primary key's columns.

Every journal insert maintained it for nothing (tail reads use the primary key), so appends get
cheaper. The storage-v2 schema marker stays at version 1: no table or column changed.

Revision ID: 0002
Revises: 0001
Create Date: 2026-02-01
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TAIL_INDEX = "storage_v2_session_items_tail"


def upgrade() -> None:
    """Drop the redundant tail index."""
    op.drop_index(TAIL_INDEX, table_name="storage_v2_session_items", if_exists=True)


def downgrade() -> None:
    """Recreate the index exactly as 0001 did."""
    op.create_index(
        TAIL_INDEX,
        "storage_v2_session_items",
        ["tenant_id", "session_id", "sequence"],
        if_not_exists=True,
    )
