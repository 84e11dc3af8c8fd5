"""Runtime benchmarks W1-W5 (``python bench_runtime.py --out results.json``).

W1 one-turn text run x2000 (us/run); W2 three-turn loop with 2 read-only tool calls per tool turn
x1000 (us/run); W3 1000 concurrent W2 runs in a fresh process (wall s, peak RSS MB); W4 one
streamed run of 100,000 text deltas through RunHandle (deltas/s, peak RSS MB) plus the RSS growth
from 100k to 1M deltas; W5 cold ``import actoviq.runtime`` (median of 5 fresh processes, ms).

``--mode w1|w2|w3|w4|w4-1m`` runs one workload in this process and prints its JSON (used by
``peers_runtime.py`` so every workload of every framework runs in a fresh process).

W4 uses :class:`DeltaProvider`, a generator-fed provider: ``ScriptedProvider`` builds every
scripted stream event up front (a list of 1M ``TextDelta`` objects at 1M deltas), which would
measure the script, not the runtime.
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
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

from actoviq.core import AgentSpec, TextItem, ToolCallItem, ToolResultItem, Usage
from actoviq.providers import (
    ALL_CAPABILITIES,
    BaseModelProvider,
    ModelCallContext,
    ModelRegistry,
    ModelRequest,
    ModelResponse,
    ModelStreamEvent,
    PreparedCall,
    ResponseCompleted,
    StreamMapper,
    TextDelta,
)
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, ToolRegistry, tool


@tool(effect="read")
def weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


_ROUNDS = tuple(
    ScriptedTurn(
        tool_calls=[
            ToolCallItem(id=f"c{rounds + 1}", name="weather", input={"city": "Paris"}),
            ToolCallItem(id=f"c{rounds + 2}", name="weather", input={"city": "Rome"}),
        ]
    )
    for rounds in (0, 2)
)


def _agent(tools: tuple[str, ...] = ()) -> AgentSpec[Any, Any]:
    return AgentSpec(id="bench", name="Bench", instructions="Be brief.", model="s:m", tools=tools)


def _w2_answer(request: ModelRequest) -> ScriptedTurn | str:
    """Two tool turns (two read-only calls each, fresh call ids), then text: answered by shape."""
    rounds = sum(1 for item in request.input if isinstance(item, ToolResultItem))
    return _ROUNDS[rounds // 2] if rounds < 4 else "done"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class _PassThrough:
    def map(self, event: Any) -> Sequence[ModelStreamEvent]:
        return (event,)

    def finalize(self) -> ModelResponse:  # pragma: no cover - the source always completes
        raise RuntimeError("stream ended without a response")


class DeltaProvider(BaseModelProvider):
    """Streams ``count`` one-character text deltas from a generator (O(1) memory per delta)."""

    def __init__(self, count: int, *, id: str = "s") -> None:
        super().__init__(id=id, default_capabilities=ALL_CAPABILITIES)
        self.count = count

    async def _generate(self, prepared: PreparedCall, context: ModelCallContext) -> ModelResponse:
        return self._final(prepared)

    def _final(self, prepared: PreparedCall) -> ModelResponse:
        return ModelResponse(
            id="delta",
            model=prepared.model,
            output=(TextItem(role="assistant", text="x" * self.count),),
            usage=Usage(requests=1),
        )

    def _stream_mapper(self, prepared: PreparedCall) -> StreamMapper:
        return _PassThrough()

    async def _open_stream(
        self, prepared: PreparedCall, context: ModelCallContext
    ) -> AsyncIterator[Any]:
        return self._events(prepared)

    async def _events(self, prepared: PreparedCall) -> AsyncIterator[ModelStreamEvent]:
        for _ in range(self.count):
            yield TextDelta(delta="x", output_index=0)
        yield ResponseCompleted(response=self._final(prepared))


async def _sequential(
    runtime: AgentRuntime, provider: ScriptedProvider, agent: AgentSpec[Any, Any], n: int, out: str
) -> dict[str, float]:
    assert (await runtime.run(agent, "hi")).output == out  # warm-up
    cpu = time.process_time()
    started = time.perf_counter()
    for _ in range(n):
        provider.calls.clear()
        await runtime.run(agent, "hi")
    wall = time.perf_counter() - started
    return {"us_per_run": wall / n * 1e6, "cpu_us_per_run": (time.process_time() - cpu) / n * 1e6}


async def w1(n: int = 2000) -> dict[str, float]:
    provider = ScriptedProvider(["hello"], id="s", repeat_last=True)
    async with AgentRuntime(models=ModelRegistry([provider])) as runtime:
        return await _sequential(runtime, provider, _agent(), n, "hello")


async def w2(n: int = 1000) -> dict[str, float]:
    provider = ScriptedProvider([_w2_answer], id="s", repeat_last=True)
    async with AgentRuntime(models=ModelRegistry([provider]), tools=ToolRegistry([weather])) as rt:
        return await _sequential(rt, provider, _agent(("weather",)), n, "done")


async def w3(n: int = 1000) -> dict[str, float]:
    provider = ScriptedProvider([_w2_answer], id="s", repeat_last=True)
    async with AgentRuntime(
        models=ModelRegistry([provider]), tools=ToolRegistry([weather]), max_concurrent_runs=n
    ) as runtime:
        agent = _agent(("weather",))
        cpu = time.process_time()
        started = time.perf_counter()
        results = await asyncio.gather(*(runtime.run(agent, "weather?") for _ in range(n)))
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu
        assert all(r.output == "done" for r in results)
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": _rss_mb()}


async def w4(deltas: int) -> dict[str, float]:
    async with AgentRuntime(models=ModelRegistry([DeltaProvider(deltas)])) as runtime:
        count = 0
        text = 0
        cpu = time.process_time()
        started = time.perf_counter()
        async with runtime.stream(_agent(), "stream") as handle:
            async for event in handle:
                if event.type == "model.text.delta":
                    count += 1
                    text += len(cast(dict[str, Any], event.data)["delta"])
            await handle.result()
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu
    assert text == deltas, "every delta's text reaches the consumer"
    return {
        "deltas_per_s": deltas / elapsed,
        "cpu_deltas_per_s": deltas / cpu,
        "peak_rss_mb": _rss_mb(),
        # adjacent deltas are coalesced in the handle buffer while the consumer is behind (D5)
        "events_seen": count,
    }


def fresh(mode: str) -> Any:
    out = subprocess.run(
        [sys.executable, __file__, "--mode", mode], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def w5() -> float:
    samples: list[float] = []
    for _ in range(6):
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
    return statistics.median(samples[1:])  # the first run may compile bytecode


def run_mode(mode: str) -> Any:
    """One workload in this process (``--mode``)."""
    if mode == "w1":
        return asyncio.run(w1())
    if mode == "w2":
        return asyncio.run(w2())
    if mode == "w3":
        return asyncio.run(w3())
    if mode in ("w4", "w4-1m"):
        return asyncio.run(w4(100_000 if mode == "w4" else 1_000_000))
    if mode == "w5":
        return w5()
    raise SystemExit(f"unknown mode {mode}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--mode")
    args = parser.parse_args()
    if args.mode:
        print(json.dumps(run_mode(args.mode)))
        return
    w4_100k = fresh("w4")
    w4_1m = fresh("w4-1m")
    results: dict[str, Any] = {
        "W1_one_turn": fresh("w1"),
        "W2_tool_loop": fresh("w2"),
        "W3_concurrent": fresh("w3"),
        "W4_stream_100k": w4_100k,
        "W4_stream_1m": w4_1m,
        "W4_rss_growth_100k_to_1m_mb": w4_1m["peak_rss_mb"] - w4_100k["peak_rss_mb"],
        "W5_cold_import_ms": w5(),
    }
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
