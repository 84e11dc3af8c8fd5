"""Watch a workflow graph through its typed events: graph and node events in the root's run.

``triage`` plans, then takes two of its three routes: ``research`` runs an agent whose first
attempt fails and is retried (a read-only child, ``retry_safe``), ``shortcut`` is an inactive
route (skipped), and ``lint`` fails but is collected; ``report`` joins what arrived. Every event
is printed as a subscriber sees it: graph and node events (ids, attempts, durations, the run ids
of a node's agent runs, never inputs or outputs) interleaved with the ``orchestration.child.*``
events of the node's agent runs, which name the node back. The same events reach every sink and
the OpenTelemetry span of the root.

Offline (``ACTOVIQ_OFFLINE=1`` or no API key) a scripted researcher fails once, then answers;
with ``OPENAI_API_KEY`` or ``ANTHROPIC_API_KEY`` a real model answers (the first attempt then
succeeds, so no retry is shown).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from actoviq.core import AgentSpec
from actoviq.events import InMemoryEventSink, RunEvent
from actoviq.orchestration import (
    ChildFailurePolicy,
    ChildRunner,
    GraphNodeCompletedEvent,
    GraphNodeFailedEvent,
    NodeContext,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowNode,
    agent_workflow_node,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime


def models() -> tuple[ModelRegistry, str]:
    """A real provider when a key is set (and not offline), else a scripted flaky one."""
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        name = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        return ModelRegistry([OpenAIResponsesProvider()]), f"openai-responses:{name}"
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        name = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        return ModelRegistry([AnthropicProvider()]), f"anthropic:{name}"
    flaky = [ScriptedTurn(error=ConnectionResetError("model hiccup")), "CAS: compare, then set."]
    return ModelRegistry([ScriptedProvider(flaky, id="scripted")]), "scripted:m"


def build_graph(runner: ChildRunner, model: str) -> WorkflowGraph:
    researcher: AgentSpec[Any, Any] = AgentSpec(
        id="researcher", name="Researcher", model=model,
        instructions="Answer in one short sentence.",
    )  # fmt: skip

    def lint(ctx: NodeContext) -> Any:
        raise ValueError("style checker unavailable")

    research = agent_workflow_node(
        "research",
        runner,
        researcher,
        input=lambda ctx: "What is compare-and-set?",
        failure_policy=ChildFailurePolicy.retry_safe(2),
        effect="read",
        output="value",
    )
    return WorkflowGraph(
        id="triage",
        nodes=[
            WorkflowNode(id="plan", execute=lambda ctx: {"deep": False}),
            research,
            WorkflowNode(id="shortcut", execute=lambda ctx: "cached answer"),
            WorkflowNode(id="lint", execute=lint, failure_policy="collect"),
            WorkflowNode(id="report", reduce=lambda ctx: sorted(ctx.inputs), activation="any"),
        ],
        edges=[
            WorkflowEdge(source="plan", target="research"),
            WorkflowEdge(source="plan", target="shortcut", when=lambda r: r.source_output["deep"]),
            WorkflowEdge(source="plan", target="lint"),
            WorkflowEdge(source="research", target="report"),
            WorkflowEdge(source="shortcut", target="report"),
            WorkflowEdge(source="lint", target="report"),
        ],
    )


def describe(event: RunEvent) -> str:
    """One line per event (run ids and durations left out: they change from run to run)."""
    data: dict[str, Any] = event.data if isinstance(event.data, dict) else {}
    hidden = ("graphRunId", "runId", "parentRunId", "childRunId", "durationMs")
    shown = {key: value for key, value in data.items() if key not in hidden}
    if isinstance(event, GraphNodeFailedEvent):  # typed: data is GraphNodeFailedData
        shown["error"] = event.data["error"]["message"]
    if isinstance(event, GraphNodeCompletedEvent):
        shown["childRunIds"] = f"{len(event.data['childRunIds'])} run(s)"
    return f"{event.sequence:>2} {event.type:<38} {shown}"


async def main() -> None:
    registry, model = models()
    # --8<-- [start:main]
    sink = InMemoryEventSink()
    async with AgentRuntime(models=registry, event_sinks=[sink]) as runtime:
        runner = ChildRunner(runtime)
        async with runner.open_root("triage-desk", run_id="triage-desk") as desk:
            result = await build_graph(runner, model).execute(
                input=None, scope=desk, max_concurrency=1
            )
    # --8<-- [end:main]
    print("statuses:", dict(result.statuses))
    print("research:", result.outputs["research"])
    print("events of the root run (a subscriber or any sink sees the same):")
    for event in sink.events:
        if event.run_id == "triage-desk":
            print(" ", describe(event))
    types = [e.type for e in sink.events if e.run_id == "triage-desk"]
    assert types[-2] == "orchestration.graph.completed", types


if __name__ == "__main__":
    asyncio.run(main())
