"""SQLAlchemy Core tables (spec 04 §3.3 layout, plus the durable-children table of §8.1.2).

This is the head schema (storage-v2 version 2, Alembic revision 0006). Version 1 followed the
reference's layout (one journal row per session item, frozen in ``migrations/schema_v1.py``);
decision D7 makes the layout ours, and version 2 stores the journal as one row per *append*
(``storage_v2_session_turns``): the item ids, kinds and payloads of the append as JSON arrays.
An append of 1,000 items is one row insert instead of 1,000 row and unique-index inserts, and a
load reads one row per append. Item-id uniqueness, which the unique index used to enforce, is
checked by the session store inside the append transaction (``_id_index``).

The schema marker is 2, so a version-1 reader (the TypeScript SDK) refuses the file instead of
misreading it. JSON is TEXT (canonical text round-trips exactly; JSONB would reorder keys).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    Double,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
)

SCHEMA_VERSION = 2
"""The cross-language ``storage_v2_schema.version`` marker this code writes and accepts."""

metadata = MetaData()

schema_table = Table(
    "storage_v2_schema",
    metadata,
    Column("singleton", Integer, primary_key=True, autoincrement=False),
    Column("version", Integer, nullable=False),
    CheckConstraint("singleton = 1", name="storage_v2_schema_singleton"),
)

sessions = Table(
    "storage_v2_sessions",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("metadata_json", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    Column("last_sequence", BigInteger, nullable=False),
    # A fresh random id per created session: with ``last_sequence`` it names one journal state
    # (a session deleted and created again restarts its sequences under another incarnation).
    Column("incarnation", Text, nullable=False, server_default="schema-v1"),
    PrimaryKeyConstraint("tenant_id", "session_id"),
    CheckConstraint("revision >= 0", name="storage_v2_sessions_revision"),
    CheckConstraint("last_sequence >= 0", name="storage_v2_sessions_last_sequence"),
)
Index("storage_v2_sessions_updated", sessions.c.tenant_id, sessions.c.updated_at)

session_turns = Table(
    "storage_v2_session_turns",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    # The append's items have sequences first_sequence..last_sequence (no gaps between turns).
    Column("last_sequence", BigInteger, nullable=False),
    Column("first_sequence", BigInteger, nullable=False),
    Column("created_at", Text, nullable=False),
    Column("item_ids_json", Text, nullable=False),  # JSON array of the item ids
    Column("kinds_json", Text, nullable=False),  # one JSON string (every item) or an array
    Column("item_created_at_json", Text, nullable=True),  # NULL: every item has created_at
    Column("payloads_json", Text, nullable=False),  # JSON array of the payload objects
    PrimaryKeyConstraint("tenant_id", "session_id", "last_sequence"),
    ForeignKeyConstraint(
        ["tenant_id", "session_id"], [sessions.c.tenant_id, sessions.c.session_id]
    ),
    CheckConstraint(
        "first_sequence > 0 AND last_sequence >= first_sequence",
        name="storage_v2_session_turns_sequences",
    ),
)

session_snapshots = Table(
    "storage_v2_session_snapshots",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("through_sequence", BigInteger, nullable=False),
    Column("session_revision", BigInteger, nullable=False),
    Column("state_json", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "session_id", "through_sequence"),
    ForeignKeyConstraint(
        ["tenant_id", "session_id"], [sessions.c.tenant_id, sessions.c.session_id]
    ),
)

checkpoints = Table(
    "storage_v2_checkpoints",
    metadata,
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
    # The execution holding the run (a resume claim) and when its lease ends (epoch ms): 0004.
    Column("lease_owner", Text, nullable=True),
    Column("lease_expires_at", BigInteger, nullable=True),
    PrimaryKeyConstraint("tenant_id", "checkpoint_id"),
)
Index(
    "storage_v2_checkpoints_run",
    checkpoints.c.tenant_id,
    checkpoints.c.run_id,
    checkpoints.c.created_at,
)

memory = Table(
    "storage_v2_memory",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("memory_id", Text, nullable=False),
    Column("namespace", Text, nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("value_json", Text, nullable=False),
    Column("metadata_json", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "memory_id"),
)
Index("storage_v2_memory_namespace", memory.c.tenant_id, memory.c.namespace, memory.c.updated_at)

artifacts = Table(
    "storage_v2_artifacts",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("artifact_id", Text, nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("media_type", Text, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("sha256", Text, nullable=False),
    Column("uri", Text, nullable=True),
    Column("metadata_json", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "artifact_id"),
)
Index("storage_v2_artifacts_updated", artifacts.c.tenant_id, artifacts.c.updated_at)
# Blob garbage collection asks which digests any record (of any tenant) references: 0006.
Index("storage_v2_artifacts_sha256", artifacts.c.sha256)

# Artifact bytes in the database (0006): one row per blob, its content in chunk rows. A blob being
# written has ``sha256`` NULL (its chunks arrive in small transactions); the last transaction
# names it, or drops it in favour of an existing blob with the same digest. ``blob_seq`` never
# changes, so naming a blob never rewrites its chunks.
artifact_blobs = Table(
    "storage_v2_artifact_blobs",
    metadata,
    Column(
        "blob_seq",
        BigInteger().with_variant(Integer(), "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    Column("sha256", Text, nullable=True),
    Column("size", BigInteger, nullable=False),
    Column("chunk_count", BigInteger, nullable=False),
    Column("touched_at", BigInteger, nullable=False),  # epoch ms: garbage collection's grace
    Column("created_at", Text, nullable=False),
    CheckConstraint("size >= 0 AND chunk_count >= 0", name="storage_v2_artifact_blobs_counts"),
)
Index("storage_v2_artifact_blobs_sha256", artifact_blobs.c.sha256, unique=True)
Index("storage_v2_artifact_blobs_touched", artifact_blobs.c.touched_at)

artifact_chunks = Table(
    "storage_v2_artifact_chunks",
    metadata,
    Column("blob_seq", BigInteger().with_variant(Integer(), "sqlite"), nullable=False),
    Column("chunk_index", BigInteger, nullable=False),
    Column("data", LargeBinary, nullable=False),
    PrimaryKeyConstraint("blob_seq", "chunk_index"),
    ForeignKeyConstraint(["blob_seq"], [artifact_blobs.c.blob_seq]),
)

durable_children = Table(
    "storage_v2_durable_children",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("child_id", Text, nullable=False),
    Column("parent_run_id", Text, nullable=True),
    Column("revision", BigInteger, nullable=False),
    Column("status", Text, nullable=False),
    Column("lease_owner", Text, nullable=True),
    Column("lease_expires_at", BigInteger, nullable=True),
    Column("heartbeat_at", BigInteger, nullable=True),
    Column("record_json", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "child_id"),
)
Index(
    "storage_v2_durable_children_parent",
    durable_children.c.tenant_id,
    durable_children.c.parent_run_id,
    durable_children.c.created_at,
)
Index(
    "storage_v2_durable_children_lease",
    durable_children.c.tenant_id,
    durable_children.c.status,
    durable_children.c.lease_expires_at,
)

# Migration 0005: the durable budget ledger of a run tree (one row updated atomically, spec 04
# §8.2-13) and the reservations running children hold on it.
budget_ledgers = Table(
    "storage_v2_budget_ledgers",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("ledger_id", Text, nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("max_child_runs", BigInteger, nullable=True),  # NULL: unbounded
    Column("max_depth", BigInteger, nullable=True),
    Column("max_total_tokens", BigInteger, nullable=True),
    Column("max_cost_usd", Double, nullable=True),
    Column("child_runs_started", BigInteger, nullable=False),
    Column("total_tokens_used", BigInteger, nullable=False),
    Column("cost_usd_used", Double, nullable=False),
    Column("reserved_tokens", BigInteger, nullable=False),
    Column("reserved_cost_usd", Double, nullable=False),
    Column("metadata_json", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "ledger_id"),
)

budget_reservations = Table(
    "storage_v2_budget_reservations",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("ledger_id", Text, nullable=False),
    Column("reservation_id", Text, nullable=False),
    Column("tokens", BigInteger, nullable=False),
    Column("cost_usd", Double, nullable=False),
    Column("expires_at", BigInteger, nullable=True),  # epoch ms; NULL: held until released
    Column("created_at", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "ledger_id", "reservation_id"),
    ForeignKeyConstraint(
        ["tenant_id", "ledger_id"], [budget_ledgers.c.tenant_id, budget_ledgers.c.ledger_id]
    ),
)

# Migration 0005: durable workflow-graph runs (spec 04 §8.2-21): the run record (status, lease)
# and one row per node execution (``iteration`` counts loop rounds).
workflow_runs = Table(
    "storage_v2_workflow_runs",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("graph_id", Text, nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("status", Text, nullable=False),
    Column("lease_owner", Text, nullable=True),
    Column("lease_expires_at", BigInteger, nullable=True),
    Column("record_json", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "run_id"),
)
Index(
    "storage_v2_workflow_runs_status",
    workflow_runs.c.tenant_id,
    workflow_runs.c.status,
    workflow_runs.c.created_at,
)
Index(
    "storage_v2_workflow_runs_graph",
    workflow_runs.c.tenant_id,
    workflow_runs.c.graph_id,
    workflow_runs.c.created_at,
)

workflow_nodes = Table(
    "storage_v2_workflow_nodes",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("node_id", Text, nullable=False),
    Column("iteration", BigInteger, nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("status", Text, nullable=False),
    Column("record_json", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "run_id", "node_id", "iteration"),
    ForeignKeyConstraint(
        ["tenant_id", "run_id"], [workflow_runs.c.tenant_id, workflow_runs.c.run_id]
    ),
)

json_v1_migrations = Table(
    "storage_v2_json_v1_migrations",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("source_id", Text, nullable=False),
    Column("source_key", Text, nullable=False),
    Column("content_hash", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("item_count", BigInteger, nullable=False, server_default="0"),
    Column("migrated_at", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "source_id", "source_key"),
)

APPEND_ONLY_TABLES = ("storage_v2_session_turns", "storage_v2_session_snapshots")


def create_append_only_triggers(
    dialect: str, tables: tuple[str, ...] = APPEND_ONLY_TABLES
) -> list[str]:
    """DDL that makes journal and snapshot rows append-only (BEFORE UPDATE/DELETE raise)."""
    if dialect == "sqlite":
        return [
            f"CREATE TRIGGER IF NOT EXISTS {table}_no_{action.lower()} BEFORE {action} "
            f"ON {table} BEGIN SELECT RAISE(ABORT, '{table} rows are append-only'); END"
            for table in tables
            for action in ("UPDATE", "DELETE")
        ]
    if dialect == "postgresql":
        return [
            "CREATE OR REPLACE FUNCTION storage_v2_append_only() RETURNS trigger AS $$ "
            "BEGIN RAISE EXCEPTION '% rows are append-only', TG_TABLE_NAME; END $$ "
            "LANGUAGE plpgsql",
            *(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION storage_v2_append_only()"
                for table in tables
            ),
        ]
    return []


def suspend_append_only_triggers(
    dialect: str, tables: tuple[str, ...] = APPEND_ONLY_TABLES
) -> list[str]:
    """DDL run in a maintenance transaction before deleting journal rows (migration rollback)."""
    if dialect == "sqlite":
        return [
            f"DROP TRIGGER IF EXISTS {table}_no_{action.lower()}"
            for table in tables
            for action in ("UPDATE", "DELETE")
        ]
    if dialect == "postgresql":
        return [f"ALTER TABLE {table} DISABLE TRIGGER {table}_append_only" for table in tables]
    return []


def resume_append_only_triggers(
    dialect: str, tables: tuple[str, ...] = APPEND_ONLY_TABLES
) -> list[str]:
    """DDL that restores the triggers at the end of the maintenance transaction."""
    if dialect == "postgresql":
        return [f"ALTER TABLE {table} ENABLE TRIGGER {table}_append_only" for table in tables]
    return create_append_only_triggers(dialect, tables)
