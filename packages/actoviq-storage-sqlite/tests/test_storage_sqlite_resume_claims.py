"""Exactly-once resume across real processes (issue 11 §1, decision D10).

An approval-gated side effect (``charge``) is interrupted in this process; worker processes
(``claims_worker.py``) then resume the same state against one SQLite file or one PostgreSQL
database. Every real execution of the side effect appends a durable line to a file, so the tests
count what ran in every process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any, cast

import pytest
from claims_worker import TWICE, approvals, build_runtime

from actoviq.core import JsonObject
from actoviq.runtime import InterruptionDecision, RunStateStaleError
from actoviq.storage.sqlite import SqliteRunCheckpointAdapter, SqliteStorage

WORKER = Path(__file__).resolve().parent / "claims_worker.py"
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
    return str(tmp_path / "claims.db") if kind == "sqlite" else asyncpg_url(POSTGRES_URL or "")


def _effects(path: Path) -> list[str]:
    return path.read_text("utf-8").splitlines() if path.exists() else []


async def _interrupt(
    db: str, effects: Path, run_id: str, state_file: Path, text: str = "pay"
) -> JsonObject:
    async with await SqliteStorage.open(db) as storage:
        runtime, agent = build_runtime(storage, effects)
        async with runtime:
            result = await runtime.run(agent, text, run_id=run_id)
    assert result.status == "interrupted"
    state = cast(JsonObject, result.state)
    await asyncio.to_thread(state_file.write_text, json.dumps(state), "utf-8")
    return state


async def _worker(db: str, state_file: Path, effects: Path, mode: str) -> Any:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        db,
        str(state_file),
        str(effects),
        mode,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


@pytest.mark.parametrize("kind", TARGETS)
async def test_two_processes_race_one_wins_and_the_effect_runs_once(
    kind: str, tmp_path: Path
) -> None:
    db, effects = _target(kind, tmp_path), tmp_path / "effects.log"
    run_id = f"race-{uuid.uuid4().hex}"
    state_file = tmp_path / "state.json"
    await _interrupt(db, effects, run_id, state_file)
    workers = [await _worker(db, state_file, effects, "race") for _ in range(2)]
    for worker in workers:  # both are ready before either may resume
        assert (await worker.stdout.readline()).strip() == b"ready"
    for worker in workers:
        worker.stdin.write(b"go\n")
        await worker.stdin.drain()
    outputs = await asyncio.gather(*(worker.communicate() for worker in workers))
    outcomes: list[dict[str, str]] = []
    for worker, (out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err.decode()
        outcomes.append(json.loads(out.decode().strip().splitlines()[-1]))
    assert sorted(o["outcome"] for o in outcomes) == ["completed", "refused"], outcomes
    assert [o["reason"] for o in outcomes if o["outcome"] == "refused"] in (
        ["claimed"],
        ["completed"],  # the winner had already finished when the loser looked
    )
    assert len(_effects(effects)) == 1
    async with await SqliteStorage.open(db) as storage:
        stored = await SqliteRunCheckpointAdapter(storage.checkpoints).load(run_id)
    assert stored is not None and stored["status"] == "completed"


async def _resume_in_a_process(db: str, state_file: Path, effects: Path) -> dict[str, str]:
    """Resume ``state_file`` in a fresh worker process (``once``) and return its outcome."""
    worker = await _worker(db, state_file, effects, "once")
    out, err = await worker.communicate()
    assert worker.returncode == 0, err.decode()
    return cast(dict[str, str], json.loads(out.decode().strip().splitlines()[-1]))


async def _stored(db: str, run_id: str) -> JsonObject | None:
    async with await SqliteStorage.open(db) as storage:
        return await SqliteRunCheckpointAdapter(storage.checkpoints).load(run_id)


@pytest.mark.parametrize("kind", TARGETS)
async def test_the_same_approval_delivered_twice_runs_the_effect_once(
    kind: str, tmp_path: Path
) -> None:
    # One process resumes and completes; a later process (a redelivered webhook, a host retry)
    # resumes the very same state and is refused with the stored status: nothing runs twice.
    db, effects = _target(kind, tmp_path), tmp_path / "effects.log"
    run_id = f"twice-{uuid.uuid4().hex}"
    state_file = tmp_path / "state.json"
    await _interrupt(db, effects, run_id, state_file)
    assert await _resume_in_a_process(db, state_file, effects) == {"outcome": "completed"}
    assert len(_effects(effects)) == 1
    again = await _resume_in_a_process(db, state_file, effects)
    assert again == {"outcome": "refused", "reason": "completed"}
    assert len(_effects(effects)) == 1
    stored = await _stored(db, run_id)
    assert stored is not None and stored["status"] == "completed"


@pytest.mark.parametrize("kind", TARGETS)
async def test_an_older_state_after_a_newer_interruption_is_refused_across_processes(
    kind: str, tmp_path: Path
) -> None:
    # The first resume runs the first charge and stops again for the second one. The original
    # state, resumed later by another process, is superseded: refused, its charge not repeated.
    db, effects = _target(kind, tmp_path), tmp_path / "effects.log"
    run_id = f"newer-{uuid.uuid4().hex}"
    state_file = tmp_path / "state.json"
    await _interrupt(db, effects, run_id, state_file, TWICE)
    assert await _resume_in_a_process(db, state_file, effects) == {"outcome": "interrupted"}
    assert len(_effects(effects)) == 1
    stale = await _resume_in_a_process(db, state_file, effects)
    assert stale == {"outcome": "refused", "reason": "superseded"}
    assert len(_effects(effects)) == 1
    newer = tmp_path / "state.json.next"
    assert await _resume_in_a_process(db, newer, effects) == {"outcome": "completed"}
    assert [line.split(":")[1] for line in _effects(effects)] == ["c1", "c2"]
    stored = await _stored(db, run_id)
    assert stored is not None and stored["status"] == "completed"


@pytest.mark.parametrize("kind", TARGETS)
async def test_sigkill_mid_resume_then_recovery_after_the_lease(kind: str, tmp_path: Path) -> None:
    db, effects = _target(kind, tmp_path), tmp_path / "effects.log"
    run_id = f"killed-{uuid.uuid4().hex}"
    state_file = tmp_path / "state.json"
    interrupted = await _interrupt(db, effects, run_id, state_file)
    worker = await _worker(db, state_file, effects, "kill")
    out, err = await worker.communicate()
    assert worker.returncode == -signal.SIGKILL, (out, err)
    assert len(_effects(effects)) == 1  # the charge happened, then the process died

    async with await SqliteStorage.open(db) as storage:
        record = await storage.checkpoints.get(tenant_id="default", checkpoint_id=run_id)
        assert record is not None and record.lease_owner is not None
        assert record.lease_expires_at is not None
        crashed = await SqliteRunCheckpointAdapter(storage.checkpoints).load(run_id)
        assert crashed is not None and crashed["status"] == "running"
        pending = cast(list[JsonObject], crashed["pendingTools"])
        assert [p["status"] for p in pending] == ["started"]

        # While the dead holder's lease lasts, the run is refused (retryable), nothing runs.
        runtime, _ = build_runtime(storage, effects)
        async with runtime:
            with pytest.raises(RunStateStaleError) as held:
                await runtime.resume(crashed).result()
            assert (held.value.reason, held.value.retryable) == ("claimed", True)
            with pytest.raises(RunStateStaleError) as old:  # the pre-crash state is stale
                await runtime.resume(interrupted, approvals(interrupted)).result()
            assert old.value.reason in ("claimed", "superseded")
        assert len(_effects(effects)) == 1

        # Once the lease has expired the crashed run is recoverable: the started side effect is
        # never re-run; it asks for a reconciliation decision, then the run completes.
        expired = float(record.lease_expires_at + 1)
        runtime, _ = build_runtime(storage, effects, clock=lambda: expired)
        async with runtime:
            paused = await runtime.resume(crashed).result()
            assert paused.status == "interrupted"
            [reconcile] = paused.interruptions
            assert reconcile.kind == "reconciliation"
            done = await runtime.resume(
                paused.state, [InterruptionDecision.committed(reconcile.id, {"charged": 5})]
            ).result()
            assert (done.status, done.output) == ("completed", "charged 1")
            with pytest.raises(RunStateStaleError) as after:
                await runtime.resume(crashed).result()
            assert after.value.stored_status == "completed"
    assert len(_effects(effects)) == 1
