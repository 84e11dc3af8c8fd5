"""Add durable budget ledgers and durable workflow-graph runs.

* ``storage_v2_budget_ledgers``: one row per run tree, updated atomically (``used + n <= limit``
  guards), shared by every worker of the tree (spec 04 §8.2-13), and
  ``storage_v2_budget_reservations``, the holds of running children.
* ``storage_v2_workflow_runs`` / ``storage_v2_workflow_nodes``: a durable graph run's record
  (status, lease) and one row per node execution (spec 04 §8.2-21).

New tables only: the storage-v2 schema marker stays at version 2.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def _text(name: str, *, nullable: bool = False) -> sa.Column[str]:
    return sa.Column(name, sa.Text(), nullable=nullable)


def _int(name: str, *, nullable: bool = False) -> sa.Column[int]:
    return sa.Column(name, sa.BigInteger(), nullable=nullable)


def _float(name: str, *, nullable: bool = False) -> sa.Column[float]:
    return sa.Column(name, sa.Double(), nullable=nullable)


def upgrade() -> None:
    """Create the four tables and their indexes."""
    op.create_table(
        "storage_v2_budget_ledgers",
        _text("tenant_id"),
        _text("ledger_id"),
        _int("revision"),
        _int("max_child_runs", nullable=True),
        _int("max_depth", nullable=True),
        _int("max_total_tokens", nullable=True),
        _float("max_cost_usd", nullable=True),
        _int("child_runs_started"),
        _int("total_tokens_used"),
        _float("cost_usd_used"),
        _int("reserved_tokens"),
        _float("reserved_cost_usd"),
        _text("metadata_json"),
        _text("created_at"),
        _text("updated_at"),
        sa.PrimaryKeyConstraint("tenant_id", "ledger_id"),
    )
    op.create_table(
        "storage_v2_budget_reservations",
        _text("tenant_id"),
        _text("ledger_id"),
        _text("reservation_id"),
        _int("tokens"),
        _float("cost_usd"),
        _int("expires_at", nullable=True),
        _text("created_at"),
        sa.PrimaryKeyConstraint("tenant_id", "ledger_id", "reservation_id"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "ledger_id"],
            ["storage_v2_budget_ledgers.tenant_id", "storage_v2_budget_ledgers.ledger_id"],
        ),
    )
    op.create_table(
        "storage_v2_workflow_runs",
        _text("tenant_id"),
        _text("run_id"),
        _text("graph_id"),
        _int("revision"),
        _text("status"),
        _text("lease_owner", nullable=True),
        _int("lease_expires_at", nullable=True),
        _text("record_json"),
        _text("created_at"),
        _text("updated_at"),
        sa.PrimaryKeyConstraint("tenant_id", "run_id"),
    )
    op.create_index(
        "storage_v2_workflow_runs_status",
        "storage_v2_workflow_runs",
        ["tenant_id", "status", "created_at"],
    )
    op.create_index(
        "storage_v2_workflow_runs_graph",
        "storage_v2_workflow_runs",
        ["tenant_id", "graph_id", "created_at"],
    )
    op.create_table(
        "storage_v2_workflow_nodes",
        _text("tenant_id"),
        _text("run_id"),
        _text("node_id"),
        _int("iteration"),
        _int("revision"),
        _text("status"),
        _text("record_json"),
        _text("created_at"),
        _text("updated_at"),
        sa.PrimaryKeyConstraint("tenant_id", "run_id", "node_id", "iteration"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "run_id"],
            ["storage_v2_workflow_runs.tenant_id", "storage_v2_workflow_runs.run_id"],
        ),
    )


def downgrade() -> None:
    """Drop them again (destroys ledgers and graph runs)."""
    op.drop_table("storage_v2_workflow_nodes")
    op.drop_index("storage_v2_workflow_runs_graph", table_name="storage_v2_workflow_runs")
    op.drop_index("storage_v2_workflow_runs_status", table_name="storage_v2_workflow_runs")
    op.drop_table("storage_v2_workflow_runs")
    op.drop_table("storage_v2_budget_reservations")
    op.drop_table("storage_v2_budget_ledgers")
