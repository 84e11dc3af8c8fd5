"""A worker process of the DBOS tests: ``python dbos_worker.py MODE SYSTEM_URL DIR RUN_ID``.

MODE ``crash-after-tool`` / ``crash-inside-tool``: start durable run RUN_ID of the ``biller``
agent on runtime ``worker`` and die by SIGKILL right after the tool step was recorded / inside
the side-effect tool. MODE ``approve``: deliver the approval of ``call-1`` twice through a
``DBOSClient`` (no DBOS launched here) and exit.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from dbos import DBOS, DBOSClient
from dbos_harness import (
    CHILD_QUEUE,
    agent,
    append,
    charge_tool,
    config,
    crash_after_tool,
    deterministic_model,
    records_url,
    work_model,
    work_tool,
    worker_agent,
)

from actoviq.dbos import DbosRuntime, approve
from actoviq.orchestration import BackgroundChildManager, ChildRunner
from actoviq.providers import ModelRegistry
from actoviq.runtime import AgentRuntime, RuntimeServices
from actoviq.storage.sqlite import SqliteStorage


async def main(mode: str, url: str, directory: Path, run_id: str) -> None:
    if mode == "approve":
        client = DBOSClient(system_database_url=url)
        try:
            for _ in range(2):
                await approve(run_id, "call-1", timeout_seconds=30, client=client)
        finally:
            client.destroy()
        return
    DBOS(config=config(url))
    if mode.startswith("children-"):
        await children(mode, directory, run_id)
        return
    durable = DbosRuntime(
        name="worker",
        models=[deterministic_model(directory / "model_calls")],
        tools=[charge_tool(directory, crash_inside=mode == "crash-inside-tool")],
        agents=[agent()],
        middleware=[crash_after_tool()] if mode == "crash-after-tool" else [],
        stream_events=True,
    )
    DBOS.launch()
    started = await durable.start(agent(), "charge 7", run_id=run_id)
    await started.result()
    raise SystemExit("the worker should have been killed")


async def children(mode: str, directory: Path, tenant: str) -> None:
    """Spawn 100 read children on the queue (concurrency 4); die after 10 have ended."""
    kind = mode.removeprefix("children-")
    runtime = AgentRuntime(
        models=ModelRegistry([work_model()]),
        tools=[work_tool(directory, crash_after=10)],
        services=RuntimeServices(),
    )
    runner = ChildRunner(runtime)
    async with await SqliteStorage.open(records_url(kind, directory)) as storage:
        manager = BackgroundChildManager(
            runner,
            storage.children,
            engine="dbos",
            tenant_id=tenant,
            options={"queue": CHILD_QUEUE},
        )
        DBOS.launch()
        root = runner.create_root()
        for index in range(100):
            await manager.spawn(
                root, worker_agent(), f"job {index}", child_id=f"{tenant}-{index:03}", effect="read"
            )
        append(directory / "spawned", "100")
        await asyncio.Event().wait()  # killed by the work tool


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4]))
