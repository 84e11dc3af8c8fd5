"""100 background children on a DBOS queue with concurrency 4 (issue 22): never more than 4 run
at once, the worker process is SIGKILLed after 10 finished, and a new worker (this process)
finishes every child: DBOS recovers the dead worker's workflows (their leases are expired at
once, the read children taken over) and dequeues the rest. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import signal
import sys
import uuid
from pathlib import Path

import pytest
from dbos import DBOS
from dbos_harness import (
    CHILD_QUEUE,
    QUEUE_CONCURRENCY,
    TARGETS,
    config,
    lines,
    max_running,
    records_url,
    system_url,
    work_model,
    work_tool,
    worker_agent,
)

from actoviq.orchestration import BackgroundChildManager, ChildRunner
from actoviq.providers import ModelRegistry
from actoviq.runtime import AgentRuntime, RuntimeServices
from actoviq.storage.sqlite import SqliteStorage

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="function")]

WORKER = Path(__file__).resolve().parent / "dbos_worker.py"


@pytest.mark.parametrize("kind", TARGETS)
async def test_hundred_children_respect_the_queue_and_survive_a_worker_restart(
    kind: str, tmp_path: Path
) -> None:
    url = system_url(kind, tmp_path)
    tenant = f"hundred-{uuid.uuid4().hex[:8]}"
    first = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        f"children-{kind}",
        url,
        str(tmp_path),
        tenant,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(first.communicate(), 120)
    assert first.returncode == -signal.SIGKILL, stderr.decode()
    ended_before = sum(1 for line in lines(tmp_path / "work.log") if line.startswith("end "))
    assert 10 <= ended_before < 100

    runtime = AgentRuntime(
        models=ModelRegistry([work_model()]),
        tools=[work_tool(tmp_path)],
        agents=[worker_agent()],
        services=RuntimeServices(),
    )
    runner = ChildRunner(runtime)
    # The manager opens before DBOS launches (recovered workflows find its engine at once);
    # DBOS replaces the loop's default executor and shuts it down on destroy, so the storage
    # (which uses that executor) closes first.
    DBOS(config=config(url))
    try:
        async with await SqliteStorage.open(records_url(kind, tmp_path)) as storage:
            manager = BackgroundChildManager(
                runner,
                storage.children,
                engine="dbos",
                tenant_id=tenant,
                options={"queue": CHILD_QUEUE},
            )
            DBOS.launch()
            try:
                report = await manager.recover()
                assert report.started == ()  # DBOS already holds every child's workflow
                async with asyncio.timeout(120):
                    for index in range(100):
                        record = await manager.wait(f"{tenant}-{index:03}")
                        assert record.status == "completed", record
                done = await manager.list_children(status="completed")
            finally:
                await manager.aclose()
    finally:
        DBOS.destroy(workflow_completion_timeout_sec=0)
    assert len(done) == 100
    assert sum(1 for line in lines(tmp_path / "work.log") if line.startswith("end ")) >= 100
    assert max_running(tmp_path / "work.log") <= QUEUE_CONCURRENCY
    assert max_running(tmp_path / "work.log") >= 2  # they did run side by side
