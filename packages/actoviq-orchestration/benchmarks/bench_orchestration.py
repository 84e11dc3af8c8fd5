"""Orchestration benchmarks (``python bench_orchestration.py --out results.json``).

O1 agent-as-tool overhead: ``AgentTool.invoke`` (scope derived, budget claim, permit, metadata,
child run, usage recorded, one tool result) x2000 against ``runtime.run`` of the same scripted
agent x2000, us/run and the ratio (target <= 1.5). O2 the same inside a manager run: a manager
making 10 agent-tool calls against a manager making 10 calls of a plain tool that runs the same
agent on the runtime (ratio, informational). O3 fan-out: the panel preset with 100 agent nodes
and a reducer, concurrency capacity 16, against the same 100 runs started with ``asyncio.gather``
under ``asyncio.Semaphore(16)``; with a 20 ms and a 5 ms model call (network-shaped) and with an
instant one (CPU-bound); wall-time and CPU-time (``time.process_time``, what a loaded machine
disturbs least) ratios (target <= 1.2) and peak RSS. ``--only o3`` runs the fan-out alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from actoviq.core import AgentSpec, TextItem, ToolCallItem, ToolResultItem
from actoviq.orchestration import (
    ChildRunner,
    ConcurrencyController,
    ConversationOwner,
    ConversationState,
    WorkflowNode,
    agent_as_tool,
    agent_workflow_node,
    panel_preset,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, ToolExecutionContext, tool

SPECIALIST: AgentSpec[Any, Any] = AgentSpec(
    id="specialist", name="Specialist", instructions="Answer.", model="s:m"
)
OWNER = ConversationOwner(agent_id="manager", run_id="manager")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


async def _paired(
    n: int, first: Callable[[], Awaitable[Any]], second: Callable[[], Awaitable[Any]]
) -> tuple[float, float]:
    """Median us/run of ``first`` and ``second``, measured in alternating blocks (load drifts
    on a shared machine hit both sides alike)."""
    await first()
    await second()
    rounds = 9
    block = max(1, n // rounds)
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for side, once in enumerate((first, second)):
            started = time.perf_counter()
            for _ in range(block):
                await once()
            samples[side].append((time.perf_counter() - started) / block * 1e6)
    return statistics.median(samples[0]), statistics.median(samples[1])


async def o1(n: int = 2000) -> dict[str, float]:
    provider = ScriptedProvider(["specialist answer"], id="s", repeat_last=True)
    async with AgentRuntime(models=ModelRegistry([provider])) as runtime:
        runner = ChildRunner(runtime)
        tool_ = agent_as_tool(SPECIALIST, runner)
        root = runner.create_root(concurrency=ConcurrencyController(16))
        conversation = ConversationState(owner=OWNER, items=(TextItem(role="user", text="q"),))
        counter = iter(range(10**9))

        async def plain() -> Any:
            provider.calls.clear()
            return await runtime.run(SPECIALIST, "question")

        async def invoke() -> Any:
            provider.calls.clear()
            return await tool_.invoke(
                parent=root, conversation=conversation, call_id=f"c{next(counter)}", input="q"
            )

        plain_us, tool_us = await _paired(n, plain, invoke)
    return {
        "runtime_us_per_run": plain_us,
        "agent_tool_us_per_child": tool_us,
        "ratio": tool_us / plain_us,
    }


def _manager_answer(tool_name: str) -> Callable[[ModelRequest], Any]:
    def answer(request: ModelRequest) -> Any:
        done = sum(1 for item in request.input if isinstance(item, ToolResultItem))
        if done:
            return "all answered"
        return ScriptedTurn(
            tool_calls=[
                ToolCallItem(id=f"c{index}", name=tool_name, input={"input": "q"})
                for index in range(10)
            ]
        )

    return answer


async def _manager(mode: str) -> tuple[AgentRuntime, Callable[[], Awaitable[Any]]]:
    manager_provider = ScriptedProvider([_manager_answer("ask")], id="m", repeat_last=True)
    specialist_provider = ScriptedProvider(["answer"], id="s", repeat_last=True)
    runtime = AgentRuntime(models=ModelRegistry([manager_provider, specialist_provider]))
    if mode == "agent-tool":
        runner = ChildRunner(runtime)
        runtime.tools.register(
            agent_as_tool(SPECIALIST, runner, name="ask", effect="read").as_runtime_tool()
        )
    else:

        @tool(name="ask", effect="read")
        async def ask(ctx: ToolExecutionContext, input: str) -> str:
            """Ask the specialist."""
            return (await runtime.run(SPECIALIST, input)).output

        runtime.tools.register(ask)
    manager: AgentSpec[Any, Any] = AgentSpec(
        id="manager", name="Manager", instructions="Delegate.", model="m:m", tools=("ask",)
    )

    async def once() -> Any:
        manager_provider.calls.clear()
        specialist_provider.calls.clear()
        return await runtime.run(manager, "ten questions")

    return runtime, once


async def o2(n: int = 200) -> dict[str, float]:
    plain_runtime, plain = await _manager("plain-tool")
    agent_runtime, agent = await _manager("agent-tool")
    async with plain_runtime, agent_runtime:
        plain_us, agent_us = await _paired(n, plain, agent)
    return {
        "plain_tool_us_per_child": plain_us / 10,
        "agent_tool_us_per_child": agent_us / 10,
        "ratio": agent_us / plain_us,
    }


async def _fanout(delay: float, members: int = 100, capacity: int = 16) -> dict[str, float]:
    turn = ScriptedTurn(text="vote", delay=delay)
    provider = ScriptedProvider([turn], id="s", repeat_last=True)
    async with AgentRuntime(models=ModelRegistry([provider]), max_concurrent_runs=256) as runtime:
        gate = asyncio.Semaphore(capacity)

        async def direct_one(index: int) -> Any:
            async with gate:
                return await runtime.run(SPECIALIST, f"q{index}")

        async def direct() -> Any:
            return await asyncio.gather(*(direct_one(index) for index in range(members)))

        runner = ChildRunner(runtime)
        nodes = [
            agent_workflow_node(
                f"m{index:03d}", runner, SPECIALIST, input=lambda ctx, i=index: f"q{i}"
            )
            for index in range(members)
        ]
        graph = panel_preset(
            nodes, WorkflowNode(id="synthesize", reduce=lambda ctx: len(ctx.inputs))
        )

        async def panel() -> Any:
            root = runner.create_root(concurrency=ConcurrencyController(capacity))
            result = await graph.execute(input=None, scope=root, max_concurrency=members)
            assert result.outputs["synthesize"] == members
            runner.tree.complete(root.run_id)
            return result

        timings: dict[str, list[float]] = {"direct": [], "panel": []}
        cpu: dict[str, list[float]] = {"direct": [], "panel": []}
        for _ in range(2):  # warm-up
            await direct()
            await panel()
        for _ in range(11 if delay else 31):
            for name, run in (("direct", direct), ("panel", panel)):
                provider.calls.clear()
                started = time.perf_counter()
                cpu_started = time.process_time()
                await run()
                cpu[name].append(time.process_time() - cpu_started)
                timings[name].append(time.perf_counter() - started)
    direct_s = statistics.median(timings["direct"])
    panel_s = statistics.median(timings["panel"])
    direct_cpu = statistics.median(cpu["direct"])
    panel_cpu = statistics.median(cpu["panel"])
    return {
        "model_delay_ms": delay * 1000,
        "direct_gather_ms": direct_s * 1000,
        "panel_preset_ms": panel_s * 1000,
        "ratio": panel_s / direct_s,
        "direct_gather_cpu_ms": direct_cpu * 1000,
        "panel_preset_cpu_ms": panel_cpu * 1000,
        "cpu_ratio": panel_cpu / direct_cpu,
        "cpu_us_per_child_over_direct": (panel_cpu - direct_cpu) / members * 1e6,
    }


async def o3() -> dict[str, Any]:
    return {
        "model_call_20ms": await _fanout(0.020),
        "model_call_5ms": await _fanout(0.005),
        "instant_model_cpu_bound": await _fanout(0.0),
        "peak_rss_mb": _rss_mb(),
    }


async def main() -> dict[str, Any]:
    return {
        "O1_agent_as_tool_invoke": await o1(),
        "O2_agent_as_tool_in_manager": await o2(),
        "O3_panel_fanout_100_capacity_16": await o3(),
        "peak_rss_mb": _rss_mb(),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench_orchestration.json")
    parser.add_argument("--only", choices=("o3",), default=None)
    args = parser.parse_args()
    text = json.dumps(asyncio.run(o3() if args.only else main()), indent=2)
    print(text)
    Path(args.out).write_text(text + "\n", "utf-8")
