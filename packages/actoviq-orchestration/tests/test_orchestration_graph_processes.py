"""A durable graph run whose worker process is SIGKILLed mid-graph, resumed by another process,
on SQLite and PostgreSQL (issue 15 point 8, spec 04 §8.2-21): completed nodes never run again,
a replay-safe node caught mid-run runs again, a side-effect node caught mid-run waits for
``reconcile_node()``."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from background_harness import POSTGRES_URL, asyncpg_url

from actoviq.orchestration import DurableGraphRunner
from actoviq.storage.sqlite import SqliteStorage

WORKER = Path(__file__).resolve().parent / "graph_worker.py"
LEASE_MS = 1500
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


def _db(kind: str, tmp_path: Path) -> str:
    return str(tmp_path / "graphs.db") if kind == "sqlite" else asyncpg_url(POSTGRES_URL or "")


def _ran(effects: Path) -> list[str]:
    lines = effects.read_text("utf-8").splitlines() if effects.exists() else []
    return [line.split(":", 1)[1] for line in lines]


async def _worker(db: str, effects: Path, run_id: str, die_in: str) -> tuple[int, Any]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(WORKER), db, str(effects), run_id, die_in, str(LEASE_MS),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(120):
        out, err = await process.communicate()
    lines = out.decode().strip().splitlines()
    assert process.returncode in (0, -signal.SIGKILL), err.decode()
    return process.returncode, (json.loads(lines[-1]) if lines else None)


async def _after_the_lease(db: str, effects: Path, run_id: str) -> Any:
    """Run the graph again until the dead worker's lease expired (the wait is the behaviour)."""
    async with asyncio.timeout(60):
        while True:
            code, out = await _worker(db, effects, run_id, "-")
            assert code == 0
            if out.get("error") != "WORKFLOW_RUN_LEASED":
                return out
            left_ms = out["details"]["leaseExpiresAt"] - time.time() * 1000
            await asyncio.sleep(max(left_ms, 10) / 1000)


@pytest.mark.parametrize("kind", TARGETS)
async def test_a_killed_graph_resumes_after_its_last_completed_node(
    kind: str, tmp_path: Path
) -> None:
    db, effects, run_id = _db(kind, tmp_path), tmp_path / "ran.log", f"g-{uuid.uuid4().hex}"
    code, _ = await _worker(db, effects, run_id, "notify")
    assert code == -signal.SIGKILL
    assert _ran(effects) == ["draft", "charge", "notify"]
    out = await _after_the_lease(db, effects, run_id)
    assert out["outputs"]["summary"] == {"node": "summary", "seen": ["charge", "draft", "notify"]}
    # charge (a side effect) completed before the kill: never again; notify (a read) re-ran.
    assert _ran(effects) == ["draft", "charge", "notify", "notify", "summary"]


@pytest.mark.parametrize("kind", TARGETS)
async def test_a_side_effect_node_killed_mid_run_waits_for_reconciliation(
    kind: str, tmp_path: Path
) -> None:
    db, effects, run_id = _db(kind, tmp_path), tmp_path / "ran.log", f"g-{uuid.uuid4().hex}"
    code, _ = await _worker(db, effects, run_id, "charge")
    assert code == -signal.SIGKILL
    out = await _after_the_lease(db, effects, run_id)
    assert out["error"] == "WORKFLOW_NODE_NEEDS_RECONCILIATION"
    assert out["details"]["nodes"] == [{"nodeId": "charge", "iteration": 0}]
    assert _ran(effects) == ["draft", "charge"]  # never replayed
    async with await SqliteStorage.open(db) as storage:
        operator = DurableGraphRunner(storage.workflows)
        await operator.reconcile_node(
            run_id, "charge", "completed", actor="ops", output={"node": "charge", "seen": ["draft"]}
        )
    code, out = await _worker(db, effects, run_id, "-")
    assert code == 0
    assert out["outputs"]["charge"] == {"node": "charge", "seen": ["draft"]}
    assert _ran(effects) == ["draft", "charge", "notify", "summary"]
