"""Budget ledgers and workflow runs across connections: the guards hold between two engines."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path

import pytest

from actoviq.core import JsonObject
from actoviq.runtime import BudgetLedgerLimits, StorageConflictError, StoreClock
from actoviq.storage.sqlite import SqliteStorage

POSTGRES_URL = os.environ.get("ACTOVIQ_TEST_POSTGRES_URL")


def asyncpg_url(url: str) -> str:
    """A plain ``postgresql://`` DSN for SQLAlchemy's asyncpg driver."""
    return url.replace("postgresql://", "postgresql+asyncpg://", 1) if "+" not in url else url


TARGETS = [
    "sqlite",
    pytest.param(
        "postgres",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(not POSTGRES_URL, reason="ACTOVIQ_TEST_POSTGRES_URL is not set"),
        ],
    ),
]


def _target(kind: str, tmp_path: Path) -> str:
    return str(tmp_path / "ledgers.db") if kind == "sqlite" else asyncpg_url(POSTGRES_URL or "")


@pytest.mark.parametrize("kind", TARGETS)
async def test_two_engines_never_overshoot_a_ledger(kind: str, tmp_path: Path) -> None:
    tenant = f"t-{uuid.uuid4().hex}"
    db = _target(kind, tmp_path)
    async with await SqliteStorage.open(db) as one, await SqliteStorage.open(db) as two:
        await one.ledgers.create(
            tenant_id=tenant,
            ledger_id="tree",
            limits=BudgetLedgerLimits(max_child_runs=5, max_total_tokens=100),
        )
        claims = await asyncio.gather(
            *(
                store.claim_child(tenant_id=tenant, ledger_id="tree")
                for store in [one.ledgers, two.ledgers] * 10
            )
        )
        assert sum(1 for c in claims if c.applied) == 5
        holds = await asyncio.gather(
            *(
                store.reserve(
                    tenant_id=tenant,
                    ledger_id="tree",
                    reservation_id=f"r{n}",
                    tokens=30,
                    cost_usd=0,
                )
                for n, store in enumerate([one.ledgers, two.ledgers] * 4)
            )
        )
        assert sum(1 for h in holds if h.applied) == 3  # 3 x 30 <= 100 < 4 x 30
        used = await asyncio.gather(
            *(
                store.record_usage(tenant_id=tenant, ledger_id="tree", tokens=7, cost_usd=0.5)
                for store in [one.ledgers, two.ledgers] * 6
            )
        )
        assert len(used) == 12
        final = await two.ledgers.get(tenant_id=tenant, ledger_id="tree")
        assert final is not None
        assert (final.child_runs_started, final.reserved_tokens) == (5, 90)
        assert (final.total_tokens_used, final.cost_usd_used) == (84, 6.0)
        assert len(await one.ledgers.list_reservations(tenant_id=tenant, ledger_id="tree")) == 3


@pytest.mark.parametrize("kind", TARGETS)
async def test_workflow_node_writes_are_fenced_across_engines(kind: str, tmp_path: Path) -> None:
    tenant = f"t-{uuid.uuid4().hex}"
    db = _target(kind, tmp_path)
    stamp = "2026-01-01T00:00:00.000Z"
    run: JsonObject = {
        "schemaVersion": 1,
        "runId": "w",
        "graphId": "g",
        "revision": 0,
        "status": "running",
        "leaseOwner": "a",
        "leaseExpiresAt": 1,
        "createdAt": stamp,
        "updatedAt": stamp,
    }
    async with await SqliteStorage.open(db) as one, await SqliteStorage.open(db) as two:
        await one.workflows.create_run(tenant_id=tenant, record=run)
        taken: JsonObject = {**run, "revision": 1, "leaseOwner": "b"}
        assert await two.workflows.compare_and_set_run(
            tenant_id=tenant, run_id="w", expected_revision=0, record=taken
        )
        node: JsonObject = {
            "schemaVersion": 1,
            "runId": "w",
            "nodeId": "n",
            "iteration": 0,
            "revision": 0,
            "status": "completed",
            "createdAt": stamp,
            "updatedAt": stamp,
        }
        with pytest.raises(StorageConflictError):
            await one.workflows.put_node(
                tenant_id=tenant, run_id="w", expected_revision=None, record=node, lease_owner="a"
            )
        await two.workflows.put_node(
            tenant_id=tenant, run_id="w", expected_revision=None, record=node, lease_owner="b"
        )
        assert [n.status for n in await one.workflows.list_nodes(tenant_id=tenant, run_id="w")] == [
            "completed"
        ]
        # The lease clock: PostgreSQL answers with the server's clock, SQLite with this machine's.
        before = int(time.time() * 1000)
        assert isinstance(one.workflows, StoreClock)
        assert isinstance(one.children, StoreClock)
        now = await one.workflows.clock_ms()
        assert abs(now - before) < 60_000
        assert await one.children.clock_ms() >= now
