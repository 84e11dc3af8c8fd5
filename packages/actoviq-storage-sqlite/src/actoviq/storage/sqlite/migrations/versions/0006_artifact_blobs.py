"""Artifact bytes in the database: a blob table, its chunk table, and a digest index on records.

``storage_v2_artifact_blobs`` holds one row per content-addressed blob (``sha256`` NULL while it is
being written) and ``storage_v2_artifact_chunks`` its bytes in chunks; ``storage_v2_artifacts``
gets an index on ``sha256`` for garbage collection. New tables and an index only: the storage-v2
schema marker stays at version 2 and existing databases keep every row.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Create the blob and chunk tables and the indexes."""
    op.create_table(
        "storage_v2_artifact_blobs",
        sa.Column("blob_seq", _SEQ, primary_key=True, autoincrement=True),
        sa.Column("sha256", sa.Text(), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("chunk_count", sa.BigInteger(), nullable=False),
        sa.Column("touched_at", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.Text(), nullable=False),
        sa.CheckConstraint(
            "size >= 0 AND chunk_count >= 0", name="storage_v2_artifact_blobs_counts"
        ),
    )
    op.create_index(
        "storage_v2_artifact_blobs_sha256", "storage_v2_artifact_blobs", ["sha256"], unique=True
    )
    op.create_index(
        "storage_v2_artifact_blobs_touched", "storage_v2_artifact_blobs", ["touched_at"]
    )
    op.create_table(
        "storage_v2_artifact_chunks",
        sa.Column("blob_seq", _SEQ, nullable=False),
        sa.Column("chunk_index", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("blob_seq", "chunk_index"),
        sa.ForeignKeyConstraint(["blob_seq"], ["storage_v2_artifact_blobs.blob_seq"]),
    )
    op.create_index("storage_v2_artifacts_sha256", "storage_v2_artifacts", ["sha256"])


def downgrade() -> None:
    """Drop them (destroys the stored artifact bytes; records keep their digests)."""
    op.drop_index("storage_v2_artifacts_sha256", "storage_v2_artifacts")
    op.drop_table("storage_v2_artifact_chunks")
    op.drop_index("storage_v2_artifact_blobs_touched", "storage_v2_artifact_blobs")
    op.drop_index("storage_v2_artifact_blobs_sha256", "storage_v2_artifact_blobs")
    op.drop_table("storage_v2_artifact_blobs")
