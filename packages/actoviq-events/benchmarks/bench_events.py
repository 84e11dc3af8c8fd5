"""Events throughput: envelope stamping + default redaction + InMemoryEventSink.

Usage: python bench_events.py --out result.json [--n 1000000] [--scan-text]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import psutil

from actoviq.events import (
    EventDispatcher,
    EventEmitter,
    InMemoryEventSink,
    RedactionPolicy,
    SequentialIdFactory,
    SystemClock,
    create_root_trace_context,
    default_processors,
)

PAYLOADS = (
    ("model.text.delta", {"delta": "Compare-and-set swaps", "outputIndex": 1}),
    ("tool.started", {"callId": "call_weather", "name": "get_weather", "effect": "read"}),
    ("model.requested", {"turn": 1, "model": "openai:gpt-test"}),
    (
        "tool.completed",
        {"callId": "call_weather", "name": "get_weather", "headers": {"apiKey": "k"}},
    ),
)


async def _run(n: int, scan_text: bool) -> tuple[float, int]:
    ids = SequentialIdFactory()
    sink = InMemoryEventSink(max_events=10_000)
    policy = RedactionPolicy(scan_text=scan_text)
    async with EventDispatcher(default_processors(policy), [sink]) as dispatcher:
        emitter = EventEmitter(
            create_root_trace_context("bench", ids=ids), dispatcher, ids=ids, clock=SystemClock()
        )
        started = time.perf_counter()
        for index in range(n):
            event_type, data = PAYLOADS[index & 3]
            await emitter.emit(event_type, data)
        elapsed = time.perf_counter() - started
    assert sink.last_sequence("bench") == n
    return elapsed, len(sink.events) + sink.dropped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--scan-text", action="store_true")
    args = parser.parse_args()
    process = psutil.Process()
    rss_before = process.memory_info().rss
    elapsed, delivered = asyncio.run(_run(args.n, args.scan_text))
    rss_after = process.memory_info().rss
    # A second, smaller pass under tracemalloc gives the Python-level peak without slowing the
    # timed pass (tracemalloc roughly halves throughput).
    traced_n = min(args.n, 100_000)
    tracemalloc.start()
    asyncio.run(_run(traced_n, args.scan_text))
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    result = {
        "scenario": "envelope + redaction + in-memory sink",
        "events": args.n,
        "delivered": delivered,
        "scan_text": args.scan_text,
        "seconds": round(elapsed, 3),
        "events_per_second": round(args.n / elapsed, 1),
        "microseconds_per_event": round(elapsed / args.n * 1e6, 3),
        "rss_before_bytes": rss_before,
        "rss_after_bytes": rss_after,
        "peak_rss_bytes": max(rss_after, process.memory_info().rss),
        "tracemalloc_peak_bytes": traced_peak,
        "tracemalloc_events": traced_n,
        "sink_retained_events": 10_000,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
