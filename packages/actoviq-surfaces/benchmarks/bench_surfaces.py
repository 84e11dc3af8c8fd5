"""Surface projection cost on a streamed run, and memory on an endless stream.

Scenarios (each ``--n`` text deltas streamed by a real ``AgentRuntime`` from a provider written
on the public ``BaseModelProvider`` extension point, consumed through ``runtime.stream``; the
consumer writes every delta to a sink):

* ``consumer``: the baseline consumer reading raw ``RunEvent``s;
* ``consumer+projector``: the same consumer, every event through ``RunEventSemanticProjector``
  (writes the semantic ``text.delta``);
* ``consumer+bridge+render``: ``AgentRuntimeBridgeAdapter.stream`` (shared projector, ``bridge``
  copy) into ``arender_text`` into the sink — the whole terminal path.

Two stream shapes: ``per-delta`` (the provider yields to the event loop after every delta, so
the consumer handles each delta as its own event: the worst case for projection) and
``network`` (the provider yields after every 16 deltas, as when one socket read carries a burst
of SSE events; the runtime's handle coalesces what the consumer has not taken yet).

Each shape runs ``--repeat`` rounds (at least 5) in one process; a round runs every scenario once,
in alternating order (A B C, then C B A, ...), each from a collected heap, so a change of the
machine's load falls on all scenarios alike. The overhead is ``median(scenario) /
median(consumer) - 1`` on process CPU time (the stable figure on a shared machine) and on wall
time; the result also holds each scenario's spread (min, max), the per-round ("paired")
overheads and the overhead of the fastest runs. The target figure is the median of the paired
CPU overheads (it moved least between runs on a loaded machine). Target (issue 16): projection
adds at most 25 % to the consumer's time.

Projector alone: ``--n`` text deltas stamped by a sequencer beforehand, then projected (best of
5, process CPU time per delta): the projector's own cost without the runtime around it.

Memory: ``--memory-n`` deltas of one run are projected (events stamped by a sequencer, results
dropped as a renderer would); RSS is sampled after 100,000 deltas and at the end. Target: flat.

Usage: python bench_surfaces.py --out result.json [--n 100000] [--memory-n 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import statistics
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import psutil

from actoviq.core import AgentSpec, TextItem, Usage
from actoviq.events import RunEventSequencer, create_root_trace_context
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
from actoviq.runtime import AgentRuntime
from actoviq.surfaces import AgentRuntimeBridgeAdapter, RunEventSemanticProjector, arender_text

AGENT: AgentSpec[Any, Any] = AgentSpec(
    id="bench", name="Bench", instructions="Stream.", model="deltas:bench"
)
CHECKPOINT = 100_000
SCENARIOS = ("consumer", "consumer+projector", "consumer+bridge+render")
SHAPES = {"per-delta": 1, "network": 16}
WORDS = (
    "The ",
    "runtime ",
    "streams ",
    "tokens, ",
    "and ",
    "each ",
    "one ",
    "is ",
    "a ",
    "delta. ",
)


class _Sink:
    """Stands in for a terminal: counts what would be written."""

    def __init__(self) -> None:
        self.chars = 0

    def write(self, text: str) -> None:
        self.chars += len(text)


class _PassThrough:
    def map(self, event: Any) -> Sequence[ModelStreamEvent]:
        return (event,)

    def finalize(self) -> ModelResponse:  # pragma: no cover - the source always completes
        raise RuntimeError("stream ended without a response")


class DeltaProvider(BaseModelProvider):
    """Streams ``count`` word deltas from a generator, yielding to the loop every ``burst``."""

    def __init__(self, count: int, burst: int) -> None:
        super().__init__(id="deltas", default_capabilities=ALL_CAPABILITIES)
        self.count = count
        self.burst = burst

    def _final(self, prepared: PreparedCall) -> ModelResponse:
        return ModelResponse(
            id="deltas",
            model=prepared.model,
            output=(TextItem(role="assistant", text="streamed"),),
            usage=Usage(requests=1, input_tokens=10, output_tokens=self.count),
        )

    async def _generate(self, prepared: PreparedCall, context: ModelCallContext) -> ModelResponse:
        return self._final(prepared)

    def _stream_mapper(self, prepared: PreparedCall) -> StreamMapper:
        return _PassThrough()

    async def _open_stream(
        self, prepared: PreparedCall, context: ModelCallContext
    ) -> AsyncIterator[Any]:
        return self._events(prepared)

    async def _events(self, prepared: PreparedCall) -> AsyncIterator[ModelStreamEvent]:
        burst = self.burst
        for index in range(self.count):
            if index % burst == 0:
                await asyncio.sleep(0)  # a socket read: let the consumer run
            yield TextDelta(delta=WORDS[index % 10], output_index=0)
        yield ResponseCompleted(response=self._final(prepared))


async def _consume(n: int, scenario: str, burst: int) -> dict[str, float]:
    runtime = AgentRuntime(models=ModelRegistry([DeltaProvider(n, burst)]))
    events = 0
    sink = _Sink()
    write = sink.write
    async with runtime:
        wall = time.perf_counter()
        cpu = time.process_time()
        if scenario == "consumer":
            async with runtime.stream(AGENT, "go") as handle:
                async for event in handle:
                    events += 1
                    if event.type == "model.text.delta":
                        write(event.data["delta"])  # type: ignore[call-overload, index]
        elif scenario == "consumer+projector":
            project = RunEventSemanticProjector().project
            async with runtime.stream(AGENT, "go") as handle:
                async for event in handle:
                    events += 1
                    for semantic in project(event):
                        if semantic.category == "text":
                            write(semantic.data["delta"])  # type: ignore[arg-type]
        else:
            bridge = AgentRuntimeBridgeAdapter(runtime, AGENT, target="cli")
            async with bridge.stream("go") as stream:
                async for chunk in arender_text(stream):
                    events += 1
                    write(chunk)
        cpu = time.process_time() - cpu
        wall = time.perf_counter() - wall
    return {"wall": wall, "cpu": cpu, "items": events}


def _alone(n: int, repeat: int = 5) -> float:
    """CPU microseconds per delta of the projector over pre-built events (best of ``repeat``)."""
    best = float("inf")
    for _ in range(repeat):
        sequencer = RunEventSequencer(create_root_trace_context("alone"))
        events = [sequencer.next("model.requested", {"turn": 1, "model": "p:m"})]
        events += [
            sequencer.next("model.text.delta", {"delta": WORDS[index % 10], "outputIndex": 0})
            for index in range(n)
        ]
        project = RunEventSemanticProjector().project
        cpu = time.process_time()
        for event in events:
            project(event)
        best = min(best, time.process_time() - cpu)
    return round(best / n * 1e6, 3)


def _memory(n: int) -> dict[str, Any]:
    process = psutil.Process()
    sequencer = RunEventSequencer(create_root_trace_context("memory"))
    projector = RunEventSemanticProjector()
    rss_start = process.memory_info().rss
    rss_at: dict[str, int] = {}
    project = projector.project
    project(sequencer.next("model.requested", {"turn": 1, "model": "p:m"}))
    for index in range(1, n + 1):
        project(sequencer.next("model.text.delta", {"delta": "tok ", "outputIndex": 0}))
        if index in (CHECKPOINT, n):
            rss_at[str(index)] = process.memory_info().rss
    return {
        "deltas": n,
        "rss_start_bytes": rss_start,
        "rss_bytes_at": rss_at,
        "growth_bytes_100k_to_end": rss_at[str(n)] - rss_at[str(CHECKPOINT)]
        if n >= CHECKPOINT
        else None,
    }


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {"min": round(min(values), 4), "max": round(max(values), 4)}


def _shape(n: int, repeat: int, burst: int) -> dict[str, list[dict[str, float]]]:
    """``repeat`` runs of every scenario, interleaved in one process (ABC, CBA, ABC, ...)."""
    runs: dict[str, list[dict[str, float]]] = {scenario: [] for scenario in SCENARIOS}
    for index in range(repeat):
        order = SCENARIOS if index % 2 == 0 else SCENARIOS[::-1]
        for scenario in order:
            gc.collect()  # every run starts from the same heap state, whatever ran before it
            runs[scenario].append(asyncio.run(_consume(n, scenario, burst)))
    return runs


def _report(shape: str, n: int, runs: dict[str, list[dict[str, float]]]) -> list[dict[str, Any]]:
    base = runs["consumer"]
    base_cpu = statistics.median(run["cpu"] for run in base)
    base_wall = statistics.median(run["wall"] for run in base)
    rows: list[dict[str, Any]] = []
    for scenario in SCENARIOS:
        found = runs[scenario]
        cpu = [run["cpu"] for run in found]
        wall = [run["wall"] for run in found]
        # Each repeat's overhead against the consumer run of the same round (run next to it).
        paired_cpu = [run["cpu"] / plain["cpu"] - 1 for run, plain in zip(found, base, strict=True)]
        paired_wall = [
            run["wall"] / plain["wall"] - 1 for run, plain in zip(found, base, strict=True)
        ]
        rows.append(
            {
                "shape": shape,
                "scenario": scenario,
                "deltas": n,
                "repeats": len(found),
                "items_consumed": int(statistics.median(run["items"] for run in found)),
                "seconds": round(statistics.median(wall), 3),
                "seconds_spread": _spread(wall),
                "cpu_seconds": round(statistics.median(cpu), 3),
                "cpu_seconds_spread": _spread(cpu),
                "cpu_microseconds_per_delta": round(statistics.median(cpu) / n * 1e6, 3),
                "cpu_overhead_vs_consumer": round(statistics.median(cpu) / base_cpu - 1, 4),
                "wall_overhead_vs_consumer": round(statistics.median(wall) / base_wall - 1, 4),
                # The least disturbed runs (load only ever adds time): a cross-check of the median.
                "cpu_overhead_fastest_vs_fastest": round(
                    min(cpu) / min(run["cpu"] for run in base) - 1, 4
                ),
                "cpu_overhead_paired": {
                    "median": round(statistics.median(paired_cpu), 4),
                    **_spread(paired_cpu),
                },
                "wall_overhead_paired": {
                    "median": round(statistics.median(paired_wall), 4),
                    **_spread(paired_wall),
                },
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--memory-n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    memory = _memory(args.memory_n)
    asyncio.run(_consume(min(args.n, 5_000), "consumer", 1))  # warm-up (imports, caches)
    scenarios: list[dict[str, Any]] = []
    overheads: dict[str, float] = {}
    for shape, burst in SHAPES.items():
        for row in _report(shape, args.n, _shape(args.n, args.repeat, burst)):
            scenarios.append(row)
            if row["scenario"] == "consumer+projector":
                # The figure: the median of the per-round overheads (each projector run against
                # the consumer run beside it), the one that stays put when the load moves.
                overheads[shape] = row["cpu_overhead_paired"]["median"]
    result = {
        "benchmark": "surface projection on a streamed run (runtime.stream, scripted provider)",
        "scenarios": scenarios,
        "target": {
            "projection_cpu_overhead_max": 0.25,
            "projection_cpu_overhead_by_shape": overheads,
            "met_by_shape": {shape: value <= 0.25 for shape, value in overheads.items()},
        },
        "memory": memory,
        "projector_alone_cpu_microseconds_per_delta": _alone(args.n),
        "repeat": args.repeat,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "load_average": list(psutil.getloadavg()),
        "cpu_count": psutil.cpu_count(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
