"""Durable workflow-graph runs (spec 04 §8.2-21, issue 15 point 8): node statuses and outputs are
persisted; a run continues after its last completed node; completed side-effect nodes never run
twice; a side-effect node caught mid-run needs reconciliation; loops are journaled per round."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from background_harness import BACKENDS, database

from actoviq.orchestration import (
    NodeContext,
    RunTree,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowNode,
    WorkflowNodeExecutionError,
)
from actoviq.orchestration.graph_loops import LoopResult, WorkflowLoopLimitError, loop_node
from actoviq.orchestration.graph_runs import (
    DurableGraphRunner,
    WorkflowNodeOutputError,
    WorkflowNodeReconciliationError,
    WorkflowRunCancelledError,
    WorkflowRunLeasedError,
    WorkflowRunMismatchError,
    WorkflowRunRecord,
    WorkflowRunStateError,
)
from actoviq.runtime import InMemoryWorkflowRunStore, RuntimeServices, WorkflowRunStore
from actoviq.storage.sqlite import SqliteStorage


@contextlib.asynccontextmanager
async def _store(kind: str, tmp_path: Path) -> AsyncGenerator[WorkflowRunStore]:
    if kind == "memory":
        yield InMemoryWorkflowRunStore()
        return
    async with await SqliteStorage.open(database(kind, tmp_path)) as storage:
        yield storage.workflows


def _scope() -> Any:
    return RunTree().create_root(services=RuntimeServices())


class Calls:
    """Counts executions per node and lets a test hold one node mid-run."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.hold: dict[str, asyncio.Event] = {}
        self.entered: dict[str, asyncio.Event] = {}

    def node(self, node_id: str, value: Any = None, *, fail: int = 0) -> WorkflowNode:
        async def execute(ctx: NodeContext) -> Any:
            self.count[node_id] = self.count.get(node_id, 0) + 1
            self.entered.setdefault(node_id, asyncio.Event()).set()
            if node_id in self.hold:
                await self.hold[node_id].wait()
            if self.count[node_id] <= fail:
                raise RuntimeError(f"{node_id} failed")
            return value if value is not None else {"node": node_id, "input": ctx.input}

        return WorkflowNode(id=node_id, execute=execute)


def _pipeline(calls: Calls, **fails: int) -> WorkflowGraph:
    return WorkflowGraph(
        nodes=[
            calls.node("draft", fail=fails.get("draft", 0)),
            calls.node("charge", {"charged": 5}, fail=fails.get("charge", 0)),
            calls.node("notify", fail=fails.get("notify", 0)),
            WorkflowNode(id="summary", reduce=lambda ctx: sorted(ctx.inputs)),
        ],
        edges=[
            WorkflowEdge(source="draft", target="charge"),
            WorkflowEdge(source="charge", target="notify"),
            WorkflowEdge(source="notify", target="summary"),
            WorkflowEdge(source="charge", target="summary"),
        ],
    )


EFFECTS: dict[str, Any] = {"draft": "read", "notify": "read", "summary": "read"}


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_run_persists_every_node_and_a_second_call_runs_nothing(
    kind: str, tmp_path: Path
) -> None:
    calls = Calls()
    run_id = f"run-{uuid.uuid4().hex}"
    async with _store(kind, tmp_path) as store:
        runner = DurableGraphRunner(store)
        graph = _pipeline(calls)
        first = await runner.run(
            graph,
            graph_id="pipeline",
            run_id=run_id,
            input={"topic": "x"},
            scope=_scope(),
            effects=EFFECTS,
        )
        assert dict(first.outputs)["summary"] == ["charge", "notify"]
        record = await runner.query(run_id)
        assert (record.status, record.attempts, record.lease_owner) == ("completed", 1, None)
        assert dict(record.statuses) == dict(first.statuses)
        nodes = await runner.nodes(run_id)
        assert sorted((n.node_id, n.status, n.effect) for n in nodes) == [
            ("charge", "completed", "side-effect"),
            ("draft", "completed", "read"),
            ("notify", "completed", "read"),
            ("summary", "completed", "read"),
        ]
        charge = next(n for n in nodes if n.node_id == "charge")
        assert charge.output == {"charged": 5}
        again = await runner.run(
            graph, graph_id="pipeline", run_id=run_id, input={"topic": "x"}, scope=_scope()
        )
        assert dict(again.outputs) == dict(first.outputs)
        assert calls.count == {"draft": 1, "charge": 1, "notify": 1}
        assert WorkflowRunRecord.from_json(record.to_json()).to_json() == record.to_json()
        with pytest.raises(WorkflowRunMismatchError, match="another input"):
            await runner.run(
                graph, graph_id="pipeline", run_id=run_id, input={"topic": "y"}, scope=_scope()
            )
        other = WorkflowGraph(nodes=[calls.node("draft")])
        with pytest.raises(WorkflowRunMismatchError, match="belongs to graph"):
            await runner.run(other, graph_id="pipeline", run_id=run_id, scope=_scope())


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_crashed_run_resumes_after_its_last_completed_node(
    kind: str, tmp_path: Path
) -> None:
    calls = Calls()
    calls.hold["notify"] = asyncio.Event()
    run_id = f"run-{uuid.uuid4().hex}"
    now = [1_000_000]
    async with _store(kind, tmp_path) as store:
        first = DurableGraphRunner(store, owner_id="w1", lease_ms=60_000, clock=lambda: now[0])
        graph = _pipeline(calls)
        task = asyncio.ensure_future(
            first.run(graph, graph_id="p", run_id=run_id, input=1, scope=_scope(), effects=EFFECTS)
        )
        await calls.entered.setdefault("notify", asyncio.Event()).wait()
        second = DurableGraphRunner(store, owner_id="w2", lease_ms=60_000, clock=lambda: now[0])
        with pytest.raises(WorkflowRunLeasedError, match="leased"):
            await second.run(graph, graph_id="p", run_id=run_id, scope=_scope())
        task.cancel()  # worker 1 goes away mid-notify
        with pytest.raises(asyncio.CancelledError):
            await task
        calls.hold["notify"].set()
        result = await second.run(
            graph, graph_id="p", run_id=run_id, scope=_scope(), effects=EFFECTS
        )
    assert dict(result.outputs)["summary"] == ["charge", "notify"]
    # draft and charge completed before the crash: never run again; notify (a read) ran twice.
    assert calls.count == {"draft": 1, "charge": 1, "notify": 2}


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_side_effect_node_caught_mid_run_needs_reconciliation(
    kind: str, tmp_path: Path
) -> None:
    calls = Calls()
    calls.hold["charge"] = asyncio.Event()
    run_id = f"run-{uuid.uuid4().hex}"
    async with _store(kind, tmp_path) as store:
        first = DurableGraphRunner(store, owner_id="w1")
        graph = _pipeline(calls)
        task = asyncio.ensure_future(
            first.run(graph, graph_id="p", run_id=run_id, input=1, scope=_scope(), effects=EFFECTS)
        )
        await calls.entered.setdefault("charge", asyncio.Event()).wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        second = DurableGraphRunner(store, owner_id="w2")
        with pytest.raises(WorkflowNodeReconciliationError, match="charge#0") as caught:
            await second.run(graph, graph_id="p", run_id=run_id, scope=_scope(), effects=EFFECTS)
        assert (caught.value.details or {})["nodes"] == [{"nodeId": "charge", "iteration": 0}]
        record = await second.query(run_id)
        assert record.needs_reconciliation == (("charge", 0),)
        with pytest.raises(WorkflowRunStateError, match="not awaiting"):
            await second.reconcile_node(run_id, "draft", "completed", actor="ops")
        settled = await second.reconcile_node(
            run_id,
            "charge",
            "completed",
            actor="ops",
            note="the bank says paid",
            output={"charged": 5},
        )
        assert (settled.status, (settled.reconciliation or {})["actor"]) == ("completed", "ops")
        result = await second.run(
            graph, graph_id="p", run_id=run_id, scope=_scope(), effects=EFFECTS
        )
    assert dict(result.outputs)["charge"] == {"charged": 5}
    assert calls.count == {"draft": 1, "charge": 1, "notify": 1}  # charge never replayed


async def test_a_failed_run_retries_only_its_failed_nodes() -> None:
    calls = Calls()
    store = InMemoryWorkflowRunStore()
    runner = DurableGraphRunner(store)
    graph = _pipeline(calls, notify=1)
    with pytest.raises(WorkflowNodeExecutionError) as failed:
        await runner.run(graph, graph_id="p", run_id="r", input=1, scope=_scope(), effects=EFFECTS)
    assert failed.value.node_id == "notify"
    record = await runner.query("r")
    assert record.status == "failed"
    assert record.error is not None
    assert record.error.message == "notify failed"
    result = await runner.run(graph, graph_id="p", run_id="r", scope=_scope(), effects=EFFECTS)
    assert dict(result.outputs)["summary"] == ["charge", "notify"]
    assert calls.count == {"draft": 1, "charge": 1, "notify": 2}
    assert (await runner.query("r")).attempts == 2


async def test_outputs_must_be_storable_and_reconciled_failures_stay_failed() -> None:
    store = InMemoryWorkflowRunStore()
    runner = DurableGraphRunner(store)
    bad = WorkflowGraph(nodes=[WorkflowNode(id="obj", execute=lambda ctx: object())])
    with pytest.raises(WorkflowNodeExecutionError) as caught:
        await runner.run(bad, graph_id="b", run_id="bad", scope=_scope())
    assert isinstance(caught.value.cause, WorkflowNodeOutputError)
    assert 'output="value"' in caught.value.cause.message
    assert [n.status for n in await runner.nodes("bad")] == ["failed"]
    with pytest.raises(Exception, match="strict JSON"):
        await runner.run(
            bad, graph_id="b", run_id="bad2", input={"x": float("nan")}, scope=_scope()
        )


async def test_cancel_stops_a_running_worker_at_its_next_heartbeat() -> None:
    calls = Calls()
    calls.hold["notify"] = asyncio.Event()
    store = InMemoryWorkflowRunStore()
    runner = DurableGraphRunner(store, lease_ms=300)
    task = asyncio.ensure_future(
        runner.run(_pipeline(calls), graph_id="p", run_id="c", input=1, scope=_scope())
    )
    await calls.entered.setdefault("notify", asyncio.Event()).wait()
    cancelled = await DurableGraphRunner(store).cancel("c", "operator stop")
    assert cancelled.status == "cancelled"
    with pytest.raises(WorkflowRunCancelledError):
        async with asyncio.timeout(10):
            await task
    assert calls.count.get("summary") is None
    with pytest.raises(WorkflowRunCancelledError):
        await runner.run(_pipeline(calls), graph_id="p", run_id="c", scope=_scope())


def _review_loop(calls: Calls, approve_at: int, bound: int, **kw: Any) -> WorkflowGraph:
    async def revise(ctx: NodeContext) -> Any:
        calls.count["revise"] = calls.count.get("revise", 0) + 1
        previous = ctx.input["previous"]
        version = 1 if previous is None else previous["revise"]["version"] + 1
        return {"version": version}

    async def critique(ctx: NodeContext) -> Any:
        calls.count["critique"] = calls.count.get("critique", 0) + 1
        version = ctx.outputs["revise"]["version"]
        if version == 2 and "critique" in calls.hold:
            calls.entered.setdefault("critique@2", asyncio.Event()).set()
            await calls.hold["critique"].wait()
        return {"approved": version >= approve_at, "version": version}

    body = WorkflowGraph(
        nodes=[
            WorkflowNode(id="revise", execute=revise),
            WorkflowNode(id="critique", execute=critique),
        ],
        edges=[WorkflowEdge(source="revise", target="critique")],
    )
    cycle = loop_node(
        "review",
        body,
        until=lambda r: bool(r.outputs["critique"]["approved"]),
        max_iterations=bound,
        **kw,
    )
    publish = WorkflowNode(
        id="publish", reduce=lambda ctx: {"published": ctx.inputs["review"].outputs["revise"]}
    )
    return WorkflowGraph(
        nodes=[cycle, publish], edges=[WorkflowEdge(source="review", target="publish")]
    )


async def test_review_revise_loop_is_bounded() -> None:
    calls = Calls()
    result = await _review_loop(calls, approve_at=3, bound=5).execute(input="t", scope=_scope())
    loop = result.outputs["review"]
    assert isinstance(loop, LoopResult)
    assert (loop.iterations, loop.converged) == (3, True)
    assert [h["critique"]["approved"] for h in loop.history] == [False, False, True]
    assert result.outputs["publish"] == {"published": {"version": 3}}
    with pytest.raises(WorkflowNodeExecutionError) as exhausted:
        await _review_loop(Calls(), approve_at=9, bound=2).execute(input="t", scope=_scope())
    assert isinstance(exhausted.value.cause, WorkflowLoopLimitError)
    assert "within 2 iterations" in str(exhausted.value.cause)
    unconverged = await _review_loop(Calls(), approve_at=9, bound=2, on_exhausted="return").execute(
        input="t", scope=_scope()
    )
    assert (unconverged.outputs["review"].iterations, unconverged.outputs["review"].converged) == (
        2,
        False,
    )


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_durable_loop_resumes_in_its_round(kind: str, tmp_path: Path) -> None:
    calls = Calls()
    calls.hold["critique"] = asyncio.Event()
    graph = _review_loop(calls, approve_at=3, bound=5)
    run_id = f"loop-{uuid.uuid4().hex}"
    async with _store(kind, tmp_path) as store:
        first = DurableGraphRunner(store, owner_id="w1")
        task = asyncio.ensure_future(
            first.run(
                graph,
                graph_id="review",
                run_id=run_id,
                input="t",
                scope=_scope(),
                default_effect="read",
            )
        )
        await calls.entered.setdefault("critique@2", asyncio.Event()).wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        calls.hold["critique"].set()
        second = DurableGraphRunner(store, owner_id="w2")
        result = await second.run(
            graph, graph_id="review", run_id=run_id, scope=_scope(), default_effect="read"
        )
        keys = sorted((n.node_id, n.iteration, n.status) for n in await second.nodes(run_id))
    loop = result.outputs["review"]
    assert isinstance(loop, LoopResult)
    assert (loop.iterations, loop.converged) == (3, True)
    # Round 0 and revise of round 1 were journaled: not run again; critique of round 1 ran twice.
    assert calls.count == {"revise": 3, "critique": 4}
    assert ("review", 0, "completed") in keys
    assert ("review#0/revise", 1, "completed") in keys
    assert ("review#0/critique", 2, "completed") in keys
