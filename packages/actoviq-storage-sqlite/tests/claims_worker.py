"""A worker process that resumes one interrupted run from a shared database (issue 11 §1).

Usage: ``python claims_worker.py DB STATE_FILE EFFECTS_FILE MODE`` where ``MODE`` is ``race``
(print ``ready``, wait for ``go`` on stdin, resume with the approval, print the outcome as JSON),
``once`` (resume with the approval, print the outcome; a run interrupted again writes its new
state to ``STATE_FILE.next``) or ``kill`` (resume and SIGKILL itself inside the approved tool,
after its effect is durable).

The test module imports :func:`build_runtime` from here too, so both sides run the same agent.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, cast

from actoviq.core import AgentSpec, JsonObject, ToolCallItem, ToolResultItem
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InterruptionDecision,
    RunStateStaleError,
    RuntimeTool,
    ToolBehavior,
    ToolDescriptor,
    ToolExecutionContext,
    json_schema_input,
)
from actoviq.storage.sqlite import SqliteRunCheckpointAdapter, SqliteStorage

CHARGE = ToolCallItem(id="c1", name="charge", input={"amount": 5})
CHARGE_AGAIN = ToolCallItem(id="c2", name="charge", input={"amount": 7})
TWICE = "charge twice"


def _answer(request: ModelRequest) -> ScriptedTurn:
    """Charge; asked to ``charge twice``, charge again after the first result; then answer."""
    results = sum(isinstance(item, ToolResultItem) for item in request.input)
    twice = any(getattr(item, "text", None) == TWICE for item in request.input)
    if results == 0:
        return ScriptedTurn(tool_calls=[CHARGE])
    if twice and results == 1:
        return ScriptedTurn(tool_calls=[CHARGE_AGAIN])
    return ScriptedTurn(text=f"charged {results}")


def record_effect(effects: Path, call_id: str) -> None:
    """Append one durable line per real execution of the side effect."""
    with effects.open("a", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()}:{call_id}\n")
        handle.flush()
        os.fsync(handle.fileno())


def build_runtime(
    storage: SqliteStorage, effects: Path, *, kill: bool = False, clock: Any = None
) -> tuple[AgentRuntime, AgentSpec[Any, Any]]:
    """The payer agent with an approval-gated side-effect ``charge`` tool on ``storage``."""

    def charge(ctx: ToolExecutionContext, value: Any) -> JsonObject:
        record_effect(effects, ctx.call_id)
        if kill:
            os.kill(os.getpid(), signal.SIGKILL)
        return {"charged": value["amount"]}

    tool = RuntimeTool(
        descriptor=ToolDescriptor(
            name="charge",
            input=json_schema_input({"type": "object"}),
            behavior=ToolBehavior(effect="side-effect", requires_approval=True),
        ),
        execute=charge,
    )
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="payer", name="Payer", instructions="Pay.", model="scripted:m", tools=("charge",)
    )
    runtime = AgentRuntime(
        models=ModelRegistry([ScriptedProvider([_answer], repeat_last=True)]),
        tools=[tool],
        agents=[agent],
        checkpoint_store=SqliteRunCheckpointAdapter(storage.checkpoints, clock=clock),
    )
    return runtime, agent


def approvals(state: JsonObject) -> list[InterruptionDecision]:
    """Approve every open approval of ``state``."""
    return [
        InterruptionDecision.approve(cast(str, p["interruptionId"]))
        for p in cast(list[JsonObject], state["pendingTools"])
        if p.get("interruptionId")
    ]


async def main(db: str, state_file: Path, effects: Path, mode: str) -> None:
    state = cast(JsonObject, json.loads(await asyncio.to_thread(state_file.read_text, "utf-8")))
    async with await SqliteStorage.open(db, busy_timeout_ms=30_000) as storage:
        runtime, _ = build_runtime(storage, effects, kill=mode == "kill")
        async with runtime:
            if mode == "race":
                print("ready", flush=True)
                await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            try:
                result = await runtime.resume(state, approvals(state)).result()
            except RunStateStaleError as error:
                print(json.dumps({"outcome": "refused", "reason": error.reason}), flush=True)
                return
            if result.status == "interrupted":
                following = state_file.with_name(state_file.name + ".next")
                await asyncio.to_thread(following.write_text, json.dumps(result.state), "utf-8")
            print(json.dumps({"outcome": result.status}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]))
