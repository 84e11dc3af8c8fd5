"""MCP tool-call overhead (``python bench_mcp.py --out results.json``; run by ``make bench``).

One ``lookup`` call on the toolbox test server over stdio, three ways, each on its own connection
to its own server process (stdio is one client per process), interleaved round by round so load
drift hits all three alike:

* ``sdk``: the official SDK alone, ``ClientSession.call_tool`` (the baseline);
* ``tool``: the ``mcp_tools`` runtime tool through the runtime's ``ToolRunner`` (input schema
  validation, policy hook, timeout scope, progress sink, result mapping to canonical items);
* ``run``: a whole agent turn pair through ``AgentRuntime.run`` (scripted model: one tool call,
  then text), so it adds the model turns, events and pending-state bookkeeping of a real run.

Target (issue 19): ``tool`` / ``sdk`` <= 1.3 (median of per-round ratios).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from actoviq.core import AbortController, AgentSpec, JsonObject, ToolCallItem, ToolResultItem
from actoviq.mcp import McpServer, mcp_tools
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, ToolExecutionContext, ToolRegistry, ToolRunner

ROOT = Path(__file__).resolve().parent.parent
TOOLBOX = ROOT / "tests" / "servers" / "toolbox_server.py"


async def _time(fn: Callable[[], Awaitable[object]], calls: int) -> float:
    """Microseconds per call over ``calls`` sequential calls."""
    start = time.perf_counter()
    for _ in range(calls):
        await fn()
    return (time.perf_counter() - start) / calls * 1e6


async def run(rounds: int, calls: int) -> dict[str, Any]:
    ledger = Path(tempfile.mkdtemp(prefix="bench-mcp-")) / "ledger.jsonl"
    env = {"ACTOVIQ_MCP_LEDGER": str(ledger)}
    args = [str(TOOLBOX), "stdio"]
    arguments: JsonObject = {"key": "k"}

    async with Client(StdioServerParameters(command=sys.executable, args=args, env=env)) as client:
        session = client.session
        await session.list_tools()

        async def sdk() -> object:
            return await session.call_tool("lookup", arguments)

        server = McpServer.stdio(sys.executable, args, env=env, name="bench")
        run_server = McpServer.stdio(sys.executable, args, env=env, name="bench-run")
        async with server, run_server:
            toolset = await mcp_tools(server, include=["lookup"])
            runner = ToolRunner(ToolRegistry(toolset))
            signal = AbortController().signal
            counter = iter(range(10**9))

            async def tool() -> object:
                ctx = ToolExecutionContext(
                    run_id="bench", call_id=f"c{next(counter)}", signal=signal
                )
                return await runner.execute("lookup", arguments, ctx)

            run_tools = await mcp_tools(run_server, include=["lookup"])
            lookup_call = ScriptedTurn(
                tool_calls=[ToolCallItem(id="c1", name="lookup", input=arguments)]
            )

            def answer(request: ModelRequest) -> ScriptedTurn | str:
                return "done" if isinstance(request.input[-1], ToolResultItem) else lookup_call

            provider = ScriptedProvider([answer], repeat_last=True)
            runtime = AgentRuntime(models=ModelRegistry([provider]), tools=run_tools)
            agent: AgentSpec[Any, Any] = AgentSpec(
                id="bench", name="Bench", instructions="-", model="scripted:m", tools=("lookup",)
            )

            async def agent_run() -> object:
                return await runtime.run(agent, "look up k")

            for fn in (sdk, tool, agent_run):  # warm-up: connections, validators, caches
                await _time(fn, 20)
            samples: dict[str, list[float]] = {"sdk": [], "tool": [], "run": []}
            for _ in range(rounds):
                samples["sdk"].append(await _time(sdk, calls))
                samples["tool"].append(await _time(tool, calls))
                samples["run"].append(await _time(agent_run, calls))
            await runtime.aclose()
    tool_ratio = [t / s for t, s in zip(samples["tool"], samples["sdk"], strict=True)]
    run_ratio = [r / s for r, s in zip(samples["run"], samples["sdk"], strict=True)]
    return {
        "workload": f"{rounds} rounds x {calls} sequential lookup calls per path, stdio",
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load": os.getloadavg()[0],
        "us_per_call": {name: statistics.median(values) for name, values in samples.items()},
        "tool_over_sdk": statistics.median(tool_ratio),
        "run_over_sdk": statistics.median(run_ratio),
        "target_tool_over_sdk": 1.3,
        "rounds": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=100)
    options = parser.parse_args()
    result = asyncio.run(run(options.rounds, options.calls))
    text = json.dumps(result, indent=2)
    if options.out is not None:
        options.out.write_text(text + "\n", "utf-8")
    summary = {k: v for k, v in result.items() if k != "rounds"}
    print(json.dumps(summary, indent=2))
    if result["tool_over_sdk"] > 1.3:
        print("target missed: tool_over_sdk > 1.3", file=sys.stderr)


if __name__ == "__main__":
    main()
