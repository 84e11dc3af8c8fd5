"""Research citations and artifacts, supervisor spawning, workflow determinism, background runs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from actoviq.core import AbortController, AgentSpec, RunResult, ToolCallItem, ToolResultItem
from actoviq.orchestration import ChildRunner, WorkflowEdge, WorkflowGraph
from actoviq.profiles import (
    BackgroundCheckpointRequiredError,
    CitationsRequiredError,
    ProfileRuntimeConfigurationError,
    ResearchDocument,
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    profile_workflow_node,
    reduce_node_outputs,
    reducer_workflow_node,
    run_profile,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, InMemoryCheckpointStore, tool

MODEL = "scripted:model"
DOCS = [
    ResearchDocument(
        id="otel",
        title="OpenTelemetry",
        url="https://example.org/otel",
        text="OpenTelemetry traces spans across services",
    ),
    ResearchDocument(
        id="py", title="Python", url="https://example.org/py", text="Python is a language"
    ),
]


def _calls(*calls: tuple[str, dict[str, Any]]) -> ScriptedTurn:
    return ScriptedTurn(
        tool_calls=[
            ToolCallItem(id=f"c{n}", name=name, input=args) for n, (name, args) in enumerate(calls)
        ]
    )


def _results(result: RunResult[Any]) -> list[ToolResultItem]:
    return [item for item in result.items if isinstance(item, ToolResultItem)]


async def test_research_collects_citations_and_stores_artifacts() -> None:
    provider = ScriptedProvider(
        [
            _calls(
                ("research.search", {"query": "OpenTelemetry spans"}),
                ("research.fetch", {"source": "https://example.org/py"}),
                ("artifacts.write", {"name": "report", "content": "R" * 5000}),
            ),
            "answer",
        ],
        id="scripted",
    )
    registry = default_profile_registry(sources=DOCS, allow=["artifacts.write"])
    profile = build_profile("research", model=MODEL, tools=["research.fetch"])
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        result = await run_profile(runtime, profile, "What do spans do?")
    assert result.metadata is not None
    assert result.metadata["citations"] == [
        {"id": "otel", "title": "OpenTelemetry", "url": "https://example.org/otel"},
        {"id": "py", "title": "Python", "url": "https://example.org/py"},
    ]
    (ref,) = result.metadata["artifacts"]  # type: ignore[misc]
    assert ref["type"] == "artifact_ref"  # type: ignore[index]
    assert ref["size"] == 5000  # type: ignore[index]
    data = await registry.artifacts.read(tenant_id="default", artifact_id=ref["artifactId"])  # type: ignore[index, arg-type]
    assert data.data == b"R" * 5000
    record = await registry.artifacts.verify(tenant_id="default", artifact_id=ref["artifactId"])  # type: ignore[index, arg-type]
    assert record.sha256 == ref["sha256"]  # type: ignore[index]
    # the model saw a reference, not the 5000 characters
    artifact_result = _results(result)[2]
    assert "RRRR" not in str(artifact_result.output)


async def test_research_without_citations_is_flagged_or_enforced() -> None:
    provider = ScriptedProvider(["unsourced", "unsourced"], id="scripted")
    profile = build_profile("research", model=MODEL)
    async with create_profile_runtime(
        default_profile_registry(), models=ModelRegistry([provider])
    ) as runtime:
        flagged = await run_profile(runtime, profile, "q")
    assert flagged.metadata == {"citations": [], "citationsMissing": True}
    strict = default_profile_registry(enforce_citations=True)
    async with create_profile_runtime(strict, models=ModelRegistry([provider])) as runtime:
        with pytest.raises(Exception) as info:  # noqa: PT011 - the runtime may wrap it
            await run_profile(runtime, profile, "q")
    chain: list[BaseException] = []
    error: BaseException | None = info.value
    while error is not None:
        chain.append(error)
        error = error.__cause__
    assert any(isinstance(e, CitationsRequiredError) for e in chain)


async def test_supervisor_spawns_children_within_the_child_budget() -> None:
    helper = AgentSpec(id="helper", name="Helper", instructions="Help.", model=MODEL)
    provider = ScriptedProvider(
        [
            _calls(("agent.spawn", {"agent": "helper", "task": "one"})),
            "child one",
            _calls(("agent.spawn", {"agent": "helper", "task": "two"})),
            "final",
        ],
        id="scripted",
    )
    registry = default_profile_registry(allow=["agent.spawn"], spawnable_agents=[helper])
    supervisor = build_profile("supervisor", model=MODEL, limits={"maxSubagentFanout": 1})
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        result = await run_profile(runtime, supervisor, "delegate twice")
        assert registry.orchestrator is not None
        assert registry.orchestrator.runner.tree.scope(result.run_id) is None  # completed
    first, second = _results(result)
    assert first.status == "success"
    assert first.output["output"] == "child one"  # type: ignore[index]
    assert second.status == "error"
    assert "budget" in str(second.output).lower() or "child" in str(second.output).lower()
    assert result.output == "final"
    assert len(provider.calls) == 4  # the refused child never called the model


async def test_spawn_refuses_unknown_agents() -> None:
    provider = ScriptedProvider(
        [_calls(("agent.spawn", {"agent": "admin", "task": "x"})), "ok"], id="scripted"
    )
    registry = default_profile_registry(allow=["agent.spawn"])
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        result = await run_profile(runtime, build_profile("supervisor", model=MODEL), "go")
    (refused,) = _results(result)
    assert refused.status == "error"
    assert "not spawnable" in str(refused.output)


async def test_workflow_determinism_refuses_side_effect_tools() -> None:
    ran: list[str] = []

    @tool(name="charge_card", effect="side-effect")
    def charge_card(amount: int) -> str:
        """Charge a card.

        Args:
            amount: the amount.
        """
        ran.append(str(amount))
        return "charged"

    provider = ScriptedProvider(
        [_calls(("charge_card", {"amount": 5})), "node done"], id="scripted"
    )
    registry = default_profile_registry(allow=["charge_card"])
    async with create_profile_runtime(
        registry, models=ModelRegistry([provider]), checkpoints=InMemoryCheckpointStore()
    ) as runtime:
        runtime.tools.register(charge_card)
        node = build_profile("workflow", model=MODEL, tools=["charge_card"])
        result = await run_profile(runtime, node, "node input")
    (denied,) = _results(result)
    assert denied.status == "error"
    assert "may be replayed" in str(denied.output)
    assert ran == []


def test_reducer_is_independent_of_completion_order() -> None:
    first = reduce_node_outputs({"b": 2, "a": 1, "c": None})
    second = reduce_node_outputs({"c": None, "a": 1, "b": 2})
    assert (
        first
        == second
        == [
            {"node": "a", "output": 1},
            {"node": "b", "output": 2},
            {"node": "c", "output": None},
        ]
    )


async def test_background_status_and_exactly_once_recovery() -> None:
    @tool(name="publish", effect="side-effect", requires_approval=True)
    def publish(text: str) -> str:
        """Publish text.

        Args:
            text: what to publish.
        """
        return f"published {text}"

    provider = ScriptedProvider(
        [_calls(("publish", {"text": "report"})), "background done"], id="scripted"
    )
    registry = default_profile_registry(allow=["publish"])
    checkpoints = InMemoryCheckpointStore()
    async with create_profile_runtime(
        registry, models=ModelRegistry([provider]), checkpoints=checkpoints
    ) as runtime:
        runtime.tools.register(publish)
        background = build_profile("background", model=MODEL, tools=["publish"])
        first = await run_profile(runtime, background, "work")
        assert first.status == "interrupted"
        runs = registry.background
        assert runs is not None
        status = await runs.status(first.run_id)
        assert status["found"] is True
        assert status["status"] == "interrupted"
        (interruption,) = first.interruptions
        from actoviq.runtime import InterruptionDecision

        done = await runs.recover(first.run_id, [InterruptionDecision.approve(interruption.id)])
        assert done.status == "completed"
        assert done.output == "background done"
        with pytest.raises(Exception):  # noqa: B017, PT011 - a second recovery is refused
            await runs.recover(first.run_id, [InterruptionDecision.approve(interruption.id)])
        assert (await runs.status("missing"))["found"] is False


async def test_background_refused_without_checkpoints() -> None:
    registry = default_profile_registry()
    provider = ScriptedProvider(["never"], id="scripted")
    async with AgentRuntime(models=ModelRegistry([provider])) as runtime:
        registry.install(runtime)
        assert registry.background is not None
        with pytest.raises(BackgroundCheckpointRequiredError):
            registry.background.require_checkpoints()
        # a host that registers its own "checkpoints" service still cannot run unsaved
        runtime.services.register("checkpoints", lambda: object())
        with pytest.raises(Exception) as info:  # noqa: PT011
            await run_profile(runtime, build_profile("background", model=MODEL), "work")
        chain: list[BaseException] = []
        error: BaseException | None = info.value
        while error is not None:
            chain.append(error)
            error = error.__cause__
        assert any(isinstance(e, BackgroundCheckpointRequiredError) for e in chain)
    assert provider.calls == []


async def test_workflow_profiles_as_graph_nodes_with_the_reducer() -> None:
    def answer(request: Any) -> str:
        texts = [getattr(item, "text", "") for item in request.input]
        return "alpha done" if any("alpha" in text for text in texts) else "beta done"

    provider = ScriptedProvider([answer, answer], id="scripted")
    registry = default_profile_registry()
    async with create_profile_runtime(
        registry, models=ModelRegistry([provider]), checkpoints=InMemoryCheckpointStore()
    ):
        assert registry.orchestrator is not None
        runner = registry.orchestrator.runner
        alpha = build_profile("workflow", id="alpha-node", model=MODEL)
        beta = build_profile("workflow", id="beta-node", model=MODEL)
        graph = WorkflowGraph(
            nodes=[
                profile_workflow_node("beta", runner, beta, input=lambda ctx: f"beta {ctx.input}"),
                profile_workflow_node(
                    "alpha", runner, alpha, input=lambda ctx: f"alpha {ctx.input}"
                ),
                reducer_workflow_node("merge"),
            ],
            edges=[
                WorkflowEdge(source="beta", target="merge"),
                WorkflowEdge(source="alpha", target="merge"),
            ],
        )
        result = await graph.execute(input="task", scope=runner.create_root())
    assert result.outputs["merge"] == [
        {"node": "alpha", "output": "alpha done"},
        {"node": "beta", "output": "beta done"},
    ]
    assert len(provider.calls) == 2


async def test_profile_workflow_node_refuses_an_incomplete_runtime() -> None:
    async with AgentRuntime(models=ModelRegistry([])) as bare:
        runner = ChildRunner(bare)
        with pytest.raises(ProfileRuntimeConfigurationError, match=r"workflow\.determinism"):
            profile_workflow_node(
                "n", runner, build_profile("workflow", model=MODEL), input=lambda ctx: "x"
            )


async def test_a_cancelled_supervisor_run_leaves_no_scope_behind() -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    @tool(name="wait_here", effect="read")
    async def wait_here() -> str:
        """Wait until released (never, in this test)."""
        started.set()
        await release.wait()
        return "released"

    provider = ScriptedProvider([_calls(("wait_here", {})), "unreachable"], id="scripted")
    registry = default_profile_registry()
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        runtime.tools.register(wait_here)
        orchestrator = registry.orchestrator
        assert orchestrator is not None
        controller = AbortController()
        supervisor = build_profile("supervisor", model=MODEL, tools=["wait_here"])
        async with asyncio.TaskGroup() as group:
            task = group.create_task(
                run_profile(runtime, supervisor, "go", signal=controller.signal)
            )
            await asyncio.wait_for(started.wait(), timeout=30)
            assert orchestrator.open_scopes == 1
            controller.abort("host stopped it")
        assert task.result().status == "cancelled"
        assert orchestrator.open_scopes == 0
        assert orchestrator.runner.tree.scope(task.result().run_id) is None
