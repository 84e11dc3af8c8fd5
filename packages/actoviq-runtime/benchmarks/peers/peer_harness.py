"""Shared harness of the peer workload programs (stdlib only: runs inside each peer's venv).

A program calls :func:`main` with its workload functions; ``--workload W1 --n 2000`` runs one
workload and prints one JSON line. The workloads are those of ``bench_runtime.py``: W1 one-turn
text run (us/run), W2 three-turn loop with two read-only tool calls per tool turn (us/run), W3 that
many concurrent W2 runs (wall s, peak RSS MB), W4 one streamed run of ``n`` one-character text
deltas (deltas/s, peak RSS MB); W4y the same stream from a fake model that awaits
``asyncio.sleep(0)`` after every delta (a model read off the network); W6 ``n`` turns of one
session persisted in a SQLite file (total, mean turn time of the first and last 100 turns) and the
first load of that session after opening the file again.
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


WINDOW = 100  # W6: turns averaged at each end


async def session_turns(
    turn: Callable[[int], Awaitable[Any]], n: int, check: Callable[[Any], bool]
) -> dict[str, float]:
    """W6: ``n`` sequential turns ``turn(i)`` of one session (the caller warmed up already)."""
    times: list[float] = []
    cpu_times: list[float] = []
    cpu = time.process_time()
    started = time.perf_counter()
    out: Any = None
    for index in range(n):
        begun, begun_cpu = time.perf_counter(), time.process_time()
        out = await turn(index)
        times.append(time.perf_counter() - begun)
        cpu_times.append(time.process_time() - begun_cpu)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    assert check(out), "unexpected output"
    window = min(WINDOW, n)
    first, last = sum(times[:window]) / window, sum(times[-window:]) / window
    first_cpu, last_cpu = sum(cpu_times[:window]) / window, sum(cpu_times[-window:]) / window
    return {
        "turns": n,
        "total_s": wall,
        "cpu_s": cpu,
        "first100_ms": first * 1000,
        "last100_ms": last * 1000,
        "last_over_first": last / first,
        "first100_cpu_ms": first_cpu * 1000,
        "last100_cpu_ms": last_cpu * 1000,
        "cpu_last_over_first": last_cpu / first_cpu,
    }


async def first_load(load: Callable[[], Awaitable[int]], items: int) -> dict[str, float]:
    """W6: time the first load after the storage was opened again; ``load`` returns its count."""
    cpu = time.process_time()
    started = time.perf_counter()
    count = await load()
    first = time.perf_counter() - started
    cpu = time.process_time() - cpu
    assert count == items, f"loaded {count} items, expected {items}"
    started = time.perf_counter()
    assert await load() == items
    second = time.perf_counter() - started
    return {
        "first_load_ms": first * 1000,
        "first_load_cpu_ms": cpu * 1000,
        "second_load_ms": second * 1000,
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
