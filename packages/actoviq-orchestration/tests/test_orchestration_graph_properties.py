"""hypothesis: random graphs (all/any/first joins, conditional edges, collected and fatal
failures) never stall, settle every node consistently, and a durable run settles them alike."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actoviq.orchestration import (
    DurableGraphRunner,
    NodeContext,
    RunTree,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowGraphResult,
    WorkflowNode,
    WorkflowNodeExecutionError,
)
from actoviq.orchestration.graph import Activation, WorkflowNodeFailure
from actoviq.runtime import InMemoryWorkflowRunStore, RuntimeServices

SETTLED = {"completed", "skipped", "failed", "cancelled"}


@st.composite
def graphs(draw: st.DrawFn, *, first: bool = True) -> tuple[WorkflowGraph, set[str]]:
    """A random DAG; returns it and the ids of nodes that fail fatally."""
    size = draw(st.integers(min_value=1, max_value=7))
    activations: list[Activation] = ["all", "any", "first"] if first else ["all", "any"]
    fatal: set[str] = set()
    nodes: list[WorkflowNode] = []
    edges: list[WorkflowEdge] = []
    for index in range(size):
        node_id = f"n{index}"
        kind = draw(st.sampled_from(["ok", "ok", "ok", "collect", "fatal"]))
        if kind == "fatal":
            fatal.add(node_id)

        def execute(ctx: NodeContext, kind: str = kind) -> Any:
            if kind != "ok":
                raise RuntimeError(f"{ctx.node_id} failed")
            return {"node": ctx.node_id, "after": sorted(ctx.outputs)}

        nodes.append(
            WorkflowNode(
                id=node_id,
                execute=execute,
                activation=draw(st.sampled_from(activations)),
                failure_policy="collect" if kind == "collect" else "fail-fast",
            )
        )
        for source in range(index):
            if draw(st.booleans()):
                open_ = draw(st.booleans())
                edges.append(
                    WorkflowEdge(
                        source=f"n{source}",
                        target=node_id,
                        when=None if open_ else (lambda route: False),
                    )
                )
    return WorkflowGraph(nodes=nodes, edges=edges), fatal


async def _outcome(action: Awaitable[WorkflowGraphResult]) -> Any:
    try:
        return await action
    except WorkflowNodeExecutionError as error:
        return error


def _scope() -> Any:
    return RunTree().create_root(services=RuntimeServices())


def _check(graph: WorkflowGraph, result: WorkflowGraphResult) -> None:
    assert set(result.statuses) == set(graph.order)
    for node_id, status in result.statuses.items():
        assert status in SETTLED, (node_id, status)
        if status == "completed":
            assert not isinstance(result.outputs[node_id], WorkflowNodeFailure)
        elif status == "failed":
            assert isinstance(result.outputs[node_id], WorkflowNodeFailure)
        else:
            assert node_id not in result.outputs
    for node_id, node in graph.nodes.items():
        if result.statuses[node_id] not in ("completed", "failed"):
            continue
        incoming = [e for e in graph.edges if e.target == node_id]
        produced = [result.statuses[e.source] in ("completed", "failed") for e in incoming]
        if incoming and node.activation == "all":
            assert all(produced)
        elif incoming:
            assert any(produced)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_random_graphs_settle_every_node(case: tuple[WorkflowGraph, set[str]]) -> None:
    graph, fatal = case

    async def run() -> None:
        outcome = await _outcome(graph.execute(input=None, scope=_scope(), max_concurrency=3))
        if isinstance(outcome, WorkflowNodeExecutionError):
            assert outcome.node_id in fatal
            return
        result = outcome
        ran_fatal = fatal & {n for n, s in result.statuses.items() if s != "skipped"}
        assert not ran_fatal - {n for n, s in result.statuses.items() if s == "cancelled"}
        _check(graph, result)

    asyncio.run(run())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(first=False))
def test_a_durable_run_settles_like_the_in_memory_one(case: tuple[WorkflowGraph, set[str]]) -> None:
    graph, _ = case

    async def run() -> None:
        plain = await _outcome(graph.execute(input=None, scope=_scope()))
        runner = DurableGraphRunner(InMemoryWorkflowRunStore())
        durable = await _outcome(
            runner.run(graph, graph_id="g", run_id="r", scope=_scope(), default_effect="read")
        )
        if isinstance(plain, WorkflowNodeExecutionError):
            assert isinstance(durable, WorkflowNodeExecutionError)
            assert durable.node_id == plain.node_id
            assert (await runner.query("r")).status == "failed"
            return
        assert isinstance(durable, WorkflowGraphResult)
        assert dict(durable.statuses) == dict(plain.statuses)
        assert dict(durable.outputs).keys() == dict(plain.outputs).keys()
        stored = await runner.run(graph, graph_id="g", run_id="r", scope=_scope())
        assert dict(stored.statuses) == dict(plain.statuses)

    asyncio.run(run())
