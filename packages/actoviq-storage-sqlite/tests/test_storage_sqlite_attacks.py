"""Adversarial probes of the SQL stores: a durable child or workflow row whose indexed columns
were changed behind the store's back (or whose record names another child) fails closed on
every read, on SQLite and on PostgreSQL, instead of answering one thing to a read and another to
the queries by those columns (lists, lease recovery)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from actoviq.runtime.stores import StorageDataError
from actoviq.storage.sqlite import SqliteStorage

from .conftest import POSTGRES_URL, asyncpg_url

_T0 = "2026-01-01T00:00:00.000Z"


_BACKENDS = [
    "sqlite",
    pytest.param(
        "postgres",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(not POSTGRES_URL, reason="ACTOVIQ_TEST_POSTGRES_URL is not set"),
        ],
    ),
]


def _record(child_id: str) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "childId": child_id,
        "revision": 0,
        "parent": {"runId": "parent"},
        "agentId": "worker",
        "input": [],
        "metadata": {},
        "status": "queued",
        "attempts": 0,
        "createdAt": _T0,
        "updatedAt": _T0,
    }


@pytest.mark.parametrize("backend", _BACKENDS)
@pytest.mark.parametrize(
    "tamper",
    [
        "status = 'completed'",
        "lease_owner = 'worker-x', lease_expires_at = 1",
        "parent_run_id = 'other'",
        'record_json = REPLACE(record_json, \'"childId":"c1"\', \'"childId":"evil"\')',
    ],
)
async def test_a_child_row_changed_behind_the_store_fails_closed(
    backend: str, tamper: str, tmp_path: Path
) -> None:
    target = str(tmp_path / "c.db") if backend == "sqlite" else asyncpg_url(POSTGRES_URL or "")
    tenant = f"t-{uuid.uuid4().hex}"
    async with await SqliteStorage.open(target) as storage:
        await storage.children.create(tenant_id=tenant, record=_record("c1"))
        assert (await storage.children.get(tenant_id=tenant, child_id="c1")) is not None
        async with storage.database.write() as conn:
            await conn.execute(
                text(f"UPDATE storage_v2_durable_children SET {tamper} WHERE tenant_id = :t"),
                {"t": tenant},
            )
        with pytest.raises(StorageDataError, match="does not match its row"):
            await storage.children.get(tenant_id=tenant, child_id="c1")
        with pytest.raises(StorageDataError, match="does not match its row"):
            await storage.children.list_children(tenant_id=tenant)


@pytest.mark.parametrize("backend", _BACKENDS)
@pytest.mark.parametrize(
    ("table", "tamper"),
    [
        ("storage_v2_workflow_runs", "status = 'completed'"),
        ("storage_v2_workflow_runs", "lease_owner = 'worker-x'"),
        ("storage_v2_workflow_nodes", "status = 'completed'"),
        ("storage_v2_workflow_nodes", "iteration = 7"),
    ],
)
async def test_a_workflow_row_changed_behind_the_store_fails_closed(
    backend: str, table: str, tamper: str, tmp_path: Path
) -> None:
    target = str(tmp_path / "w.db") if backend == "sqlite" else asyncpg_url(POSTGRES_URL or "")
    tenant = f"t-{uuid.uuid4().hex}"
    run: dict[str, Any] = {
        "runId": "r1",
        "graphId": "g",
        "revision": 0,
        "status": "running",
        "createdAt": _T0,
        "updatedAt": _T0,
    }
    node: dict[str, Any] = {
        "runId": "r1",
        "nodeId": "n",
        "iteration": 0,
        "revision": 0,
        "status": "running",
        "createdAt": _T0,
        "updatedAt": _T0,
    }
    async with await SqliteStorage.open(target) as storage:
        await storage.workflows.create_run(tenant_id=tenant, record=run)
        await storage.workflows.put_node(
            tenant_id=tenant, run_id="r1", expected_revision=None, record=node
        )
        async with storage.database.write() as conn:
            await conn.execute(
                text(f"UPDATE {table} SET {tamper} WHERE tenant_id = :t"), {"t": tenant}
            )
        read = (
            storage.workflows.get_run(tenant_id=tenant, run_id="r1")
            if table == "storage_v2_workflow_runs"
            else storage.workflows.list_nodes(tenant_id=tenant, run_id="r1")
        )
        with pytest.raises(StorageDataError, match="does not match its row"):
            await read
