"""A background worker process over a shared database (SQLite file or PostgreSQL).

Usage: ``python background_worker.py DB EFFECTS MODE CHILD_ID AGENT LEASE_MS``

* ``spawn-die``: spawn ``CHILD_ID`` running ``AGENT`` and SIGKILL this process inside the child's
  tool, right after the tool's effect is durable (a worker dying mid-run);
* ``spawn-interrupt-die``: spawn it, let it stop at its approval, SIGKILL this process;
* ``recover``: take over what is safe, after the dead worker's lease expired; print the child's
  record (and its output when it completed) as JSON;
* ``resume``: print ``ready``, wait for ``go`` on stdin, resume the interrupted child with
  approvals, print the outcome as JSON.

Every real execution of a tool appends ``<pid>:<tool>`` to ``EFFECTS`` (flushed, fsynced), so the
test counts what ran in every process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from actoviq.core import AgentSpec, JsonObject, ToolCallItem, ToolResultItem
from actoviq.orchestration import (
    BackgroundChildManager,
    ChildRunner,
    DurableChildConflictError,
    DurableChildError,
    DurableChildLeasedError,
    StoreBackgroundEngine,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InterruptionDecision,
    RuntimeServices,
    RuntimeTool,
    ToolBehavior,
    ToolDescriptor,
    ToolExecutionContext,
    json_schema_input,
)
from actoviq.storage.sqlite import SqliteRunCheckpointAdapter, SqliteStorage

TOOLS = {
    "reader": ("fetch", "read", False),
    "writer": ("transfer", "side-effect", False),
    "payer": ("pay", "side-effect", True),
}


def record_effect(effects: Path, tool: str) -> None:
    """Append one durable line per real execution of a tool."""
    with effects.open("a", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()}:{tool}\n")
        handle.flush()
        os.fsync(handle.fileno())


def agents() -> list[AgentSpec[Any, Any]]:
    """The three agents (same specs in every process, so their digests match)."""
    return [
        AgentSpec(id=name, name=name, instructions=name, model=f"{name}:model", tools=(tool,))
        for name, (tool, _, _) in TOOLS.items()
    ]


def _provider(name: str, tool: str) -> ScriptedProvider:
    def answer(request: ModelRequest) -> ScriptedTurn:
        if any(isinstance(i, ToolResultItem) for i in request.input):
            return ScriptedTurn(text=f"{name}:done")
        return ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name=tool, input={})])

    return ScriptedProvider([answer], id=name, repeat_last=True)


def build_runtime(
    effects: Path, *, die: bool, storage: SqliteStorage, lease_ms: int
) -> AgentRuntime:
    """A runtime whose tools record their effect (and kill the process when ``die``).

    Its run checkpoints go to the shared database, so resuming an interrupted child also takes
    the runtime's exactly-once claim on the child's run (a second guard under the record's CAS).
    """

    def make(tool: str, effect: str, approval: bool) -> RuntimeTool:
        def execute(ctx: ToolExecutionContext, value: Any) -> JsonObject:
            record_effect(effects, tool)
            if die:
                os.kill(os.getpid(), signal.SIGKILL)
            return {"tool": tool}

        return RuntimeTool(
            descriptor=ToolDescriptor(
                name=tool,
                input=json_schema_input({"type": "object"}),
                behavior=ToolBehavior(effect=effect, requires_approval=approval),  # type: ignore[arg-type]
            ),
            execute=execute,
        )

    return AgentRuntime(
        models=ModelRegistry([_provider(name, tool) for name, (tool, _, _) in TOOLS.items()]),
        tools=[make(tool, effect, approval) for tool, effect, approval in TOOLS.values()],
        agents=agents(),
        services=RuntimeServices(),
        checkpoint_store=SqliteRunCheckpointAdapter(storage.checkpoints),
        checkpoint_lease_ms=lease_ms,
    )


async def main(db: str, effects: Path, mode: str, child_id: str, agent_id: str, lease: int) -> None:
    async with await SqliteStorage.open(db, busy_timeout_ms=30_000) as storage:
        runtime = build_runtime(effects, die=mode == "spawn-die", storage=storage, lease_ms=lease)
        async with runtime:
            runner = ChildRunner(runtime)
            by_id = {a.id: a for a in agents()}
            async with BackgroundChildManager(
                runner,
                storage.children,
                lease_ms=lease,
                owner_id=f"worker-{os.getpid()}",
                resolve_agent=by_id.get,
            ) as manager:
                if mode in ("spawn-die", "spawn-interrupt-die"):
                    effect = TOOLS[agent_id][1]
                    handle = await manager.spawn(
                        runner.create_root(run_id=f"root-{child_id}"),
                        by_id[agent_id],
                        "go",
                        child_id=child_id,
                        effect=effect,  # type: ignore[arg-type]
                    )
                    with contextlib.suppress(DurableChildError):
                        await handle.result()  # interrupted: the approval is durable now
                    os.kill(os.getpid(), signal.SIGKILL)  # after the interruption is durable
                elif mode == "recover":
                    await recover(manager, child_id)
                else:
                    await resume(manager, child_id)


async def recover(manager: BackgroundChildManager, child_id: str) -> None:
    """Apply the takeover rules until the child settles or needs a human; report as JSON."""
    engine = manager.engine
    assert isinstance(engine, StoreBackgroundEngine)
    started = reconcile = False
    async with asyncio.timeout(60):
        while True:
            report = await manager.recover()
            started = started or child_id in report.started
            reconcile = reconcile or child_id in report.needs_reconciliation
            await manager.join()
            record = await manager.query(child_id)
            if record.status != "running":
                break
            # Waiting for the dead worker's lease to expire is the behaviour under test.
            left_ms = (record.lease_expires_at or 0) - await engine.now_ms()
            await asyncio.sleep(max(left_ms, 1) / 1000)
    out: JsonObject = {
        "status": record.status,
        "attempts": record.attempts,
        "started": started,
        "needsReconciliation": reconcile,
    }
    if record.status == "completed":
        result = await manager.result(child_id)
        out["output"] = result.output
    print(json.dumps(out), flush=True)


async def resume(manager: BackgroundChildManager, child_id: str) -> None:
    """Resume the interrupted child with approvals once told to go."""
    record = await manager.query(child_id)
    decisions = [InterruptionDecision.approve(i.id) for i in record.interruptions]
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    try:
        await manager.resume(child_id, decisions)
        result = await manager.result(child_id)
    except (DurableChildConflictError, DurableChildLeasedError) as error:
        print(json.dumps({"outcome": "refused", "code": error.code}), flush=True)
        return
    print(json.dumps({"outcome": "completed", "output": result.output}), flush=True)


if __name__ == "__main__":
    db, effects, mode, child, agent, lease = sys.argv[1:7]
    asyncio.run(main(db, Path(effects), mode, child, agent, int(lease)))
