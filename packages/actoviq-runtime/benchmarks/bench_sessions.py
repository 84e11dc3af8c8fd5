"""W6: one long session through ``runtime.run(..., session_id=)`` on a SQLite file.

``python bench_sessions.py --out results.json`` (``--mode w6`` prints one JSON line; used by
``peers_runtime.py``). One process:

1. a warm-up turn on another session (imports, statement caches), then 1,000 turns of one
   session, each ``runtime.run(agent, "message <n>", session_id="s")``: the runtime loads the
   session, the model answers, the runtime appends the user message and the answer (2,000 items
   at the end). Reported: the total (wall and CPU), the mean turn time of turns 1-100 and
   901-1,000 and their ratio (flat per-turn cost means a ratio near 1);
2. the storage is closed and opened again, and the **first** load of the 2,000-item session
   through the runtime's session adapter is timed (what a new process pays before its first
   turn), then a second load for information.

The model is ``BenchModel`` of ``bench_runtime.py`` (a ``BaseModelProvider`` subclass that
builds its own ``ModelResponse``); the session store is the one an application registers:
``SqliteRuntimeSessionAdapter`` over ``SqliteStorage.sessions``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from actoviq.core import AgentSpec
from actoviq.providers import ModelRegistry
from actoviq.runtime import AgentRuntime, RuntimeServices
from actoviq.storage.sqlite import SqliteRuntimeSessionAdapter, SqliteStorage

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_runtime import BenchModel

TURNS = 1000
WINDOW = 100  # turns averaged at each end


def _agent() -> AgentSpec[Any, Any]:
    return AgentSpec(id="bench", name="Bench", instructions="Be brief.", model="bench:m")


async def _turns(db: Path, turns: int) -> dict[str, Any]:
    async with await SqliteStorage.open(db) as storage:
        adapter = SqliteRuntimeSessionAdapter(storage.sessions)
        services = RuntimeServices({"sessions": lambda: adapter})
        models = ModelRegistry([BenchModel()])
        async with AgentRuntime(models=models, services=services) as runtime:
            agent = _agent()
            warm = await runtime.run(agent, "warm-up", session_id="warm")
            assert warm.output == "hello"
            times: list[float] = []
            cpu_times: list[float] = []
            output: object = None
            cpu = time.process_time()
            started = time.perf_counter()
            for turn in range(turns):
                begun, begun_cpu = time.perf_counter(), time.process_time()
                output = (await runtime.run(agent, f"message {turn}", session_id="s")).output
                times.append(time.perf_counter() - begun)
                cpu_times.append(time.process_time() - begun_cpu)
            wall = time.perf_counter() - started
            cpu = time.process_time() - cpu
            assert output == "hello"
    return {"turns": turns, "total_s": wall, "cpu_s": cpu, **windows(times, cpu_times)}


def windows(times: list[float], cpu_times: list[float]) -> dict[str, float]:
    """Mean turn time (wall and CPU) of the first and last ``WINDOW`` turns, and their ratio."""
    first, last = sum(times[:WINDOW]) / WINDOW, sum(times[-WINDOW:]) / WINDOW
    first_cpu = sum(cpu_times[:WINDOW]) / WINDOW
    last_cpu = sum(cpu_times[-WINDOW:]) / WINDOW
    return {
        "first100_ms": first * 1000,
        "last100_ms": last * 1000,
        "last_over_first": last / first,
        "first100_cpu_ms": first_cpu * 1000,
        "last100_cpu_ms": last_cpu * 1000,
        "cpu_last_over_first": last_cpu / first_cpu,
    }


async def _first_load(db: Path, items: int) -> dict[str, float]:
    async with await SqliteStorage.open(db) as storage:
        adapter = SqliteRuntimeSessionAdapter(storage.sessions)
        cpu = time.process_time()
        started = time.perf_counter()
        loaded = await adapter.load(tenant_id="default", session_id="s")
        first = time.perf_counter() - started
        cpu = time.process_time() - cpu
        assert len(loaded.items) == items, len(loaded.items)
        started = time.perf_counter()
        again = await adapter.load(tenant_id="default", session_id="s")
        second = time.perf_counter() - started
        assert again.items == loaded.items
    return {
        "first_load_ms": first * 1000,
        "first_load_cpu_ms": cpu * 1000,
        "second_load_ms": second * 1000,
    }


async def w6(turns: int = TURNS) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "w6.db"
        result = await _turns(db, turns)
        result.update(await _first_load(db, 2 * turns))
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--mode")
    parser.add_argument("--turns", type=int, default=TURNS)
    args = parser.parse_args()
    result = asyncio.run(w6(args.turns))
    if args.mode:
        print(json.dumps(result))
        return
    text = json.dumps({"W6_session_turns": result}, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
