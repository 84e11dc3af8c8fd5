"""A real store outage mid-run ends typed and leaves a resumable checkpoint (issue 11 §2).

The side-effect tool takes SQLite's write lock from another connection and keeps it, as another
process would; every checkpoint write after the effect then fails (``database is locked``). The
run must end with a typed ``CHECKPOINT_SAVE_FAILED`` and a ``run.failed`` saying nothing could be
saved; once the lock is gone and the lease has expired, the stored state resumes into a
reconciliation, and the effect never runs twice.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from pathlib import Path
from typing import Any, cast

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from actoviq.core import AgentSpec, JsonObject, RunLimitsPatch, ToolCallItem, ToolResultItem
from actoviq.events import InMemoryEventSink
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InterruptionDecision,
    RunPersistenceError,
    RuntimeTool,
    ToolBehavior,
    ToolDescriptor,
    ToolExecutionContext,
    json_schema_input,
)
from actoviq.storage.sqlite import SqliteRunCheckpointAdapter, SqliteStorage

CHARGE = ToolCallItem(id="c1", name="charge", input={"amount": 5})


def _answer(request: ModelRequest) -> ScriptedTurn:
    if not any(isinstance(item, ToolResultItem) for item in request.input):
        return ScriptedTurn(tool_calls=[CHARGE])
    return ScriptedTurn(text="charged")


def _runtime(
    storage: SqliteStorage,
    execute: Any,
    sink: InMemoryEventSink,
    clock: Any = None,
    limits: RunLimitsPatch | None = None,
) -> tuple[AgentRuntime, AgentSpec[Any, Any]]:
    tool = RuntimeTool(
        descriptor=ToolDescriptor(
            name="charge",
            input=json_schema_input({"type": "object"}),
            behavior=ToolBehavior(effect="side-effect"),
        ),
        execute=execute,
    )
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="payer", name="Payer", instructions="Pay.", model="scripted:m", tools=("charge",)
    )
    runtime = AgentRuntime(
        models=ModelRegistry([ScriptedProvider([_answer], repeat_last=True)]),
        tools=[tool],
        agents=[agent],
        checkpoint_store=SqliteRunCheckpointAdapter(storage.checkpoints, clock=clock),
        event_sinks=[sink],
        default_limits=limits,
    )
    return runtime, agent


async def test_a_locked_database_mid_run_ends_typed_and_recovers(tmp_path: Path) -> None:
    db = tmp_path / "outage.db"
    charges: list[str] = []
    blocker: list[sqlite3.Connection] = []

    def charge(ctx: ToolExecutionContext, value: Any) -> JsonObject:
        charges.append(ctx.call_id)
        other = sqlite3.connect(db, timeout=0, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the database from now on
        blocker.append(other)
        return {"charged": value["amount"]}

    sink = InMemoryEventSink()
    async with await SqliteStorage.open(db, busy_timeout_ms=50) as storage:
        runtime, agent = _runtime(storage, charge, sink)
        async with runtime:
            with pytest.raises(RunPersistenceError) as caught:
                await runtime.run(agent, "pay", run_id="outage")
        assert (caught.value.code, caught.value.phase) == ("CHECKPOINT_SAVE_FAILED", "persistence")
        failed = sink.events[-1]
        assert failed.type == "run.failed"
        checkpoint = cast(JsonObject, cast(JsonObject, failed.data)["checkpoint"])
        assert checkpoint["saved"] is False and checkpoint["storedStatus"] == "running"
        blocker[0].rollback()
        blocker[0].close()

        stored = await SqliteRunCheckpointAdapter(storage.checkpoints).load("outage")
        assert stored is not None and stored["status"] == "running"
        pending = cast(list[JsonObject], stored["pendingTools"])
        assert [p["status"] for p in pending] == ["started"]
        record = await storage.checkpoints.get(tenant_id="default", checkpoint_id="outage")
        assert record is not None and record.lease_expires_at is not None
        later = float(record.lease_expires_at + 1)

        def never(ctx: ToolExecutionContext, value: Any) -> JsonObject:
            raise AssertionError("the side effect must not run again")

        recovered, _ = _runtime(storage, never, InMemoryEventSink(), clock=lambda: later)
        async with recovered:
            paused = await recovered.resume(stored).result()
            [reconcile] = paused.interruptions
            assert reconcile.kind == "reconciliation"
            done = await recovered.resume(
                paused.state, [InterruptionDecision.committed(reconcile.id, {"charged": 5})]
            ).result()
        assert (done.status, done.output) == ("completed", "charged")
    assert charges == ["c1"]


POSTGRES_URL = os.environ.get("ACTOVIQ_TEST_POSTGRES_URL")


@pytest.mark.postgres
@pytest.mark.skipif(not POSTGRES_URL, reason="ACTOVIQ_TEST_POSTGRES_URL is not set")
async def test_a_locked_postgres_row_mid_run_ends_typed_and_recovers() -> None:
    # The side-effect tool has another PostgreSQL session lock the run's checkpoint row (SELECT
    # ... FOR UPDATE in an open transaction), as another process would: every later write waits
    # on the lock until the run's hook timeout. The run must end typed (retryable: a timeout),
    # say in run.failed that nothing could be written, and the stored state must recover.
    dsn = POSTGRES_URL or ""
    url = dsn.replace("postgresql://", "postgresql+asyncpg://", 1) if "+" not in dsn else dsn
    run_id = f"pg-outage-{uuid.uuid4().hex}"  # the database outlives the test session
    charges: list[str] = []
    engine = create_async_engine(url)
    blockers: list[AsyncConnection] = []

    async def charge(ctx: ToolExecutionContext, value: Any) -> JsonObject:
        charges.append(ctx.call_id)
        other = await engine.connect()
        blockers.append(other)
        await other.begin()
        await other.execute(
            text("SELECT 1 FROM storage_v2_checkpoints WHERE checkpoint_id = :id FOR UPDATE"),
            {"id": run_id},
        )
        return {"charged": value["amount"]}

    sink = InMemoryEventSink()
    async with await SqliteStorage.open(url) as storage:
        limits = RunLimitsPatch(hook_timeout_ms=300)
        runtime, agent = _runtime(storage, charge, sink, limits=limits)
        async with runtime:
            with pytest.raises(RunPersistenceError) as caught:
                await runtime.run(agent, "pay", run_id=run_id)
        assert (caught.value.code, caught.value.phase) == ("CHECKPOINT_SAVE_FAILED", "persistence")
        assert caught.value.retryable
        failed = sink.events[-1]
        assert failed.type == "run.failed"
        checkpoint = cast(JsonObject, cast(JsonObject, failed.data)["checkpoint"])
        assert checkpoint["saved"] is False and checkpoint["storedStatus"] == "running"
        for other in blockers:
            await other.rollback()
            await other.close()
        await engine.dispose()

        stored = await SqliteRunCheckpointAdapter(storage.checkpoints).load(run_id)
        assert stored is not None and stored["status"] == "running"
        pending = cast(list[JsonObject], stored["pendingTools"])
        assert [p["status"] for p in pending] == ["started"]
        record = await storage.checkpoints.get(tenant_id="default", checkpoint_id=run_id)
        assert record is not None and record.lease_expires_at is not None
        later = float(record.lease_expires_at + 1)

        def never(ctx: ToolExecutionContext, value: Any) -> JsonObject:
            raise AssertionError("the side effect must not run again")

        recovered, _ = _runtime(storage, never, InMemoryEventSink(), clock=lambda: later)
        async with recovered:
            paused = await recovered.resume(stored).result()
            [reconcile] = paused.interruptions
            assert reconcile.kind == "reconciliation"
            done = await recovered.resume(
                paused.state, [InterruptionDecision.committed(reconcile.id, {"charged": 5})]
            ).result()
        assert (done.status, done.output) == ("completed", "charged")
    assert charges == ["c1"]
