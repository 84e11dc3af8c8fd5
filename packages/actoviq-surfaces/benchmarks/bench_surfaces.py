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

Each shape runs ``--repeat`` rounds (default 9). A round runs the three scenarios side by side,
each in its own thread with its own event loop, fresh runtime and fresh projector, taking turns
every ``--turn-deltas`` deltas (default 1,000, about 15 ms): the running one blocks inside its
consumer loop (its event loop, producer included, stands still) and hands the turn on. Each
scenario's CPU time is its thread's ``thread_time`` summed over its own turns (wall time beside
it). Why: on a shared machine a single 1.5 s run's CPU time moves by up to 50 % with the other
processes (each preemption evicts the interpreter's caches and the refill is charged to the
run), so two scenarios run one after the other see different machines; taking turns every
15 ms puts them on the same one. The round starts from a collected heap and its first scenario
alternates (A B C, then C B A, ...). ``--turn-deltas 0`` runs each scenario whole, one after
the other (the method before the fifth pass), for comparison.

The figure is the median over the rounds of the paired CPU overhead (``scenario / consumer - 1``
of the same round). The result also holds each scenario's median and spread (min, max) of CPU
and wall time, every round's paired overhead, the ratio of medians, the fastest-run overhead,
and what could disturb a run: its involuntary context switches and its garbage-collector
collections (and their longest total). Target (issue 16): projection adds at most 25 % to the
consumer's time.

Projector alone: ``--n`` text deltas stamped by a sequencer beforehand, then projected (best of
5, process CPU time per delta): the projector's own cost without the runtime around it.

Memory: ``--memory-n`` deltas of one run are projected (events stamped by a sequencer, results
dropped as a renderer would); RSS is sampled after 100,000 deltas and at the end. Target: flat.

Usage: python bench_surfaces.py --out result.json [--n 100000] [--memory-n 1000000] [--repeat 9]
       [--turn-deltas 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import platform
import resource
import statistics
import sys
import threading
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
_DEADLINE = 600.0  # seconds any thread waits for its turn (or the others' start) at most
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


class _Baton:
    """Turn-taking between the scenarios' threads: one runs, the others wait on their event.

    A thread passes the baton every ``turn`` items: it blocks inside its consumer loop (so its
    event loop, producer included, stands still) and the next scenario runs. All scenarios of a
    round thus share the machine's state of the same ~15 ms slices, and a change of load falls
    on them alike instead of on whichever ran alone at that moment.
    """

    def __init__(self, order: Sequence[str]) -> None:
        self.order = list(order)
        self.turns = {scenario: threading.Event() for scenario in order}
        self.ready = threading.Barrier(len(order) + 1, timeout=_DEADLINE)
        self.lock = threading.Lock()

    def wait(self, scenario: str) -> None:
        if not self.turns[scenario].wait(_DEADLINE):
            raise TimeoutError(f"{scenario} waited {_DEADLINE} s for its turn")

    def pass_on(self, scenario: str) -> None:
        with self.lock:
            following = self.order[(self.order.index(scenario) + 1) % len(self.order)]
            if following == scenario:
                return
            self.turns[scenario].clear()
            self.turns[following].set()
        self.wait(scenario)

    def leave(self, scenario: str) -> None:
        with self.lock:
            position = self.order.index(scenario)
            self.order.remove(scenario)
            if self.order:
                self.turns[self.order[position % len(self.order)]].set()


class _Clock:
    """CPU (``thread_time``) and wall time of one scenario's thread while it holds the turn."""

    def __init__(self, scenario: str, baton: _Baton, turn: int) -> None:
        self.scenario = scenario
        self.baton = baton
        self.turn = turn
        self.cpu = 0.0
        self.wall = 0.0
        self.turns = 0
        self._cpu = 0.0
        self._wall = 0.0

    def start(self) -> None:
        self._wall = time.perf_counter()
        self._cpu = time.thread_time()

    def stop(self) -> None:
        self.cpu += time.thread_time() - self._cpu
        self.wall += time.perf_counter() - self._wall

    def tick(self, items: int) -> None:
        """Called after every item: every ``turn`` items, lets the next scenario run."""
        if self.turn and items % self.turn == 0:
            self.stop()
            self.turns += 1
            self.baton.pass_on(self.scenario)
            self.start()


async def _consume(n: int, scenario: str, burst: int, clock: _Clock) -> int:
    """One scenario over a fresh runtime (and projector); the clock runs while it holds the turn."""
    runtime = AgentRuntime(models=ModelRegistry([DeltaProvider(n, burst)]))
    events = 0
    sink = _Sink()
    write = sink.write
    tick = clock.tick
    async with runtime:
        clock.baton.ready.wait()
        clock.baton.wait(scenario)
        clock.start()
        if scenario == "consumer":
            async with runtime.stream(AGENT, "go") as handle:
                async for event in handle:
                    events += 1
                    if event.type == "model.text.delta":
                        write(event.data["delta"])  # type: ignore[call-overload, index]
                    tick(events)
        elif scenario == "consumer+projector":
            project = RunEventSemanticProjector().project
            async with runtime.stream(AGENT, "go") as handle:
                async for event in handle:
                    events += 1
                    for semantic in project(event):
                        if semantic.category == "text":
                            write(semantic.data["delta"])  # type: ignore[arg-type]
                    tick(events)
        else:
            bridge = AgentRuntimeBridgeAdapter(runtime, AGENT, target="cli")
            async with bridge.stream("go") as stream:
                async for chunk in arender_text(stream):
                    events += 1
                    write(chunk)
                    tick(events)
        clock.stop()
    return events


class _GcLog:
    """Collections (and their wall time) per generation, by the thread that triggered them."""

    def __init__(self) -> None:
        self.by_thread: dict[int, list[float]] = {}
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        found = self.by_thread.setdefault(threading.get_ident(), [0, 0, 0, 0.0])
        found[info["generation"]] += 1
        found[3] += time.perf_counter() - self._started


def _round(n: int, burst: int, order: Sequence[str], turn: int) -> dict[str, dict[str, float]]:
    """Every scenario once, each in its own thread and event loop, taking turns (see _Baton)."""
    baton = _Baton(order)
    results: dict[str, dict[str, float]] = {}
    errors: list[BaseException] = []
    gc_log = _GcLog()

    def run(scenario: str) -> None:
        clock = _Clock(scenario, baton, turn)
        switches = resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw
        try:
            items = asyncio.run(_consume(n, scenario, burst, clock))
        except BaseException as error:  # re-raised by the main thread
            errors.append(error)
            baton.ready.abort()
        else:
            collected = gc_log.by_thread.get(threading.get_ident(), [0, 0, 0, 0.0])
            results[scenario] = {
                "cpu": clock.cpu,
                "wall": clock.wall,
                "items": items,
                "turns": clock.turns,
                "involuntary_switches": resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw
                - switches,
                "gc_collections": sum(collected[:3]),
                "gc_full_collections": collected[2],
                "gc_seconds": collected[3],
            }
        finally:
            baton.leave(scenario)

    threads = [threading.Thread(target=run, args=(scenario,)) for scenario in order]
    gc.collect()  # every round starts from the same heap state, whatever ran before it
    gc.callbacks.append(gc_log)
    try:
        for thread in threads:
            thread.start()
        with contextlib.suppress(threading.BrokenBarrierError):  # a thread failed: see errors
            baton.ready.wait()  # every runtime entered: start the first scenario's turn
        baton.turns[order[0]].set()
        for thread in threads:
            thread.join(_DEADLINE)
    finally:
        gc.callbacks.remove(gc_log)
    if errors:
        raise errors[0]
    return results


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


def _shape(n: int, repeat: int, burst: int, turn_deltas: int) -> dict[str, list[dict[str, float]]]:
    """``repeat`` rounds of every scenario side by side, first scenario alternating (ABC, CBA)."""
    runs: dict[str, list[dict[str, float]]] = {scenario: [] for scenario in SCENARIOS}
    # A turn of ``turn_deltas`` deltas: the same number of source events per turn in both shapes
    # would make the network shape's turns 16 times longer. 0: each scenario runs whole, alone.
    turn = max(1, turn_deltas // burst) if turn_deltas else 0
    for index in range(repeat):
        order = SCENARIOS if index % 2 == 0 else SCENARIOS[::-1]
        found = _round(n, burst, order, turn)
        for scenario in SCENARIOS:
            runs[scenario].append(found[scenario])
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
                "cpu_overhead_paired_each": [round(value, 4) for value in paired_cpu],
                "turns": int(statistics.median(run["turns"] for run in found)),
                # What could disturb a run: preemptions by other processes, collector pauses.
                "involuntary_switches": [int(run["involuntary_switches"]) for run in found],
                "gc_collections": [int(run["gc_collections"]) for run in found],
                "gc_full_collections": [int(run["gc_full_collections"]) for run in found],
                "gc_seconds_max": round(max(run["gc_seconds"] for run in found), 4),
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--memory-n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--turn-deltas", type=int, default=1_000)
    args = parser.parse_args()
    if args.repeat < 1 or args.turn_deltas < 0:
        parser.error("--repeat must be at least 1 and --turn-deltas not negative")

    load_before = list(psutil.getloadavg())
    memory = _memory(args.memory_n)
    _round(min(args.n, 5_000), 1, SCENARIOS, 0)  # warm-up (imports, caches)
    scenarios: list[dict[str, Any]] = []
    overheads: dict[str, float] = {}
    for shape, burst in SHAPES.items():
        runs = _shape(args.n, args.repeat, burst, args.turn_deltas)
        for row in _report(shape, args.n, runs):
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
        "turn_deltas": args.turn_deltas,
        "load_average_before": load_before,
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
