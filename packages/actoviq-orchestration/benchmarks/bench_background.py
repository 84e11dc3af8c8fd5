"""Durable orchestration benchmarks (``python bench_background.py --out results.json``).

D1 background children on a SQLite file: 1,000 children spawned and completed one after the
other (spawn, then await the result; each child is a record create, a lease CAS, a scripted run
and a settling CAS), the median per-child cost of each batch of 100: the first and the last 100
(target: flat, ratio <= 1.25) and the total; then 1,000 spawned at once with 16 running at a time
(throughput). D2 a 10-node durable graph run on SQLite against the same graph in memory (us per
node). D3 the durable budget ledger on SQLite: a claim plus a usage record per child against the
in-memory ledger. Peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from actoviq.core import AgentSpec, Usage
from actoviq.orchestration import (
    BackgroundChildManager,
    BudgetLimits,
    ChildRunner,
    ConcurrencyController,
    DurableBudgetLedger,
    DurableGraphRunner,
    InMemoryBudgetLedger,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowNode,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime, RuntimeServices
from actoviq.storage.sqlite import SqliteStorage

WORKER: AgentSpec[Any, Any] = AgentSpec(
    id="worker", name="Worker", instructions="Work.", model="worker:model"
)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _runtime() -> AgentRuntime:
    provider = ScriptedProvider(["done"], id="worker", repeat_last=True)
    return AgentRuntime(
        models=ModelRegistry([provider]), services=RuntimeServices(), max_concurrent_runs=256
    )


async def d1(children: int = 1000, batch: int = 100) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        async with (
            await SqliteStorage.open(Path(folder) / "children.db") as storage,
            _runtime() as runtime,
        ):
            runner = ChildRunner(runtime)
            async with BackgroundChildManager(runner, storage.children) as manager:
                root = runner.create_root(concurrency=ConcurrencyController(16))
                for _ in range(20):  # warm-up
                    await (await manager.spawn(root, WORKER, "warm", effect="read")).result()
                per_batch: list[float] = []  # median per child, so a busy machine's bursts
                started = time.perf_counter()  # do not pass for growth
                for _ in range(children // batch):
                    samples: list[float] = []
                    for _ in range(batch):
                        child_started = time.perf_counter()
                        handle = await manager.spawn(root, WORKER, "go", effect="read")
                        await handle.result()
                        samples.append((time.perf_counter() - child_started) * 1e6)
                    per_batch.append(statistics.median(samples))
                sequential_s = time.perf_counter() - started
                started = time.perf_counter()
                handles = [
                    await manager.spawn(root, WORKER, "go", effect="read") for _ in range(children)
                ]
                await manager.join()
                burst_s = time.perf_counter() - started
                done = [await h.query() for h in handles]
                assert all(r.status == "completed" for r in done)
    return {
        "children": children,
        "sequential_total_ms": sequential_s * 1000,
        "sequential_us_per_child_first_100": per_batch[0],
        "sequential_us_per_child_last_100": per_batch[-1],
        "sequential_us_per_child_by_batch": per_batch,
        "flatness_ratio_last_over_first": per_batch[-1] / per_batch[0],
        "burst_total_ms": burst_s * 1000,
        "burst_children_per_s": children / burst_s,
    }


def _chain(length: int = 10) -> WorkflowGraph:
    nodes = [
        WorkflowNode(id=f"n{i:02d}", execute=lambda ctx, i=i: {"step": i}) for i in range(length)
    ]
    edges = [WorkflowEdge(source=f"n{i:02d}", target=f"n{i + 1:02d}") for i in range(length - 1)]
    return WorkflowGraph(nodes=nodes, edges=edges)


async def d2(runs: int = 100) -> dict[str, float]:
    graph = _chain()
    with tempfile.TemporaryDirectory() as folder:
        async with (
            await SqliteStorage.open(Path(folder) / "runs.db") as storage,
            _runtime() as runtime,
        ):
            root = ChildRunner(runtime).create_root()
            durable = DurableGraphRunner(storage.workflows)
            samples: dict[str, list[float]] = {"memory": [], "durable": []}
            for index in range(runs):
                started = time.perf_counter()
                await graph.execute(input=None, scope=root)
                samples["memory"].append(time.perf_counter() - started)
                started = time.perf_counter()
                await durable.run(graph, graph_id="chain", run_id=f"r{index}", scope=root)
                samples["durable"].append(time.perf_counter() - started)
    memory = statistics.median(samples["memory"]) / 10 * 1e6
    durable_us = statistics.median(samples["durable"]) / 10 * 1e6
    return {"memory_us_per_node": memory, "durable_sqlite_us_per_node": durable_us}


async def d3(children: int = 500) -> dict[str, float]:
    usage = Usage(total_tokens=10, cost_usd=0.001)
    memory = InMemoryBudgetLedger(BudgetLimits(max_child_runs=10**6))
    started = time.perf_counter()
    for _ in range(children):
        await memory.claim_child(1)
        await memory.record_usage(usage)
    memory_us = (time.perf_counter() - started) / children * 1e6
    with tempfile.TemporaryDirectory() as folder:
        async with await SqliteStorage.open(Path(folder) / "ledger.db") as storage:
            ledger = await DurableBudgetLedger.open(
                storage.ledgers, "tree", BudgetLimits(max_child_runs=10**6)
            )
            started = time.perf_counter()
            for _ in range(children):
                await ledger.claim_child(1)
                await ledger.record_usage(usage)
            durable_us = (time.perf_counter() - started) / children * 1e6
    return {"memory_us_per_child": memory_us, "durable_sqlite_us_per_child": durable_us}


async def main() -> dict[str, Any]:
    return {
        "D1_background_children_sqlite_1000": await d1(),
        "D2_durable_graph_run_10_nodes": await d2(),
        "D3_durable_budget_ledger": await d3(),
        "peak_rss_mb": _rss_mb(),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench_background.json")
    text = json.dumps(asyncio.run(main()), indent=2)
    print(text)
    Path(parser.parse_args().out).write_text(text + "\n", "utf-8")
