"""Exit worker: a tool calls ``sys.exit(3)``; the run must end failed, saved, with ``run.failed``.

Usage: ``python runtime_exit_worker.py WHERE`` (``thread``: a plain tool, ``loop``: an async
tool). After the host's exit has gone through ``asyncio.run``, the worker prints what the sink
and the checkpoint store hold as JSON, then exits with the tool's code.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runtime_testkit import json_tool, make_agent, scripted_runtime

from actoviq.core import JsonObject, ToolCallItem, ToolResultItem
from actoviq.events import InMemoryEventSink
from actoviq.providers import ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import InMemoryCheckpointStore, StoreRunCheckpointAdapter, ToolExecutionContext

CHARGE = ToolCallItem(id="c1", name="charge", input={"amount": 5})


def _answer(request: ModelRequest) -> ScriptedTurn:
    if not any(isinstance(item, ToolResultItem) for item in request.input):
        return ScriptedTurn(tool_calls=[CHARGE])
    return ScriptedTurn(text="charged")


def in_thread(ctx: ToolExecutionContext, value: Any) -> JsonObject:
    sys.exit(3)


async def on_loop(ctx: ToolExecutionContext, value: Any) -> JsonObject:
    sys.exit(3)


async def _run(where: str, records: InMemoryCheckpointStore, sink: InMemoryEventSink) -> None:
    runtime = scripted_runtime(
        ScriptedProvider([_answer], repeat_last=True),
        tools=[
            json_tool("charge", in_thread if where == "thread" else on_loop, effect="side-effect")
        ],
        checkpoint_store=StoreRunCheckpointAdapter(records),
        event_sinks=[sink],
    )
    async with runtime:
        await runtime.run(make_agent(id="payer", tools=("charge",)), "pay", run_id="x")


async def _report(records: InMemoryCheckpointStore, sink: InMemoryEventSink, code: object) -> None:
    stored = await StoreRunCheckpointAdapter(records).load("x")
    failed = [cast(JsonObject, e.data) for e in sink.events if e.type == "run.failed"]
    print(
        json.dumps(
            {
                "exitCode": cast(Any, code),
                "lastEvent": sink.events[-1].type if sink.events else None,
                "failed": failed,
                "stored": None if stored is None else stored["status"],
                "calls": [
                    p["status"]
                    for p in cast(list[JsonObject], (stored or {}).get("pendingTools", []))
                ],
            }
        ),
        flush=True,
    )


def main(where: str) -> None:
    records, sink = InMemoryCheckpointStore(), InMemoryEventSink()
    try:
        asyncio.run(_run(where, records, sink))
    except SystemExit as stop:
        asyncio.run(_report(records, sink, stop.code))
        raise
    print("the run ended without the exit", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
