"""WorkflowGraph core and the presets (spec 04 §7.4 rows 46-56, §1.11 shapes)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from orchestration_testkit import agent, runtime_for, script

from actoviq.core import AbortController
from actoviq.orchestration import (
    ChildRunner,
    ChildRunOutcome,
    NodeContext,
    PresetError,
    RouteContext,
    RouterRoute,
    RunTree,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowGraphError,
    WorkflowNode,
    WorkflowNodeExecutionError,
    agent_workflow_node,
    panel_preset,
    reviewer_preset,
    router_preset,
    swarm_preset,
    team_preset,
)
from actoviq.runtime import RuntimeServices

SERVICES = RuntimeServices()


def _scope() -> Any:
    return RunTree().create_root(services=SERVICES)


def _node(node_id: str, value: Any = None) -> WorkflowNode:
    return WorkflowNode(id=node_id, execute=lambda ctx: value if value is not None else node_id)


def _join(node_id: str = "join", activation: Any = "all") -> WorkflowNode:
    return WorkflowNode(id=node_id, reduce=lambda ctx: dict(ctx.inputs), activation=activation)


def _routing() -> WorkflowGraph:
    def pick(letter: str) -> Any:
        def when(route: RouteContext) -> bool:
            return route.source_output == letter

        return when

    return WorkflowGraph(
        nodes=[
            WorkflowNode(id="router", execute=lambda ctx: ctx.input),
            _node("route-a", "A"),
            _node("route-b", "B"),
            WorkflowNode(
                id="join", reduce=lambda ctx: "".join(ctx.inputs.values()), activation="any"
            ),
        ],
        edges=[
            WorkflowEdge(source="router", target="route-a", when=pick("a")),
            WorkflowEdge(source="router", target="route-b", when=pick("b")),
            WorkflowEdge(source="route-a", target="join"),
            WorkflowEdge(source="route-b", target="join"),
        ],
    )


async def test_routing_graph_order_statuses_and_outputs() -> None:
    graph = _routing()
    assert graph.inspect()["order"] == ["router", "route-a", "route-b", "join"]
    result = await graph.execute(input="b", scope=_scope())
    assert dict(result.statuses) == {
        "router": "completed",
        "route-a": "skipped",
        "route-b": "completed",
        "join": "completed",
    }
    assert result.outputs["join"] == "B"
    assert list(result.outputs) == ["router", "route-b", "join"]


def test_cycles_and_invalid_graphs_are_refused() -> None:
    with pytest.raises(WorkflowGraphError, match="contains a cycle involving: a, b"):
        WorkflowGraph(
            nodes=[_node("a"), _node("b")],
            edges=[WorkflowEdge(source="a", target="b"), WorkflowEdge(source="b", target="a")],
        )
    cases: list[tuple[dict[str, Any], str]] = [
        ({"nodes": []}, "at least one"),
        ({"nodes": [_node(" ")]}, "id"),
        ({"nodes": [_node("a"), _node("a")]}, "Duplicate"),
        ({"nodes": [WorkflowNode(id="a")]}, "exactly one"),
        (
            {"nodes": [WorkflowNode(id="a", execute=lambda c: 1, reduce=lambda c: 2)]},
            "exactly one",
        ),
        ({"nodes": [_node("a")], "edges": [WorkflowEdge(source="a", target="x")]}, "unknown node"),
        (
            {"nodes": [_node("a")], "edges": [WorkflowEdge(source="a", target="a")]},
            "cannot depend on itself",
        ),
        (
            {
                "nodes": [_node("a"), _node("b")],
                "edges": [WorkflowEdge(source="a", target="b")] * 2,
            },
            "Duplicate workflow edge",
        ),
        ({"nodes": [_join("r")]}, "requires at least one predecessor"),
    ]
    for arguments, message in cases:
        with pytest.raises(WorkflowGraphError, match=message):
            WorkflowGraph(**arguments)


async def test_conditional_branches_both_false_skip_the_any_join() -> None:
    async def never(route: RouteContext) -> bool:
        return False

    graph = WorkflowGraph(
        nodes=[_node("source"), _node("left"), _node("right"), _join("join", "any")],
        edges=[
            WorkflowEdge(source="source", target="left", when=lambda route: False),
            WorkflowEdge(source="source", target="right", when=never),
            WorkflowEdge(source="left", target="join"),
            WorkflowEdge(source="right", target="join"),
        ],
    )
    result = await graph.execute(input=None, scope=_scope())
    assert dict(result.statuses) == {
        "source": "completed",
        "left": "skipped",
        "right": "skipped",
        "join": "skipped",
    }


async def test_execute_validates_and_wraps_node_failures() -> None:
    graph = WorkflowGraph(nodes=[_node("ok")])
    with pytest.raises(WorkflowGraphError, match="positive"):
        await graph.execute(input=None, scope=_scope(), max_concurrency=0)
    tree = RunTree()
    controller = AbortController()
    controller.abort(RuntimeError("stopped first"))
    aborted = tree.create_root(services=SERVICES, signal=controller.signal)
    with pytest.raises(RuntimeError, match="stopped first"):
        await graph.execute(input=None, scope=aborted)
    cancelled: list[str] = []

    async def slow(ctx: NodeContext) -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(ctx.node_id)
            raise

    def fail(ctx: NodeContext) -> None:
        raise KeyError("broken")

    failing = WorkflowGraph(
        nodes=[WorkflowNode(id="fail", execute=fail), WorkflowNode(id="slow", execute=slow)]
    )
    with pytest.raises(WorkflowNodeExecutionError) as caught:
        async with asyncio.timeout(5):
            await failing.execute(input=None, scope=_scope())
    assert caught.value.node_id == "fail" and isinstance(caught.value.__cause__, KeyError)
    assert cancelled == ["slow"]  # the sibling was cancelled and awaited, not left running


async def test_team_preset_respects_max_concurrency_and_reducer_order() -> None:
    running = 0
    peak = 0

    def member(name: str) -> WorkflowNode:
        async def execute(ctx: NodeContext) -> str:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.005)
            running -= 1
            return name

        return WorkflowNode(id=name, execute=execute)

    graph = team_preset(
        [member("c"), member("a"), member("b")],
        WorkflowNode(id="join", reduce=lambda ctx: list(ctx.inputs.items())),
    )
    result = await graph.execute(input=None, scope=_scope(), max_concurrency=2)
    assert peak == 2
    assert result.outputs["join"] == [("a", "a"), ("b", "b"), ("c", "c")]
    assert list(result.order) == ["a", "b", "c", "join"]


def test_preset_shapes() -> None:
    panel = panel_preset([_node("p1"), _node("p2")], _join("synth"))
    assert [(e.source, e.target) for e in panel.edges] == [("p1", "synth"), ("p2", "synth")]
    reviewer = reviewer_preset(_node("author"), [_node("r1"), _node("r2")], _join("done"))
    assert sorted((e.source, e.target) for e in reviewer.edges) == [
        ("author", "done"),
        ("author", "r1"),
        ("author", "r2"),
        ("r1", "done"),
        ("r2", "done"),
    ]
    lone = reviewer_preset(_node("author"), [], _join("done"))
    assert [(e.source, e.target) for e in lone.edges] == [("author", "done")]
    router = router_preset(
        _node("router"),
        [RouterRoute(node=_node("x"), when=lambda r: True)],
        _join("joined"),
    )
    assert router.nodes["joined"].activation == "any"
    assert router.edges[0].when is not None
    assert router_preset(_node("router"), [RouterRoute(node=_node("x"), when=lambda r: True)])
    swarm = swarm_preset(
        [_node("s1"), _node("s2"), _node("s3")],
        [WorkflowEdge(source="s1", target="s2", when=lambda r: True)],
        _join("end"),
    )
    assert sorted((e.source, e.target) for e in swarm.edges) == [
        ("s1", "s2"),
        ("s2", "end"),
        ("s3", "end"),
    ]
    assert swarm.nodes["end"].activation == "any"
    assert swarm_preset([_node("only")]).order == ("only",)
    for preset in (lambda: team_preset([], _join()), lambda: panel_preset([], _join())):
        with pytest.raises(PresetError, match="requires a member"):
            preset()


async def test_agent_nodes_run_as_children_of_the_graph_scope() -> None:
    provider = script("panelist", ["yes", "no", "yes"])
    synthesizer = script("synth", ["2 of 3 say yes"])
    async with runtime_for(provider, synthesizer) as runtime:
        runner = ChildRunner(runtime)
        panelists = [
            agent_workflow_node(
                f"p{n}", runner, agent("panelist"), input=lambda ctx: f"vote on {ctx.input}"
            )
            for n in range(3)
        ]

        def summary(ctx: NodeContext) -> str:
            votes = [outcome.output for outcome in ctx.inputs.values()]
            return f"votes: {votes}"

        synth = agent_workflow_node("synth", runner, agent("synth"), input=summary, output="value")
        graph = panel_preset(panelists, WorkflowNode(id="synth", execute=synth.execute))
        root = runner.create_root(run_id="panel-root")
        result = await graph.execute(input="the motion", scope=root, max_concurrency=3)
    outcome = result.outputs["p0"]
    assert isinstance(outcome, ChildRunOutcome) and outcome.status == "completed"
    assert outcome.scope.parent_run_id == "panel-root"
    assert result.outputs["synth"] == "2 of 3 say yes"
    assert (await root.budget.snapshot()).child_runs_started == 4
    assert provider.calls[0].request.input[-1].text == "vote on the motion"  # type: ignore[union-attr]
