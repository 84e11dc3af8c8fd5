"""The durable budget ledger (spec 04 §8.2-13, issue 15 point 2): one row per run tree, guarded
atomic updates, usage recorded before the error, shared by every process of the tree."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import uuid
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from background_harness import BACKENDS, database
from orchestration_testkit import agent, runtime_for, script, usage

from actoviq.core import ToolCallItem, ToolResultItem, Usage
from actoviq.orchestration import (
    BackgroundChildManager,
    BudgetExceededError,
    BudgetLimits,
    ChildRunError,
    ChildRunner,
    DurableBudgetLedger,
    OrchestrationConfigError,
)
from actoviq.providers import ModelRequest
from actoviq.providers.testing import ScriptedTurn
from actoviq.runtime import (
    BudgetLedgerStore,
    InMemoryBudgetLedgerStore,
    InMemoryDurableChildStore,
    ToolExecutionContext,
    tool,
)
from actoviq.storage.sqlite import SqliteStorage

LEDGER_WORKER = Path(__file__).resolve().parent / "ledger_worker.py"


@contextlib.asynccontextmanager
async def _ledgers(kind: str, tmp_path: Path) -> AsyncGenerator[BudgetLedgerStore]:
    if kind == "memory":
        yield InMemoryBudgetLedgerStore()
        return
    async with await SqliteStorage.open(database(kind, tmp_path)) as storage:
        yield storage.ledgers


@pytest.mark.parametrize("kind", BACKENDS)
async def test_open_creates_joins_and_refuses_other_limits(kind: str, tmp_path: Path) -> None:
    ledger_id = f"tree-{uuid.uuid4().hex}"
    limits = BudgetLimits(max_child_runs=3, max_total_tokens=100)
    async with _ledgers(kind, tmp_path) as store:
        first = await DurableBudgetLedger.open(store, ledger_id, limits)
        joined = await DurableBudgetLedger.open(store, ledger_id)
        assert joined.limits == limits == first.limits
        with pytest.raises(OrchestrationConfigError, match="other limits"):
            await DurableBudgetLedger.open(store, ledger_id, BudgetLimits(max_child_runs=4))
        snapshot = await joined.snapshot()
        assert (snapshot.child_runs_started, snapshot.total_tokens_used) == (0, 0)
        assert snapshot.to_json()["limits"]["maxDepth"] == 2**53 - 1  # type: ignore[index]


@pytest.mark.parametrize("kind", BACKENDS)
async def test_children_claim_record_and_stop_at_the_limits(kind: str, tmp_path: Path) -> None:
    ledger_id = f"tree-{uuid.uuid4().hex}"
    turns = [ScriptedTurn(text="ok", usage=usage(4, 0.25))] * 3
    async with _ledgers(kind, tmp_path) as store, runtime_for(script("worker", turns)) as runtime:
        ledger = await DurableBudgetLedger.open(
            store, ledger_id, BudgetLimits(max_child_runs=3, max_depth=1, max_total_tokens=10)
        )
        runner = ChildRunner(runtime)
        root = runner.create_root(budget=ledger)
        worker = agent("worker")
        await runner.run(root, worker, "one")
        await runner.run(root, worker, "two")
        with pytest.raises(ChildRunError) as failed:
            await runner.run(root, worker, "three")
        over = failed.value.cause
        assert isinstance(over, BudgetExceededError)
        assert "token budget 10 is exceeded" in over.message
        assert over.retryable is False
        snapshot = await ledger.snapshot()
        # The third child's 4 tokens are recorded before the error (12 > 10): nothing lost.
        assert (snapshot.child_runs_started, snapshot.total_tokens_used) == (3, 12)
        assert snapshot.cost_usd_used == 0.75
        with pytest.raises(BudgetExceededError, match="exhausted"):
            await runner.run(root, worker, "four")
        child = runner.tree.derive_child(root, "middle")
        with pytest.raises(BudgetExceededError, match="maxDepth"):
            await ledger.claim_child(child.depth + 1)
        with pytest.raises(OrchestrationConfigError, match="positive"):
            await ledger.claim_child(0)


@pytest.mark.parametrize("kind", BACKENDS)
async def test_reservations_hold_and_expired_holds_come_back(kind: str, tmp_path: Path) -> None:
    now = [1_000]
    async with _ledgers(kind, tmp_path) as store:
        ledger = await DurableBudgetLedger.open(
            store, f"tree-{uuid.uuid4().hex}", BudgetLimits(max_total_tokens=10, max_cost_usd=1.0)
        )
        ledger = DurableBudgetLedger(
            store,
            tenant_id=ledger.tenant_id,
            ledger_id=ledger.ledger_id,
            limits=ledger.limits,
            reservation_ttl_ms=500,
            clock=lambda: now[0],
        )
        held = await ledger.reserve(tokens=6, cost_usd=0.5)
        with pytest.raises(BudgetExceededError, match="cannot cover the reservation"):
            await ledger.reserve(tokens=5)
        with pytest.raises(BudgetExceededError, match="cost budget 1 cannot cover"):
            await ledger.reserve(cost_usd=0.75)
        await ledger.record_usage(Usage(total_tokens=3, cost_usd=0.25), reservation=held)
        snapshot = await ledger.snapshot()
        assert (snapshot.total_tokens_used, snapshot.reserved_tokens) == (3, 0)
        crashed = await ledger.reserve(tokens=7)  # a worker that dies holding it
        assert crashed.tokens == 7
        with pytest.raises(BudgetExceededError):
            await ledger.reserve(tokens=1)
        now[0] += 501  # the dead worker's hold expired: it is given back on the next refusal
        again = await ledger.reserve(tokens=7)
        await ledger.release(again)
        await ledger.release(again)  # idempotent
        assert (await ledger.snapshot()).reserved_tokens == 0


async def test_a_background_child_charges_the_shared_ledger_in_another_worker() -> None:
    ledgers = InMemoryBudgetLedgerStore()
    children = InMemoryDurableChildStore()
    worker = agent("worker")
    ledger = await DurableBudgetLedger.open(ledgers, "tree", BudgetLimits(max_child_runs=5))
    async with runtime_for(script("worker", ["never"])) as runtime:
        runner = ChildRunner(runtime)
        async with BackgroundChildManager(runner, children) as spawner:
            handle = await spawner.spawn(
                runner.create_root(budget=ledger), worker, "go", auto_start=False
            )
            assert (await handle.query()).budget_ledger is not None
    turns = [ScriptedTurn(text="done", usage=usage(7))]
    async with runtime_for(script("worker", turns)) as runtime:
        runtime.register_agent(worker)
        async with BackgroundChildManager(ChildRunner(runtime), children) as blind:
            await blind.resume(handle.child_id)
            with pytest.raises(OrchestrationConfigError, match="ledger_store"):
                await blind.result(handle.child_id)
    async with runtime_for(script("worker", turns)) as runtime:
        runtime.register_agent(worker)
        async with BackgroundChildManager(
            ChildRunner(runtime), children, ledger_store=ledgers
        ) as other:
            record = await other.query(handle.child_id)
            assert record.status == "failed"  # the blind worker failed it, typed
    # A fresh child through a worker that knows the ledger store charges the shared row.
    async with runtime_for(script("worker", ["never"])) as runtime:
        runner = ChildRunner(runtime)
        async with BackgroundChildManager(runner, children) as spawner:
            second = await spawner.spawn(
                runner.create_root(budget=ledger), worker, "go", auto_start=False
            )
    async with runtime_for(script("worker", turns)) as runtime:
        runtime.register_agent(worker)
        async with BackgroundChildManager(
            ChildRunner(runtime), children, ledger_store=ledgers
        ) as other:
            await other.resume(second.child_id)
            assert (await other.result(second.child_id)).output == "done"
    snapshot = await ledger.snapshot()
    assert (snapshot.child_runs_started, snapshot.total_tokens_used) == (
        1,
        7,
    )  # the blind one never ran


@pytest.mark.parametrize("kind", [k for k in BACKENDS if k != "memory"])
async def test_two_processes_share_one_ledger(kind: Any, tmp_path: Path) -> None:
    db = database(kind, tmp_path)
    ledger_id = f"tree-{uuid.uuid4().hex}"
    async with await SqliteStorage.open(db) as storage:
        await DurableBudgetLedger.open(storage.ledgers, ledger_id, BudgetLimits(max_child_runs=5))
    workers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(LEDGER_WORKER),
            db,
            ledger_id,
            "4",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for _ in range(2)
    ]
    for worker in workers:
        assert worker.stdout is not None
        assert (await worker.stdout.readline()).strip() == b"ready"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write(b"go\n")
        await worker.stdin.drain()
    async with asyncio.timeout(120):
        outputs = await asyncio.gather(*(w.communicate() for w in workers))
    counts = [json.loads(out.decode().strip().splitlines()[-1]) for out, _ in outputs]
    assert sum(c["ran"] for c in counts) == 5
    assert sum(c["refused"] for c in counts) == 3
    async with await SqliteStorage.open(db) as storage:
        ledger = await DurableBudgetLedger.open(storage.ledgers, ledger_id)
        snapshot = await ledger.snapshot()
    assert (snapshot.child_runs_started, snapshot.total_tokens_used) == (5, 15)


async def test_a_taken_over_child_is_one_child_on_the_budget() -> None:
    ledgers = InMemoryBudgetLedgerStore()
    children = InMemoryDurableChildStore()
    ledger = await DurableBudgetLedger.open(ledgers, "tree", BudgetLimits(max_child_runs=1))
    entered, gate = asyncio.Event(), asyncio.Event()

    @tool(effect="read")
    async def fetch(ctx: ToolExecutionContext) -> str:
        """Fetch something slowly."""
        entered.set()
        await gate.wait()
        return "fetched"

    def answer(request: ModelRequest) -> ScriptedTurn:
        if any(isinstance(i, ToolResultItem) for i in request.input):
            return ScriptedTurn(text="done", usage=usage(2))
        return ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="fetch", input={})])

    fetcher = agent("fetcher", tools=("fetch",))
    now = [1_000]
    async with (
        runtime_for(script("fetcher", [answer], repeat_last=True), tools=[fetch]) as one,
        runtime_for(script("fetcher", [answer], repeat_last=True), tools=[fetch]) as two,
    ):
        runner_one = ChildRunner(one)
        a = BackgroundChildManager(
            runner_one, children, ledger_store=ledgers, clock=lambda: now[0], lease_ms=60_000
        )
        b = BackgroundChildManager(
            ChildRunner(two), children, ledger_store=ledgers, clock=lambda: now[0], lease_ms=60_000
        )
        two.register_agent(fetcher)
        async with a, b, asyncio.timeout(30):
            handle = await a.spawn(
                runner_one.create_root(budget=ledger), fetcher, "go", effect="read"
            )
            await entered.wait()
            now[0] += 60_001  # worker a stops beating; its lease runs out
            entered.clear()
            assert (await b.recover()).started == (handle.child_id,)
            await entered.wait()
            gate.set()
            assert (await b.result(handle.child_id)).output == "done"
    record = await b.query(handle.child_id)
    assert (record.status, record.attempts) == ("completed", 2)
    snapshot = await ledger.snapshot()
    assert snapshot.child_runs_started == 1  # one logical child, whatever the executions
