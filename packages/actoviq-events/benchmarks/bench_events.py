"""Events throughput: ``EventEmitter.emit`` → ``EventDispatcher`` → ``InMemoryEventSink``.

Scenarios (each ``--n`` small events on one core, one run, a bounded sink of 10,000 events):

* ``plain``: no processors (the sink copies every payload);
* ``redaction``: the default processor chain (key-based redaction);
* ``redaction+scan``: redaction with text scanning on.

Throughput is reported from wall-clock time and from process CPU time (the CPU figure is the
stable one on a shared, loaded machine). A memory pass runs first, in a fresh process state:
``--memory-n`` events through the default chain into the bounded sink, with the resident set
size sampled after 100,000 events and at the end, and the process peak RSS.

Usage: python bench_events.py --out result.json [--n 1000000] [--memory-n 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from actoviq.events import (
    EventDispatcher,
    EventEmitter,
    EventProcessor,
    InMemoryEventSink,
    RedactionPolicy,
    SequentialIdFactory,
    SystemClock,
    create_root_trace_context,
    default_processors,
)

PAYLOADS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("model.text.delta", {"delta": "Compare-and-set swaps", "outputIndex": 1}),
    ("tool.started", {"callId": "call_weather", "name": "get_weather", "effect": "read"}),
    ("model.requested", {"turn": 1, "model": "openai:gpt-test"}),
    (
        "tool.completed",
        {"callId": "call_weather", "name": "get_weather", "headers": {"apiKey": "k"}},
    ),
)
SINK_EVENTS = 10_000
CHECKPOINT = 100_000


def _processors(scenario: str) -> list[EventProcessor]:
    if scenario == "plain":
        return []
    return default_processors(RedactionPolicy(scan_text=scenario == "redaction+scan"))


async def _run(
    n: int, scenario: str, rss_at: dict[int, int] | None = None
) -> tuple[float, float, InMemoryEventSink]:
    ids = SequentialIdFactory()
    sink = InMemoryEventSink(max_events=SINK_EVENTS)
    process = psutil.Process()
    async with EventDispatcher(_processors(scenario), [sink]) as dispatcher:
        emitter = EventEmitter(
            create_root_trace_context("bench", ids=ids), dispatcher, ids=ids, clock=SystemClock()
        )
        emit = emitter.emit
        wall = time.perf_counter()
        cpu = time.process_time()
        if rss_at is None:
            for index in range(n):
                event_type, data = PAYLOADS[index & 3]
                await emit(event_type, data)
        else:
            for index in range(1, n + 1):
                event_type, data = PAYLOADS[index & 3]
                await emit(event_type, data)
                if index in (CHECKPOINT, n):
                    rss_at[index] = process.memory_info().rss
        cpu = time.process_time() - cpu
        wall = time.perf_counter() - wall
    if sink.last_sequence("bench") != n or len(sink.events) + sink.dropped != n:
        raise AssertionError("the sink did not receive every event")
    return wall, cpu, sink


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--memory-n", type=int, default=1_000_000)
    args = parser.parse_args()
    process = psutil.Process()

    rss_start = process.memory_info().rss
    rss_at: dict[int, int] = {}
    asyncio.run(_run(args.memory_n, "redaction", rss_at))
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    memory = {
        "scenario": "redaction",
        "events": args.memory_n,
        "sink_retained_events": SINK_EVENTS,
        "rss_start_bytes": rss_start,
        "rss_bytes_at": {str(count): rss for count, rss in sorted(rss_at.items())},
        "peak_rss_bytes": peak_kib * 1024,
    }

    scenarios: list[dict[str, Any]] = []
    for scenario in ("plain", "redaction", "redaction+scan"):
        wall, cpu, _ = asyncio.run(_run(args.n, scenario))
        scenarios.append(
            {
                "scenario": scenario,
                "events": args.n,
                "seconds": round(wall, 3),
                "events_per_second": round(args.n / wall, 1),
                "microseconds_per_event": round(wall / args.n * 1e6, 3),
                "cpu_seconds": round(cpu, 3),
                "cpu_events_per_second": round(args.n / cpu, 1),
                "cpu_microseconds_per_event": round(cpu / args.n * 1e6, 3),
            }
        )

    result = {
        "benchmark": "emit -> dispatcher -> in-memory sink",
        "scenarios": scenarios,
        "memory": memory,
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
