"""Runtime benchmarks W1-W5 and W4y (``python bench_runtime.py --out results.json``).

W1 one-turn text run x2000 (us/run); W2 three-turn loop with 2 read-only tool calls per tool turn
x1000 (us/run); W3 1000 concurrent W2 runs in a fresh process (wall s, peak RSS MB); W4 one
streamed run of 100,000 text deltas through RunHandle, the producer never yielding to the loop
(deltas/s, peak RSS MB) plus the RSS growth from 100k to 1M deltas; W4y the same stream from a
producer that awaits ``asyncio.sleep(0)`` after every delta, as a model read off the network does;
W5 cold ``import actoviq.runtime`` (median of 5 fresh processes, ms). W6 (session turns on a
SQLite file) lives in ``bench_sessions.py``.

``--mode w1|w2|w3|w4|w4-1m|w4y|w4y-1m`` runs one workload in this process and prints its JSON
(used by ``peers_runtime.py`` so every workload of every framework runs in a fresh process).

Every workload uses :class:`BenchModel`, a provider written the way a user writes one: a
:class:`~actoviq.providers.BaseModelProvider` subclass that builds its own ``ModelResponse`` (and,
streaming, its own ``TextDelta`` events from a generator: O(1) memory per delta), never
``ScriptedProvider`` or any internal shortcut.
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

from actoviq.core import AgentSpec, OutputItem, TextItem, ToolCallItem, ToolResultItem, Usage
from actoviq.providers import (
    ALL_CAPABILITIES,
    BaseModelProvider,
    ModelCallContext,
    ModelRegistry,
    ModelResponse,
    ModelStreamEvent,
    PreparedCall,
    ResponseCompleted,
    StreamMapper,
    TextDelta,
)
from actoviq.runtime import AgentRuntime, ToolRegistry, tool


@tool(effect="read")
def weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


def _agent(tools: tuple[str, ...] = ()) -> AgentSpec[Any, Any]:
    return AgentSpec(
        id="bench", name="Bench", instructions="Be brief.", model="bench:m", tools=tools
    )


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class _PassThrough:
    """The stream mapper of a provider whose source already yields ``ModelStreamEvent`` s."""

    def map(self, event: Any) -> Sequence[ModelStreamEvent]:
        return (event,)

    def finalize(self) -> ModelResponse:  # pragma: no cover - the source always completes
        raise RuntimeError("stream ended without a response")


class BenchModel(BaseModelProvider):
    """A fake model written as a user writes one (the public ``BaseModelProvider`` hooks).

    ``generate`` answers by request shape: with ``tools``, two read-only tool calls per turn
    until four tool results are in the transcript, then text; otherwise ``reply``. ``stream``
    yields ``deltas`` one-character ``TextDelta`` s from a generator and, with ``yields``, awaits
    ``asyncio.sleep(0)`` after each one (a model read off a socket hands the loop over between
    chunks). It does nothing else with the transcript: mapping it is a real provider's cost.
    """

    def __init__(
        self, *, tools: bool = False, deltas: int = 0, yields: bool = False, reply: str = "hello"
    ) -> None:
        super().__init__(id="bench", default_capabilities=ALL_CAPABILITIES)
        self.tools = tools
        self.deltas = deltas
        self.yields = yields
        self.reply = reply
        self.calls = 0

    def _output(self, prepared: PreparedCall) -> tuple[OutputItem, ...]:
        if not self.tools:
            return (TextItem(role="assistant", text=self.reply),)
        rounds = sum(1 for item in prepared.request.input if type(item) is ToolResultItem)
        if rounds >= 4:
            return (TextItem(role="assistant", text="done"),)
        return (
            ToolCallItem(id=f"c{rounds + 1}", name="weather", input={"city": "Paris"}),
            ToolCallItem(id=f"c{rounds + 2}", name="weather", input={"city": "Rome"}),
        )

    def _response(self, prepared: PreparedCall, output: tuple[OutputItem, ...]) -> ModelResponse:
        self.calls += 1
        return ModelResponse(
            id=f"resp-{self.calls}",
            model=prepared.model,
            output=output,
            usage=Usage(requests=1, input_tokens=10, output_tokens=len(output)),
        )

    async def _generate(self, prepared: PreparedCall, context: ModelCallContext) -> ModelResponse:
        return self._response(prepared, self._output(prepared))

    def _stream_mapper(self, prepared: PreparedCall) -> StreamMapper:
        return _PassThrough()

    async def _open_stream(
        self, prepared: PreparedCall, context: ModelCallContext
    ) -> AsyncIterator[Any]:
        return self._events(prepared)

    async def _events(self, prepared: PreparedCall) -> AsyncIterator[ModelStreamEvent]:
        if self.yields:
            for _ in range(self.deltas):
                yield TextDelta(delta="x", output_index=0)
                await asyncio.sleep(0)
        else:
            for _ in range(self.deltas):
                yield TextDelta(delta="x", output_index=0)
        text = TextItem(role="assistant", text="x" * self.deltas)
        yield ResponseCompleted(response=self._response(prepared, (text,)))


async def _sequential(
    runtime: AgentRuntime, agent: AgentSpec[Any, Any], n: int, out: str
) -> dict[str, float]:
    assert (await runtime.run(agent, "hi")).output == out  # warm-up
    cpu = time.process_time()
    started = time.perf_counter()
    for _ in range(n):
        await runtime.run(agent, "hi")
    wall = time.perf_counter() - started
    return {"us_per_run": wall / n * 1e6, "cpu_us_per_run": (time.process_time() - cpu) / n * 1e6}


async def w1(n: int = 2000) -> dict[str, float]:
    async with AgentRuntime(models=ModelRegistry([BenchModel()])) as runtime:
        return await _sequential(runtime, _agent(), n, "hello")


async def w2(n: int = 1000) -> dict[str, float]:
    models = ModelRegistry([BenchModel(tools=True)])
    async with AgentRuntime(models=models, tools=ToolRegistry([weather])) as runtime:
        return await _sequential(runtime, _agent(("weather",)), n, "done")


async def w3(n: int = 1000) -> dict[str, float]:
    async with AgentRuntime(
        models=ModelRegistry([BenchModel(tools=True)]),
        tools=ToolRegistry([weather]),
        max_concurrent_runs=n,
    ) as runtime:
        agent = _agent(("weather",))
        cpu = time.process_time()
        started = time.perf_counter()
        results = await asyncio.gather(*(runtime.run(agent, "weather?") for _ in range(n)))
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu
        assert all(r.output == "done" for r in results)
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": _rss_mb()}


async def w4(deltas: int, *, yields: bool = False) -> dict[str, float]:
    model = BenchModel(deltas=deltas, yields=yields)
    async with AgentRuntime(models=ModelRegistry([model])) as runtime:
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


_STREAMS = {
    "w4": (100_000, False),
    "w4-1m": (1_000_000, False),
    "w4y": (100_000, True),
    "w4y-1m": (1_000_000, True),
}


def run_mode(mode: str) -> Any:
    """One workload in this process (``--mode``)."""
    if mode == "w1":
        return asyncio.run(w1())
    if mode == "w2":
        return asyncio.run(w2())
    if mode == "w3":
        return asyncio.run(w3())
    if mode in _STREAMS:
        deltas, yields = _STREAMS[mode]
        return asyncio.run(w4(deltas, yields=yields))
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
    streams = {mode: fresh(mode) for mode in _STREAMS}
    results: dict[str, Any] = {
        "W1_one_turn": fresh("w1"),
        "W2_tool_loop": fresh("w2"),
        "W3_concurrent": fresh("w3"),
        "W4_stream_100k": streams["w4"],
        "W4_stream_1m": streams["w4-1m"],
        "W4_rss_growth_100k_to_1m_mb": streams["w4-1m"]["peak_rss_mb"]
        - streams["w4"]["peak_rss_mb"],
        "W4y_stream_100k": streams["w4y"],
        "W4y_stream_1m": streams["w4y-1m"],
        "W4y_rss_growth_100k_to_1m_mb": streams["w4y-1m"]["peak_rss_mb"]
        - streams["w4y"]["peak_rss_mb"],
        "W5_cold_import_ms": w5(),
    }
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
