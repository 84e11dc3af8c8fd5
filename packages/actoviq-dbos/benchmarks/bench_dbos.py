"""DBOS overhead benchmark (``python bench_dbos.py --out results.json``).

B1 a 3-turn tool-loop run (model → read tool → model → read tool → model → answer: 3 model calls,
2 tool calls, scripted provider) under DBOS (``DbosRuntime.run``: a workflow with 5 recorded
steps) against the plain runtime checkpointing to the same SQLite file
(``AgentRuntime(checkpoints=SqliteStorage.runtime_checkpoints())``, the embedded durable default),
median per run over N runs after a warm-up. Target: DBOS at most 3 times the plain runtime
on SQLite.
B2 the same on PostgreSQL when ``ACTOVIQ_TEST_POSTGRES_URL`` is set (DBOS system database and
the plain runtime's checkpoints in that database). Also the plain runtime in memory (no
persistence), for scale.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from dbos import DBOS

from actoviq.core import AgentSpec, ToolCallItem, ToolResultItem
from actoviq.dbos import DbosRuntime
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, tool
from actoviq.storage.sqlite import SqliteStorage

AGENT: AgentSpec[Any, Any] = AgentSpec(
    id="looper", name="Looper", instructions="Look twice.", model="scripted:m", tools=["lookup"]
)


@tool(effect="read")
def lookup(step: int) -> str:
    """Look something up."""
    return f"fact {step}"


def _model() -> ScriptedProvider:
    def answer(request: ModelRequest) -> ScriptedTurn:
        done = sum(1 for item in request.input if isinstance(item, ToolResultItem))
        if done < 2:
            call = ToolCallItem(id=f"c{done}", name="lookup", input={"step": done})
            return ScriptedTurn(tool_calls=[call])
        return ScriptedTurn(text="found both")

    return ScriptedProvider([answer], repeat_last=True)


async def _timed(run: Any, runs: int, warmup: int) -> dict[str, float]:
    for _ in range(warmup):
        await run()
    samples: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        await run()
        samples.append((time.perf_counter() - started) * 1000)
    return {
        "median_ms": round(statistics.median(samples), 3),
        "p90_ms": round(sorted(samples)[int(len(samples) * 0.9)], 3),
        "runs": runs,
    }


async def _plain(storage_url: str | None, runs: int, warmup: int) -> dict[str, float]:
    if storage_url is None:
        async with AgentRuntime(models=ModelRegistry([_model()]), tools=[lookup]) as runtime:
            return await _timed(lambda: runtime.run(AGENT, "go"), runs, warmup)
    async with (
        await SqliteStorage.open(storage_url) as storage,
        AgentRuntime(
            models=ModelRegistry([_model()]),
            tools=[lookup],
            checkpoints=storage.runtime_checkpoints(),
        ) as runtime,
    ):
        return await _timed(lambda: runtime.run(AGENT, "go"), runs, warmup)


async def _dbos(system_url: str, runs: int, warmup: int) -> dict[str, float]:
    DBOS(config={"name": "actoviq-bench", "system_database_url": system_url, "log_level": "ERROR"})
    durable = DbosRuntime(name="bench", models=[_model()], tools=[lookup], agents=[AGENT])
    DBOS.launch()
    try:
        return await _timed(
            lambda: durable.run(AGENT, "go", run_id=f"bench-{uuid.uuid4().hex}"), runs, warmup
        )
    finally:
        await durable.close()
        DBOS.destroy(workflow_completion_timeout_sec=0)


async def main(runs: int, warmup: int) -> dict[str, Any]:
    report: dict[str, Any] = {"runs": runs, "warmup": warmup}
    report["memory"] = await _plain(None, runs, warmup)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.sqlite"  # one file: DBOS's tables beside the checkpoints
        plain = await _plain(str(path), runs, warmup)
        dbos = await _dbos(f"sqlite:///{path}", runs, warmup)
    report["sqlite"] = {
        "plain": plain,
        "dbos": dbos,
        "ratio": round(dbos["median_ms"] / plain["median_ms"], 2),
        "target_ratio": 3.0,
    }
    url = os.environ.get("ACTOVIQ_TEST_POSTGRES_URL")
    if url:
        database = f"{url.rsplit('/', 1)[0]}/actoviq_dbos_bench_{uuid.uuid4().hex[:8]}"
        dbos_pg = await _dbos(database, runs, warmup)
        plain_pg = await _plain(
            database.replace("postgresql://", "postgresql+asyncpg://", 1), runs, warmup
        )
        report["postgres"] = {
            "plain": plain_pg,
            "dbos": dbos_pg,
            "ratio": round(dbos_pg["median_ms"] / plain_pg["median_ms"], 2),
        }
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    arguments = parser.parse_args()
    result = asyncio.run(main(arguments.runs, arguments.warmup))
    arguments.out.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    print(json.dumps(result, indent=2))
