"""The storage-v2 version-1 schema, frozen for the migrations that create and convert it.

``_tables`` describes the head schema; revision 0001 must keep creating exactly what it created
when it shipped, so the tables that later revisions changed are declared here as they were
(one journal row per session item, no session incarnation; checkpoints without the 0004 lease
columns) and every other table is copied from the head (they have not changed since version 1),
except the tables later revisions added (0005: ledgers and workflow runs; 0006: artifact blobs)
and the indexes they added.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKeyConstraint,
    Index,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
)

from actoviq.storage.sqlite import _tables as head

__all__ = [
    "APPEND_ONLY_TABLES_V1",
    "checkpoints_v1",
    "metadata_v1",
    "session_items_v1",
    "sessions_v1",
]

metadata_v1 = MetaData()

sessions_v1 = Table(
    "storage_v2_sessions",
    metadata_v1,
    Column("tenant_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("metadata_json", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    Column("last_sequence", BigInteger, nullable=False),
    PrimaryKeyConstraint("tenant_id", "session_id"),
    CheckConstraint("revision >= 0", name="storage_v2_sessions_revision"),
    CheckConstraint("last_sequence >= 0", name="storage_v2_sessions_last_sequence"),
)
Index("storage_v2_sessions_updated", sessions_v1.c.tenant_id, sessions_v1.c.updated_at)

session_items_v1 = Table(
    "storage_v2_session_items",
    metadata_v1,
    Column("tenant_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("sequence", BigInteger, nullable=False),
    Column("item_id", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("payload_json", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "session_id", "sequence"),
    UniqueConstraint("tenant_id", "session_id", "item_id"),
    ForeignKeyConstraint(
        ["tenant_id", "session_id"], [sessions_v1.c.tenant_id, sessions_v1.c.session_id]
    ),
    CheckConstraint("sequence > 0", name="storage_v2_session_items_sequence"),
)

checkpoints_v1 = Table(
    "storage_v2_checkpoints",
    metadata_v1,
    Column("tenant_id", Text, nullable=False),
    Column("checkpoint_id", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("session_id", Text, nullable=True),
    Column("revision", BigInteger, nullable=False),
    Column("status", Text, nullable=False),
    Column("state_json", Text, nullable=False),
    Column("interruption_json", Text, nullable=True),
    Column("pending_side_effects_json", Text, nullable=False),
    Column("trace_context_json", Text, nullable=True),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "checkpoint_id"),
)
Index(
    "storage_v2_checkpoints_run",
    checkpoints_v1.c.tenant_id,
    checkpoints_v1.c.run_id,
    checkpoints_v1.c.created_at,
)

_CHANGED_SINCE_V1 = ("storage_v2_sessions", "storage_v2_session_turns", "storage_v2_checkpoints")
_ADDED_SINCE_V1 = (  # created by 0005
    "storage_v2_budget_ledgers",
    "storage_v2_budget_reservations",
    "storage_v2_workflow_runs",
    "storage_v2_workflow_nodes",
    # created by 0006
    "storage_v2_artifact_blobs",
    "storage_v2_artifact_chunks",
)
_INDEXES_ADDED_SINCE_V1 = ("storage_v2_artifacts_sha256",)  # created by 0006
for _table in head.metadata.sorted_tables:
    if _table.name not in _CHANGED_SINCE_V1 + _ADDED_SINCE_V1:
        _copy = _table.to_metadata(metadata_v1)
        for _index in list(_copy.indexes):
            if _index.name in _INDEXES_ADDED_SINCE_V1:
                _copy.indexes.discard(_index)

APPEND_ONLY_TABLES_V1 = ("storage_v2_session_items", "storage_v2_session_snapshots")
