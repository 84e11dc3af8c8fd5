"""A worker process running one durable workflow-graph run on a shared database.

Usage: ``python graph_worker.py DB EFFECTS RUN_ID DIE_IN LEASE_MS``: run the graph
``draft -> charge -> notify -> summary`` as run ``RUN_ID``; when ``DIE_IN`` names a node, SIGKILL
this process inside that node, right after its effect is durable (``-``: die nowhere). Print the
result as JSON, or the typed error that stopped the run.

Every real execution of a node appends ``<pid>:<node>`` to ``EFFECTS`` (flushed, fsynced), so
the test counts what ran in every process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from actoviq.orchestration import (
    DurableGraphRunner,
    NodeContext,
    RunTree,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowNode,
    WorkflowRunError,
)
from actoviq.runtime import RuntimeServices
from actoviq.storage.sqlite import SqliteStorage

EFFECTS = {"draft": "read", "charge": "side-effect", "notify": "read", "summary": "read"}


def graph(effects: Path, die_in: str) -> WorkflowGraph:
    """The four-node graph; each node records its execution durably first."""

    def node(node_id: str) -> WorkflowNode:
        def execute(ctx: NodeContext) -> Any:
            with effects.open("a", encoding="utf-8") as handle:
                handle.write(f"{os.getpid()}:{node_id}\n")
                handle.flush()
                os.fsync(handle.fileno())
            if node_id == die_in:
                os.kill(os.getpid(), signal.SIGKILL)
            return {"node": node_id, "seen": sorted(ctx.outputs)}

        return WorkflowNode(id=node_id, execute=execute)

    return WorkflowGraph(
        nodes=[node(n) for n in EFFECTS],
        edges=[
            WorkflowEdge(source="draft", target="charge"),
            WorkflowEdge(source="charge", target="notify"),
            WorkflowEdge(source="notify", target="summary"),
        ],
    )


async def main(db: str, effects: Path, run_id: str, die_in: str, lease_ms: int) -> None:
    async with await SqliteStorage.open(db, busy_timeout_ms=30_000) as storage:
        runner = DurableGraphRunner(
            storage.workflows, lease_ms=lease_ms, owner_id=f"w-{os.getpid()}"
        )
        scope = RunTree().create_root(services=RuntimeServices())
        try:
            result = await runner.run(
                graph(effects, die_in),
                graph_id="payout",
                run_id=run_id,
                input={"amount": 5},
                scope=scope,
                effects=EFFECTS,  # type: ignore[arg-type]
            )
        except WorkflowRunError as error:
            print(json.dumps({"error": error.code, "details": error.details}), flush=True)
            return
        print(json.dumps({"outputs": dict(result.outputs)}), flush=True)


if __name__ == "__main__":
    db, effects, run_id, die_in, lease = sys.argv[1:6]
    asyncio.run(main(db, Path(effects), run_id, die_in, int(lease)))
