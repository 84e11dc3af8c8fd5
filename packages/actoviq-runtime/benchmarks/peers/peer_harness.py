"""Shared harness of the peer workload programs (stdlib only: runs inside each peer's venv).

A program calls :func:`main` with its workload functions; ``--workload W1 --n 2000`` runs one
workload and prints one JSON line. The workloads are those of ``bench_runtime.py``: W1 one-turn
text run (us/run), W2 three-turn loop with two read-only tool calls per tool turn (us/run), W3 that
many concurrent W2 runs (wall s, peak RSS MB), W4 one streamed run of ``n`` one-character text
deltas (deltas/s, peak RSS MB).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
import warnings
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

Run = Callable[[], Awaitable[Any]]


def rss_mb() -> float:
    """Peak RSS of this process in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


async def sequential(run: Run, n: int, check: Callable[[Any], bool]) -> dict[str, float]:
    """One warm-up run, then ``n`` sequential runs: microseconds per run."""
    assert check(await run()), "unexpected output"
    cpu = time.process_time()
    started = time.perf_counter()
    for _ in range(n):
        await run()
    wall = time.perf_counter() - started
    return {"us_per_run": wall / n * 1e6, "cpu_us_per_run": (time.process_time() - cpu) / n * 1e6}


async def concurrent(run: Run, n: int, check: Callable[[Any], bool]) -> dict[str, float]:
    """``n`` runs at once on one loop: wall seconds and peak RSS."""
    cpu = time.process_time()
    started = time.perf_counter()
    results = await asyncio.gather(*(run() for _ in range(n)))
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    assert all(check(result) for result in results), "unexpected output"
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss_mb()}


async def streamed(stream: Callable[[int], Awaitable[int]], n: int) -> dict[str, float]:
    """One streamed run of ``n`` deltas; ``stream`` returns how many deltas it consumed."""
    cpu = time.process_time()
    started = time.perf_counter()
    seen = await stream(n)
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    return {
        "deltas_per_s": n / elapsed,
        "cpu_deltas_per_s": n / cpu,
        "peak_rss_mb": rss_mb(),
        "events_seen": seen,
    }


def main(workloads: dict[str, Callable[[int], Coroutine[Any, Any, dict[str, float]]]]) -> None:
    """Run the workload named by ``--workload`` with ``--n`` and print its JSON."""
    warnings.simplefilter("ignore")
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", required=True, choices=sorted(workloads))
    parser.add_argument("--n", type=int, required=True)
    args = parser.parse_args()
    result = asyncio.run(workloads[args.workload](args.n))
    print(json.dumps(result))
