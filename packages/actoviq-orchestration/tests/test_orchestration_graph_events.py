"""Graph- and node-level events of ``WorkflowGraph`` (issue 15 point 10): typed, in the parent's
run, correlated with the node's agent runs, redacted, and on the OpenTelemetry span."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from orchestration_testkit import agent, call, runtime_for, script

from actoviq.events import InMemoryEventSink, OpenTelemetrySink, RedactionPolicy, RunEvent
from actoviq.orchestration import (
    ChildFailurePolicy,
    ChildRunner,
    GraphNodeCompletedEvent,
    GraphNodeFailedEvent,
    GraphStartedEvent,
    NodeContext,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowNode,
    WorkflowNodeExecutionError,
    agent_as_tool,
    agent_workflow_node,
    loop_node,
)
from actoviq.orchestration.graph_runs import DurableGraphRunner
from actoviq.providers.testing import ScriptedTurn
from actoviq.runtime import InMemoryWorkflowRunStore, ToolExecutionContext, tool

SECRET = "sk-live-abcdefghijklmnopqrstuvwx"


def _graph_rows(events: list[RunEvent], run_id: str) -> list[tuple[str, str | None]]:
    """(type, node or child) of the events emitted in ``run_id`` (the orchestration root)."""
    rows: list[tuple[str, str | None]] = []
    for event in events:
        if event.run_id != run_id:
            continue
        data: dict[str, Any] = event.data if isinstance(event.data, dict) else {}
        detail = data.get("nodeId")
        if event.type.startswith("orchestration.child."):
            detail = f"{data['nodeId']}#{data.get('attempt', data.get('attempts'))}"
        rows.append((event.type, detail))
    return rows


def _triage(runner: ChildRunner) -> WorkflowGraph:
    """plan -> research (retried child) | shortcut (inactive route) | flaky (collected failure)."""

    def broken(ctx: NodeContext) -> Any:
        raise ValueError("tool rejected Authorization: Bearer abcdef0123456789abcdef")

    research = agent_workflow_node(
        "research",
        runner,
        agent("researcher"),
        input=lambda ctx: "find facts",
        failure_policy=ChildFailurePolicy.retry_safe(2),
        effect="read",
        output="value",
    )
    return WorkflowGraph(
        id="triage",
        nodes=[
            WorkflowNode(id="plan", execute=lambda ctx: {"plan": SECRET}),
            research,
            WorkflowNode(id="shortcut", execute=lambda ctx: "never"),
            WorkflowNode(id="flaky", execute=broken, failure_policy="collect"),
            WorkflowNode(id="report", reduce=lambda ctx: sorted(ctx.inputs), activation="any"),
        ],
        edges=[
            WorkflowEdge(source="plan", target="research"),
            WorkflowEdge(source="plan", target="shortcut", when=lambda route: False),
            WorkflowEdge(source="plan", target="flaky"),
            WorkflowEdge(source="research", target="report"),
            WorkflowEdge(source="shortcut", target="report"),
            WorkflowEdge(source="flaky", target="report"),
        ],
    )


def _researcher() -> Any:
    return script("researcher", [ScriptedTurn(error=ValueError("model hiccup")), "facts"])


async def test_a_graph_with_a_branch_a_failure_and_a_retry_emits_its_events_in_order() -> None:
    sink = InMemoryEventSink()
    async with runtime_for(_researcher(), event_sinks=[sink]) as runtime:
        runner = ChildRunner(runtime)
        async with runner.open_root("desk", run_id="desk") as desk:
            result = await _triage(runner).execute(input=SECRET, scope=desk, max_concurrency=1)
    assert result.statuses["shortcut"] == "skipped"
    assert result.outputs["research"] == "facts"
    events = list(sink.events)
    assert _graph_rows(events, "desk") == [
        ("orchestration.started", None),
        ("orchestration.graph.started", None),
        ("orchestration.graph.node.started", "plan"),
        ("orchestration.graph.node.completed", "plan"),
        ("orchestration.graph.node.skipped", "shortcut"),
        ("orchestration.graph.node.started", "flaky"),
        ("orchestration.graph.node.failed", "flaky"),
        ("orchestration.graph.node.started", "research"),
        ("orchestration.child.started", "research#1"),
        ("orchestration.child.started", "research#2"),
        ("orchestration.child.completed", "research#2"),
        ("orchestration.graph.node.completed", "research"),
        ("orchestration.graph.node.started", "report"),
        ("orchestration.graph.node.completed", "report"),
        ("orchestration.graph.completed", None),
        ("orchestration.completed", None),
    ]
    mine = [event for event in events if event.run_id == "desk"]
    started = mine[1]
    assert isinstance(started, GraphStartedEvent)
    graph_run_id = started.data["graphRunId"]
    assert started.data == {
        "graphId": "triage",
        "graphRunId": graph_run_id,
        "runId": "desk",
        "nodeCount": 5,
    }
    by_type = {(e.type, (e.data or {}).get("nodeId")): e for e in mine}  # type: ignore[union-attr]
    failed = by_type["orchestration.graph.node.failed", "flaky"]
    assert isinstance(failed, GraphNodeFailedEvent)
    assert failed.data["failurePolicy"] == "collect"
    assert failed.data["error"]["name"] == "ValueError"
    research = by_type["orchestration.graph.node.completed", "research"]
    assert isinstance(research, GraphNodeCompletedEvent)
    assert research.data["attempt"] == 1 and research.data["durationMs"] >= 0
    # The node's agent run: one child id, the same run whose events carry the node back.
    (child_run_id,) = research.data["childRunIds"]
    child_events = [e for e in mine if e.type.startswith("orchestration.child.")]
    assert {e.data["childRunId"] for e in child_events} == {child_run_id}  # type: ignore[index]
    assert {e.data["graphRunId"] for e in child_events} == {graph_run_id}  # type: ignore[index]
    child_run = [e for e in events if e.run_id == child_run_id]
    assert child_run and {e.parent_run_id for e in child_run} == {"desk"}
    # The retried attempt keeps the run id and continues its event sequence (a sink refuses a
    # sequence that goes back: the retry used to fail on any strict sink).
    assert [e.type for e in child_run].count("run.started") == 2
    assert [e.sequence for e in child_run] == list(range(1, len(child_run) + 1))
    assert child_run[-1].type == "run.completed"
    assert {e.trace_id for e in events} == {started.trace_id}  # one trace
    done = by_type["orchestration.graph.completed", None]
    assert {k: done.data[k] for k in ("completed", "failed", "skipped", "cancelled")} == {  # type: ignore[index]
        "completed": 3,
        "failed": 1,
        "skipped": 1,
        "cancelled": 0,
    }


async def test_graph_events_carry_no_content_and_error_text_is_redacted() -> None:
    sink = InMemoryEventSink()
    async with runtime_for(
        _researcher(), event_sinks=[sink], redaction=RedactionPolicy(scan_text=True)
    ) as runtime:
        runner = ChildRunner(runtime)
        async with runner.open_root("desk", run_id="desk") as desk:
            await _triage(runner).execute(input=SECRET, scope=desk, max_concurrency=1)
    graph_events = [e for e in sink.events if e.type.startswith("orchestration.graph.")]
    text = json.dumps([e.data for e in graph_events])
    assert SECRET not in text  # the graph input and the plan node's output are never emitted
    assert "abcdef0123456789abcdef" not in text  # the error message's token is redacted
    failed = next(e for e in graph_events if e.type == "orchestration.graph.node.failed")
    assert "[REDACTED]" in failed.data["error"]["message"]  # type: ignore[index]


async def test_a_fail_fast_failure_cancels_the_siblings_before_the_graph_fails() -> None:
    sink = InMemoryEventSink()
    entered = asyncio.Event()

    async def wait_forever(ctx: NodeContext) -> Any:
        entered.set()
        await asyncio.Event().wait()

    async def fail(ctx: NodeContext) -> Any:
        await entered.wait()
        raise RuntimeError("boom")

    graph = WorkflowGraph(
        id="race",
        nodes=[WorkflowNode(id="a-wait", execute=wait_forever), WorkflowNode(id="b", execute=fail)],
    )
    async with runtime_for(event_sinks=[sink]) as runtime:
        runner = ChildRunner(runtime)
        async with runner.open_root("desk", run_id="desk") as desk:
            with pytest.raises(WorkflowNodeExecutionError):
                await asyncio.wait_for(graph.execute(input=None, scope=desk), 5)
    rows = _graph_rows(list(sink.events), "desk")
    assert rows[-4:] == [
        ("orchestration.graph.node.failed", "b"),
        ("orchestration.graph.node.cancelled", "a-wait"),
        ("orchestration.graph.failed", "b"),
        ("orchestration.completed", None),
    ]
    cancelled = next(e for e in sink.events if e.type == "orchestration.graph.node.cancelled")
    assert cancelled.data["reason"] == "graph"  # type: ignore[index]


async def test_a_loop_body_names_its_node_and_round_and_unrouted_scopes_emit_nothing() -> None:
    sink = InMemoryEventSink()
    body = WorkflowGraph(id="body", nodes=[WorkflowNode(id="step", execute=lambda ctx: 1)])
    graph = WorkflowGraph(
        id="outer",
        nodes=[loop_node("cycle", body, until=lambda r: r.iteration == 1, max_iterations=3)],
    )
    async with runtime_for(event_sinks=[sink]) as runtime:
        runner = ChildRunner(runtime)
        async with runner.open_root("desk", run_id="desk") as desk:
            await graph.execute(input=None, scope=desk)
        before = len(sink.events)
        await graph.execute(input=None, scope=runner.create_root())  # not opened: no route
        assert len(sink.events) == before
    starts = [e.data for e in sink.events if e.type == "orchestration.graph.started"]
    outer, *rounds = starts
    assert outer["graphId"] == "outer" and "parentNodeId" not in outer  # type: ignore[index, operator]
    assert [(r["graphId"], r["parentNodeId"], r["iteration"]) for r in rounds] == [  # type: ignore[index]
        ("body", "cycle", 0),
        ("body", "cycle", 1),
    ]
    assert {r["parentGraphRunId"] for r in rounds} == {outer["graphRunId"]}  # type: ignore[index]


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield provider, spans
    provider.shutdown()


async def test_graph_events_reach_the_opentelemetry_span_with_ids_and_no_content(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, spans = exporter
    otel = OpenTelemetrySink(tracer_provider=provider)
    async with runtime_for(_researcher(), event_sinks=[otel]) as runtime:
        runner = ChildRunner(runtime)
        async with runner.open_root("desk", run_id="desk") as desk:
            await _triage(runner).execute(input=SECRET, scope=desk, max_concurrency=1)
    desk_span = next(
        span
        for span in spans.get_finished_spans()
        if span.attributes and span.attributes.get("actoviq.run.id") == "desk"
    )
    nodes = [
        (event.name, (event.attributes or {}).get("actoviq.nodeId"))
        for event in desk_span.events
        if event.name.startswith("orchestration.graph.node.")
    ]
    assert ("orchestration.graph.node.failed", "flaky") in nodes
    assert ("orchestration.graph.node.completed", "research") in nodes
    recorded = json.dumps([dict(event.attributes or {}) for event in desk_span.events])
    assert SECRET not in recorded and "actoviq.event.data" not in recorded


async def test_a_graph_run_by_a_managers_tool_streams_its_events_in_the_manager_run() -> None:
    async with runtime_for(
        script("manager", [call("plan", topic="x"), "planned"]),
        script("specialist", ["checked"]),
    ) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(run_id="manager-run")
        graph = WorkflowGraph(
            id="plan-graph",
            nodes=[
                agent_workflow_node(
                    "check", runner, agent("specialist"), input=lambda ctx: "go", output="value"
                )
            ],
        )

        @tool(name="plan", effect="read")
        async def plan(ctx: ToolExecutionContext, topic: str) -> str:
            """Plan through a graph in the manager's scope."""
            result = await graph.execute(input=topic, scope=root)
            return str(result.outputs["check"])

        runtime.tools.register(plan)
        async with runner.stream_scope(root, agent("manager", tools=("plan",)), "go") as handle:
            streamed = [event async for event in handle]
            result = await handle.result()
    assert result.output == "planned"
    rows: list[tuple[str, object]] = [
        (e.type, e.data.get("nodeId") if isinstance(e.data, dict) else None)
        for e in streamed
        if e.type.startswith("orchestration.")
    ]
    assert rows == [
        ("orchestration.graph.started", None),
        ("orchestration.graph.node.started", "check"),
        ("orchestration.child.started", "check"),
        ("orchestration.child.completed", "check"),
        ("orchestration.graph.node.completed", "check"),
        ("orchestration.graph.completed", None),
    ]
    assert {e.run_id for e in streamed} == {"manager-run"}
    sequences = [e.sequence for e in streamed]
    assert sequences == sorted(sequences)


async def test_a_node_counts_the_runs_it_started_not_their_own_children() -> None:
    sink = InMemoryEventSink()
    async with runtime_for(
        script("manager", [call("specialist", input="dig"), "managed"]),
        script("specialist", ["dug"]),
        event_sinks=[sink],
    ) as runtime:
        runner = ChildRunner(runtime)
        runtime.tools.register(agent_as_tool(agent("specialist"), runner).as_runtime_tool())
        manager = agent("manager", tools=("specialist",))
        graph = WorkflowGraph(
            nodes=[agent_workflow_node("lead", runner, manager, input=lambda ctx: "go")]
        )
        async with runner.open_root("desk", run_id="desk") as desk:
            await graph.execute(input=None, scope=desk)
    completed = next(e for e in sink.events if e.type == "orchestration.graph.node.completed")
    assert isinstance(completed, GraphNodeCompletedEvent)
    (manager_run,) = completed.data["childRunIds"]
    starts = [e for e in sink.events if e.type == "orchestration.child.started"]
    assert len(starts) == 2
    datas: list[dict[str, Any]] = [dict(e.data) for e in starts if isinstance(e.data, dict)]
    by_parent = {str(data["parentRunId"]): data for data in datas}
    assert by_parent["desk"]["childRunId"] == manager_run
    assert by_parent["desk"]["nodeId"] == "lead"
    assert "nodeId" not in by_parent[manager_run]  # the specialist is the manager's child


async def test_a_resumed_durable_run_marks_the_node_events_it_replayed() -> None:
    """Nodes a continued durable run did not execute (their stored output was returned) say so:
    ``replayed: true`` on their started/completed events; nodes that ran carry no flag."""
    tries: dict[str, int] = {}

    def step(node_id: str, fail: int = 0) -> WorkflowNode:
        def execute(ctx: NodeContext) -> Any:
            tries[node_id] = tries.get(node_id, 0) + 1
            if tries[node_id] <= fail:
                raise RuntimeError(f"{node_id} failed")
            return node_id

        return WorkflowNode(id=node_id, execute=execute)

    graph = WorkflowGraph(
        id="pipeline",
        nodes=[step("draft"), step("charge"), step("notify", fail=1)],
        edges=[
            WorkflowEdge(source="draft", target="charge"),
            WorkflowEdge(source="charge", target="notify"),
        ],
    )
    sink = InMemoryEventSink()
    durable = DurableGraphRunner(InMemoryWorkflowRunStore())
    effects: dict[str, Any] = {"draft": "read", "notify": "read"}
    async with runtime_for(_researcher(), event_sinks=[sink]) as runtime:
        runner = ChildRunner(runtime)
        for attempt in ("first", "second"):
            async with runner.open_root("desk", run_id=attempt) as desk:
                with contextlib.suppress(WorkflowNodeExecutionError):
                    await durable.run(
                        graph, graph_id="p", run_id="r", input=1, scope=desk, effects=effects
                    )
    assert tries == {"draft": 1, "charge": 1, "notify": 2}

    def flags(run_id: str) -> list[tuple[str, Any, Any]]:
        return [
            (e.type.rsplit(".", 1)[-1], e.data["nodeId"], e.data.get("replayed"))  # type: ignore[union-attr]
            for e in sink.events
            if e.run_id == run_id and e.type.startswith("orchestration.graph.node.")
        ]

    assert flags("first") == [
        ("started", "draft", None),
        ("completed", "draft", None),
        ("started", "charge", None),
        ("completed", "charge", None),
        ("started", "notify", None),
        ("failed", "notify", None),
    ]
    assert flags("second") == [
        ("started", "draft", True),
        ("completed", "draft", True),
        ("started", "charge", True),
        ("completed", "charge", True),
        ("started", "notify", None),
        ("completed", "notify", None),
    ]
