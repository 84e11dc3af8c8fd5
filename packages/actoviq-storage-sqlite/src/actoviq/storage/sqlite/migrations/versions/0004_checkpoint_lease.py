"""Add the checkpoint lease: who holds a run while it executes, and until when.

``AgentRuntime.resume`` claims a run before anything runs (decision D10: resume is exactly-once).
The claim is a lease on the checkpoint row: ``lease_owner`` names the execution and
``lease_expires_at`` (epoch milliseconds) when another execution may take a crashed run over.
Both are NULL when nobody holds the run. Nullable columns only: the storage-v2 schema marker stays
at version 2 and older rows read as unclaimed.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TABLE = "storage_v2_checkpoints"


def upgrade() -> None:
    """Add the two nullable lease columns."""
    with op.batch_alter_table(TABLE) as batch:
        batch.add_column(sa.Column("lease_owner", sa.Text(), nullable=True))
        batch.add_column(sa.Column("lease_expires_at", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    """Drop them again (leases are transient: nothing durable is lost)."""
    with op.batch_alter_table(TABLE) as batch:
        batch.drop_column("lease_expires_at")
        batch.drop_column("lease_owner")
