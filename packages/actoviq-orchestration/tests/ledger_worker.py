"""A worker process that runs children against a shared durable budget ledger.

Usage: ``python ledger_worker.py DB LEDGER_ID CHILDREN``: print ``ready``, wait for ``go`` on
stdin, run ``CHILDREN`` scripted children under a root whose budget is the ledger, then print
``{"ran": n, "refused": m}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from actoviq.core import AgentSpec
from actoviq.orchestration import BudgetExceededError, ChildRunner, DurableBudgetLedger
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, RuntimeServices
from actoviq.storage.sqlite import SqliteStorage


async def main(db: str, ledger_id: str, children: int) -> None:
    worker: AgentSpec[Any, Any] = AgentSpec(
        id="worker", name="Worker", instructions="Work.", model="worker:model"
    )
    turn = ScriptedTurn(text="ok", usage={"inputTokens": 2, "outputTokens": 1, "totalTokens": 3})
    provider = ScriptedProvider([turn], id="worker", repeat_last=True)
    async with await SqliteStorage.open(db, busy_timeout_ms=30_000) as storage:
        ledger = await DurableBudgetLedger.open(storage.ledgers, ledger_id)
        async with AgentRuntime(
            models=ModelRegistry([provider]), services=RuntimeServices()
        ) as runtime:
            runner = ChildRunner(runtime)
            root = runner.create_root(budget=ledger)
            print("ready", flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            ran = refused = 0
            for _ in range(children):
                try:
                    await runner.run(root, worker, "go")
                except BudgetExceededError:
                    refused += 1
                else:
                    ran += 1
    print(json.dumps({"ran": ran, "refused": refused}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
