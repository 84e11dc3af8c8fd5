"""Runtime benchmarks W1-W5 (``python bench_runtime.py --out results.json``).

W1 one-turn text run x2000 (us/run); W2 three-turn loop with 2 read-only tool calls per tool turn
x1000 (us/run); W3 1000 concurrent W2 runs in a fresh process (wall s, peak RSS MB); W4 one
streamed run of 100,000 text deltas through RunHandle (deltas/s, peak RSS MB) plus the RSS growth
from 100k to 1M deltas; W5 cold ``import actoviq.runtime`` (median of 5 fresh processes, ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, ToolRegistry, tool


@tool(effect="read")
def weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


def _agent(tools: tuple[str, ...] = ()) -> AgentSpec[Any, Any]:
    return AgentSpec(id="bench", name="Bench", instructions="Be brief.", model="s:m", tools=tools)


def _w2_script() -> list[Any]:
    calls = [
        ToolCallItem(id="c1", name="weather", input={"city": "Paris"}),
        ToolCallItem(id="c2", name="weather", input={"city": "Rome"}),
    ]
    return [ScriptedTurn(tool_calls=calls), ScriptedTurn(tool_calls=calls), "done"]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


async def w1(n: int = 2000) -> float:
    provider = ScriptedProvider(["hello"], id="s", repeat_last=True)
    async with AgentRuntime(models=ModelRegistry([provider])) as runtime:
        agent = _agent()
        await runtime.run(agent, "hi")
        provider.calls.clear()
        started = time.perf_counter()
        for _ in range(n):
            provider.calls.clear()
            await runtime.run(agent, "hi")
        return (time.perf_counter() - started) / n * 1e6


async def w2(n: int = 1000) -> float:
    async with AgentRuntime(
        models=ModelRegistry([ScriptedProvider(id="s")]), tools=ToolRegistry([weather])
    ) as runtime:
        agent = _agent(("weather",))
        total = 0.0
        for _ in range(n):
            provider = ScriptedProvider(_w2_script(), id="s")
            runtime.models.register(provider, replace=True)
            started = time.perf_counter()
            result = await runtime.run(agent, "weather?")
            total += time.perf_counter() - started
            assert result.output == "done"
        return total / n * 1e6


async def w3(n: int = 1000) -> dict[str, float]:
    class Provider(ScriptedProvider):
        pass

    # one provider answering by request shape: tool turns until two tool rounds are done
    calls = _w2_script()[0]

    def answer(request: Any) -> Any:
        rounds = sum(1 for item in request.input if getattr(item, "type", "") == "tool_result")
        return calls if rounds < 4 else "done"

    provider = Provider([answer], id="s", repeat_last=True)
    async with AgentRuntime(
        models=ModelRegistry([provider]), tools=ToolRegistry([weather]), max_concurrent_runs=n
    ) as runtime:
        agent = _agent(("weather",))
        started = time.perf_counter()
        results = await asyncio.gather(*(runtime.run(agent, "weather?") for _ in range(n)))
        wall = time.perf_counter() - started
        assert all(r.output == "done" for r in results)
    return {"wall_s": wall, "peak_rss_mb": _rss_mb()}


async def w4(deltas: int) -> dict[str, float]:
    turn = ScriptedTurn(text="", stream_deltas=["x"] * deltas)
    async with AgentRuntime(models=ModelRegistry([ScriptedProvider([turn], id="s")])) as runtime:
        count = 0
        started = time.perf_counter()
        async with runtime.stream(_agent(), "stream") as handle:
            async for event in handle:
                if event.type == "model.text.delta":
                    count += 1
            await handle.result()
        elapsed = time.perf_counter() - started
    return {"deltas_per_s": deltas / elapsed, "peak_rss_mb": _rss_mb(), "events_seen": count}


def fresh(mode: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--mode", mode], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def w5() -> float:
    samples: list[float] = []
    for _ in range(5):
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                "import time;t=time.perf_counter();import actoviq.runtime;"
                "print((time.perf_counter()-t)*1000)",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        samples.append(float(out.stdout.strip()))
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--mode")
    args = parser.parse_args()
    if args.mode == "w3":
        print(json.dumps(asyncio.run(w3())))
        return
    if args.mode in ("w4", "w4-1m"):
        print(json.dumps(asyncio.run(w4(100_000 if args.mode == "w4" else 1_000_000))))
        return
    results: dict[str, Any] = {
        "W1_one_turn_us_per_run": asyncio.run(w1()),
        "W2_tool_loop_us_per_run": asyncio.run(w2()),
        "W3_concurrent": fresh("w3"),
        "W4_stream_100k": fresh("w4"),
        "W4_stream_1m": fresh("w4-1m"),
        "W5_cold_import_ms": w5(),
    }
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
