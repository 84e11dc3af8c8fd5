"""Independent nodes settle without a scheduler step each (``_Execution._done``): the results,
failures, slots and joins must be exactly those of the step-by-step scheduler."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from actoviq.orchestration import (
    NodeContext,
    RunTree,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowNode,
    WorkflowNodeExecutionError,
)
from actoviq.orchestration.graph import WorkflowNodeFailure
from actoviq.runtime import RuntimeServices


def _scope() -> Any:
    return RunTree().create_root(services=RuntimeServices())


def _member(node_id: str, gates: dict[str, asyncio.Event], live: list[str], **kw: Any) -> Any:
    async def execute(ctx: NodeContext) -> str:
        live.append(node_id)
        try:
            await gates[node_id].wait()
        finally:
            live.remove(node_id)
        if kw.get("fail"):
            raise RuntimeError(f"{node_id} failed")
        return node_id.upper()

    gates[node_id] = asyncio.Event()
    return WorkflowNode(id=node_id, execute=execute, failure_policy=kw.get("policy", "fail-fast"))


async def _release(gates: dict[str, asyncio.Event], order: list[str]) -> None:
    for node_id in order:  # one completion per loop turn, in an order unlike the graph's
        gates[node_id].set()
        for _ in range(3):
            await asyncio.sleep(0)


async def test_fan_out_members_settled_in_any_order_all_reach_the_join() -> None:
    gates: dict[str, asyncio.Event] = {}
    live: list[str] = []
    ids = [f"m{index:02d}" for index in range(12)]
    members = [_member(node_id, gates, live) for node_id in ids]
    slow = _member("slow", gates, live)  # no successor; still running when the join is due
    seen: list[dict[str, Any]] = []
    join = WorkflowNode(id="join", reduce=lambda ctx: seen.append(dict(ctx.inputs)) or len(seen))
    tail = WorkflowNode(id="tail", execute=lambda ctx: sorted(ctx.outputs))
    graph = WorkflowGraph(
        nodes=[*members, slow, join, tail],
        edges=[
            *(WorkflowEdge(source=node_id, target="join") for node_id in ids),
            WorkflowEdge(source="m03", target="tail"),  # a second successor of one member
            WorkflowEdge(source="join", target="tail"),
        ],
    )
    run = asyncio.ensure_future(graph.execute(input=None, scope=_scope(), max_concurrency=20))
    await _release(gates, list(reversed(ids)))
    for _ in range(50):  # bounded: the join is due without waiting for "slow"
        if seen:
            break
        await asyncio.sleep(0)
    assert len(seen) == 1 and live == ["slow"]  # the last member started the join at once
    gates["slow"].set()
    result = await asyncio.wait_for(run, 5)
    assert seen == [{node_id: node_id.upper() for node_id in ids}]  # the join ran once, with all
    assert list(seen[0]) == ids  # inputs in graph order, whatever the completion order
    assert result.outputs["tail"] == sorted([*ids, "join"])  # "slow" was still running
    assert set(result.statuses.values()) == {"completed"} and not live


async def test_slots_freed_by_quiet_completions_still_start_the_ready_nodes() -> None:
    gates: dict[str, asyncio.Event] = {}
    live: list[str] = []
    ids = [f"m{index}" for index in range(7)]
    graph = WorkflowGraph(
        nodes=[
            *(_member(node_id, gates, live) for node_id in ids),
            WorkflowNode(id="join", reduce=lambda ctx: len(ctx.inputs)),
        ],
        edges=[WorkflowEdge(source=node_id, target="join") for node_id in ids],
    )
    run = asyncio.ensure_future(graph.execute(input=None, scope=_scope(), max_concurrency=3))
    peak = 0
    for node_id in ids:
        for _ in range(5):
            await asyncio.sleep(0)
        peak = max(peak, len(live))
        assert node_id in live  # started once a slot was free
        gates[node_id].set()
    assert (await asyncio.wait_for(run, 5)).outputs["join"] == 7
    assert peak == 3


async def test_a_failure_among_quietly_settled_members_still_fails_fast() -> None:
    gates: dict[str, asyncio.Event] = {}
    live: list[str] = []
    ids = ["a", "b", "c", "d"]
    nodes = [_member(node_id, gates, live, fail=node_id == "c") for node_id in ids]
    graph = WorkflowGraph(
        nodes=[*nodes, WorkflowNode(id="join", reduce=lambda ctx: len(ctx.inputs))],
        edges=[WorkflowEdge(source=node_id, target="join") for node_id in ids],
    )
    run = asyncio.ensure_future(graph.execute(input=None, scope=_scope()))
    await _release(gates, ["a", "b", "c"])
    with pytest.raises(WorkflowNodeExecutionError) as caught:
        await asyncio.wait_for(run, 5)
    assert caught.value.node_id == "c"
    assert not live  # "d" was cancelled and awaited, not left running


async def test_a_collected_failure_and_skipped_route_reach_the_join_as_before() -> None:
    gates: dict[str, asyncio.Event] = {}
    live: list[str] = []
    nodes = [
        _member("a", gates, live),
        _member("b", gates, live, fail=True, policy="collect"),
        _member("c", gates, live),
    ]
    graph = WorkflowGraph(
        nodes=[
            *nodes,
            WorkflowNode(id="routed", execute=lambda ctx: "never"),
            WorkflowNode(id="join", reduce=lambda ctx: dict(ctx.inputs), activation="any"),
        ],
        edges=[
            WorkflowEdge(source="a", target="join"),
            WorkflowEdge(source="b", target="join"),
            WorkflowEdge(source="c", target="routed", when=lambda route: False),
            WorkflowEdge(source="routed", target="join"),
        ],
    )
    run = asyncio.ensure_future(graph.execute(input=None, scope=_scope()))
    await _release(gates, ["a", "c", "b"])
    result = await asyncio.wait_for(run, 5)
    inputs = result.outputs["join"]
    assert list(inputs) == ["a", "b"] and inputs["a"] == "A"
    assert isinstance(inputs["b"], WorkflowNodeFailure)
    assert result.statuses["routed"] == "skipped" and result.statuses["b"] == "failed"
