"""WorkflowGraph features of issue 15 point 8: ``first`` (race) joins, per-node ``collect``
failure policy, parallel ready nodes, and both inside durable runs."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from actoviq.orchestration import (
    COLLECT,
    ChildFailurePolicy,
    NodeContext,
    RunTree,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowGraphError,
    WorkflowNode,
    WorkflowNodeExecutionError,
)
from actoviq.orchestration.graph import WorkflowNodeFailure
from actoviq.orchestration.graph_runs import DurableGraphRunner
from actoviq.runtime import InMemoryWorkflowRunStore, RuntimeServices


def _scope() -> Any:
    return RunTree().create_root(services=RuntimeServices())


def _value(node_id: str, value: Any) -> WorkflowNode:
    return WorkflowNode(id=node_id, execute=lambda ctx: value)


def _blocked(node_id: str, gate: asyncio.Event, log: list[str]) -> WorkflowNode:
    async def execute(ctx: NodeContext) -> Any:
        log.append(f"{node_id}:start")
        try:
            await gate.wait()
        except asyncio.CancelledError:
            log.append(f"{node_id}:cancelled")
            raise
        log.append(f"{node_id}:done")
        return node_id

    return WorkflowNode(id=node_id, execute=execute)


async def test_first_join_starts_at_the_winner_and_cancels_the_losers() -> None:
    log: list[str] = []
    never = asyncio.Event()
    graph = WorkflowGraph(
        nodes=[
            _value("fast", "F"),
            _blocked("slow", never, log),
            WorkflowNode(id="race", reduce=lambda ctx: dict(ctx.inputs), activation="first"),
        ],
        edges=[
            WorkflowEdge(source="fast", target="race"),
            WorkflowEdge(source="slow", target="race"),
        ],
    )
    result = await graph.execute(input=None, scope=_scope())
    assert result.outputs["race"] == {"fast": "F"}
    assert dict(result.statuses) == {"fast": "completed", "race": "completed", "slow": "cancelled"}
    assert log == ["slow:start", "slow:cancelled"]
    assert "slow" not in result.outputs


async def test_first_join_keeps_a_loser_another_node_still_needs() -> None:
    log: list[str] = []
    gate = asyncio.Event()

    def join(ctx: NodeContext) -> Any:
        gate.set()  # the loser may finish now: "after" needs it
        return sorted(ctx.inputs)

    graph = WorkflowGraph(
        nodes=[
            _value("fast", 1),
            _blocked("slow", gate, log),
            WorkflowNode(id="race", reduce=join, activation="first"),
            WorkflowNode(id="after", reduce=lambda ctx: list(ctx.inputs)),
        ],
        edges=[
            WorkflowEdge(source="fast", target="race"),
            WorkflowEdge(source="slow", target="race"),
            WorkflowEdge(source="slow", target="after"),
        ],
    )
    result = await graph.execute(input=None, scope=_scope())
    assert result.outputs["race"] == ["fast"]
    assert result.outputs["after"] == ["slow"]
    assert log == ["slow:start", "slow:done"]


async def test_first_join_waits_for_an_active_edge_or_is_skipped() -> None:
    def routed(target_open: bool) -> WorkflowGraph:
        return WorkflowGraph(
            nodes=[
                _value("a", "A"),
                _value("b", "B"),
                WorkflowNode(id="race", reduce=lambda ctx: dict(ctx.inputs), activation="first"),
            ],
            edges=[
                WorkflowEdge(source="a", target="race", when=lambda r: False),
                WorkflowEdge(source="b", target="race", when=lambda r: target_open),
            ],
        )

    opened = await routed(True).execute(input=None, scope=_scope())
    assert opened.outputs["race"] == {"b": "B"}
    closed = await routed(False).execute(input=None, scope=_scope())
    assert closed.statuses["race"] == "skipped"
    with pytest.raises(WorkflowGraphError, match="all, any or first"):
        WorkflowGraph(nodes=[WorkflowNode(id="x", execute=lambda c: 1, activation="most")])  # type: ignore[arg-type]
    with pytest.raises(WorkflowGraphError, match="fail-fast or collect"):
        WorkflowGraph(nodes=[WorkflowNode(id="x", execute=lambda c: 1, failure_policy="ignore")])
    with pytest.raises(WorkflowGraphError, match="retry_safe"):
        WorkflowNode(id="x", execute=lambda c: 1, failure_policy=ChildFailurePolicy.retry_safe(2))
    assert WorkflowNode(id="x", execute=lambda c: 1, failure_policy=COLLECT).failure_policy == (
        "collect"
    )


def _boom(ctx: NodeContext) -> Any:
    raise ValueError("reviewer unavailable")


async def test_collect_turns_a_failure_into_the_nodes_output_and_goes_on() -> None:
    graph = WorkflowGraph(
        nodes=[
            _value("draft", "text"),
            WorkflowNode(id="legal", execute=_boom, failure_policy="collect"),
            _value("style", "ok"),
            WorkflowNode(id="merge", reduce=lambda ctx: dict(ctx.inputs)),
        ],
        edges=[
            WorkflowEdge(source="draft", target="legal"),
            WorkflowEdge(source="draft", target="style"),
            WorkflowEdge(source="legal", target="merge"),
            WorkflowEdge(source="style", target="merge"),
        ],
    )
    result = await graph.execute(input=None, scope=_scope())
    failure = result.outputs["legal"]
    assert isinstance(failure, WorkflowNodeFailure)
    assert (failure.node_id, failure.error.name, failure.error.message) == (
        "legal",
        "ValueError",
        "reviewer unavailable",
    )
    assert result.statuses["legal"] == "failed"
    assert result.outputs["merge"] == {"legal": failure, "style": "ok"}
    assert failure.to_json() == {
        "nodeId": "legal",
        "error": {"name": "ValueError", "message": "reviewer unavailable"},
    }
    fail_fast = WorkflowGraph(nodes=[WorkflowNode(id="legal", execute=_boom)])
    with pytest.raises(WorkflowNodeExecutionError) as caught:
        await fail_fast.execute(input=None, scope=_scope())
    assert isinstance(caught.value.__cause__, ValueError)


async def test_ready_nodes_run_in_parallel_up_to_the_limit() -> None:
    active, peak = [0], [0]
    released = asyncio.Event()

    async def member(ctx: NodeContext) -> str:
        active[0] += 1
        peak[0] = max(peak[0], active[0])
        if peak[0] == 3:
            released.set()
        await released.wait()
        active[0] -= 1
        return ctx.node_id

    graph = WorkflowGraph(
        nodes=[
            *(WorkflowNode(id=f"m{i}", execute=member) for i in range(5)),
            WorkflowNode(id="join", reduce=lambda ctx: sorted(ctx.inputs)),
        ],
        edges=[WorkflowEdge(source=f"m{i}", target="join") for i in range(5)],
    )
    async with asyncio.timeout(10):
        result = await graph.execute(input=None, scope=_scope(), max_concurrency=3)
    assert peak[0] == 3
    assert result.outputs["join"] == [f"m{i}" for i in range(5)]


async def test_durable_runs_keep_collected_failures_and_race_losers() -> None:
    store = InMemoryWorkflowRunStore()
    log: list[str] = []
    never = asyncio.Event()
    graph = WorkflowGraph(
        nodes=[
            _value("fast", "F"),
            _blocked("slow", never, log),
            WorkflowNode(id="race", reduce=lambda ctx: sorted(ctx.inputs), activation="first"),
            WorkflowNode(id="legal", execute=_boom, failure_policy="collect"),
        ],
        edges=[
            WorkflowEdge(source="fast", target="race"),
            WorkflowEdge(source="slow", target="race"),
        ],
    )
    runner = DurableGraphRunner(store)
    result = await runner.run(
        graph, graph_id="g", run_id="r", scope=_scope(), default_effect="read"
    )
    assert isinstance(result.outputs["legal"], WorkflowNodeFailure)
    nodes = {n.node_id: n for n in await runner.nodes("r")}
    assert (nodes["slow"].status, nodes["legal"].status, nodes["race"].status) == (
        "cancelled",
        "failed",
        "completed",
    )
    stored = await runner.run(graph, graph_id="g", run_id="r", scope=_scope())
    restored = stored.outputs["legal"]
    assert isinstance(restored, WorkflowNodeFailure)
    assert restored.error.message == "reviewer unavailable"
    assert stored.statuses["slow"] == "cancelled"
    assert log == ["slow:start", "slow:cancelled"]


class _AsyncCallable:
    """An awaitable-returning callable object (not an ``async def``): awaited like one."""

    async def __call__(self, ctx: NodeContext) -> str:
        return f"{ctx.node_id}:object"


async def test_async_sync_and_callable_nodes_feed_joins_through_plain_and_routed_edges() -> None:
    async def fetch(ctx: NodeContext) -> str:
        return f"{ctx.node_id}:{ctx.input}"

    def failing(ctx: NodeContext) -> str:
        raise ValueError("sync boom")

    def marked(ctx: NodeContext) -> Any:  # a sync function that returns an awaitable
        return fetch(ctx)

    def marked_raising(ctx: NodeContext) -> Any:
        raise ValueError("raised before any await")

    # 3.12+: inspect counts these as coroutine functions; they still run as plain calls.
    def unmarked(fn: Any) -> Any:
        return fn

    mark: Any = getattr(inspect, "markcoroutinefunction", unmarked)
    nodes = [
        WorkflowNode(id="a", execute=fetch),
        WorkflowNode(id="f", execute=mark(marked)),
        WorkflowNode(id="g", execute=mark(marked_raising), failure_policy="collect"),
        WorkflowNode(id="b", execute=lambda ctx: f"{ctx.node_id}:sync"),
        WorkflowNode(id="c", execute=_AsyncCallable()),
        WorkflowNode(id="d", execute=failing, failure_policy="collect"),
        WorkflowNode(id="e", execute=fetch),
        WorkflowNode(id="join", reduce=lambda ctx: dict(ctx.inputs)),
        WorkflowNode(id="routed_out", reduce=lambda ctx: "never"),
    ]
    edges = [WorkflowEdge(source=n, target="join") for n in ("a", "b", "c", "d", "f", "g")]
    edges.append(WorkflowEdge(source="e", target="join", when=lambda route: True))
    edges.append(WorkflowEdge(source="a", target="routed_out", when=lambda route: False))
    graph = WorkflowGraph(nodes=nodes, edges=edges)
    result = await graph.execute(input="x", scope=_scope(), max_concurrency=2)
    joined = result.outputs["join"]
    assert {k: v for k, v in joined.items() if k not in ("d", "g")} == {
        "a": "a:x",
        "f": "f:x",
        "b": "b:sync",
        "c": "c:object",
        "e": "e:x",
    }
    assert isinstance(joined["d"], WorkflowNodeFailure)
    assert isinstance(joined["g"], WorkflowNodeFailure)  # its own failure, not the scheduler's
    assert result.statuses["d"] == "failed" and result.statuses["routed_out"] == "skipped"
