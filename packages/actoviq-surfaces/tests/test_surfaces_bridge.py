"""AgentRuntimeBridgeAdapter over a real runtime: rows 98 and 99 of spec 03 §7.10."""

from __future__ import annotations

import ast
import inspect
from typing import Any

from actoviq.core import AgentSpec
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, RuntimeServices
from actoviq.surfaces import (
    AgentRuntimeBridgeAdapter,
    SurfaceSemanticEvent,
    arender_text,
    bridge,
    pipeline,
)

AGENT: AgentSpec[Any, Any] = AgentSpec(
    id="bridge", name="Bridge", instructions="Answer.", model="scripted:model-1"
)


class Service:
    def __init__(self) -> None:
        self.closed = 0

    async def close(self) -> None:
        self.closed += 1


async def test_row_98_stream_run_and_ownership() -> None:
    provider = ScriptedProvider(
        [
            ScriptedTurn(text="bridge ok", stream_deltas=["bridge", " ok"]),
            ScriptedTurn(text="bridge ok"),
        ]
    )
    service = Service()
    services = RuntimeServices({"tracing": lambda: service})
    assert await services.resolve("tracing") is service  # pre-resolved by the host
    runtime = AgentRuntime(models=ModelRegistry([provider]), services=services)
    adapter = AgentRuntimeBridgeAdapter(runtime, AGENT)
    seen: list[SurfaceSemanticEvent] = []
    async with adapter.stream("hi") as stream:
        async for semantic in stream:
            seen.append(semantic)
        result = await stream.result()
    types = {event.type.value for event in seen}
    assert {
        "run.started",
        "request.started",
        "text.delta",
        "request.completed",
        "model.completed",
        "terminal",
        "usage",
    } <= types
    assert all(event.run_id == stream.run_id and event.trace_id and event.span_id for event in seen)
    snapshots = [event.data["snapshot"] for event in seen if event.type.value == "text.delta"]
    assert snapshots[-1] == "bridge ok"
    assert result.output == "bridge ok"
    assert (await adapter.run("again")).output == "bridge ok"
    assert service.closed == 0  # the adapter never closes what it does not own
    assert adapter.runtime is runtime and not runtime.closed
    await runtime.close()
    assert service.closed == 1
    await runtime.close()
    assert service.closed == 1


async def test_each_stream_has_its_own_projector_and_renders() -> None:
    provider = ScriptedProvider(["one", "two"])
    async with AgentRuntime(models=ModelRegistry([provider])) as runtime:
        adapter = AgentRuntimeBridgeAdapter(runtime, AGENT)
        texts: list[str] = []
        projectors: list[object] = []
        for prompt in ("a", "b"):
            async with adapter.stream(prompt) as stream:
                projectors.append(stream.projector)
                texts.append("".join([chunk async for chunk in arender_text(stream)]))
                assert (await stream.result()).status == "completed"
                assert stream.done
        assert projectors[0] is not projectors[1]
        assert texts[0].startswith("one\n") and texts[1].startswith("two\n")
        assert "[usage] 1 request" in texts[0]


async def test_leaving_the_stream_early_cancels_the_run() -> None:
    provider = ScriptedProvider(
        [ScriptedTurn(text="abc", stream_deltas=["a", "b", "c"], event_delay=5)]
    )
    async with AgentRuntime(models=ModelRegistry([provider])) as runtime:
        adapter = AgentRuntimeBridgeAdapter(runtime, AGENT)
        async with adapter.stream("x") as stream:
            async for semantic in stream:
                if semantic.type.value == "text.delta":
                    break
        result = await stream.result()
        assert result.status == "cancelled"


def _calls(module: object) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):  # type: ignore[arg-type]
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                names.add(func.id)
            elif isinstance(func, ast.Attribute):
                names.add(func.attr)
    return names


def _imports(module: object) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):  # type: ignore[arg-type]
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_row_99_bridge_never_constructs_or_closes_what_it_uses() -> None:
    calls = _calls(bridge)
    forbidden = {
        "AgentRuntime",
        "RuntimeServices",
        "ModelRegistry",
        "ScriptedProvider",
        "create_agent_sdk",
        "close",
        "aclose_runtime",
    }
    assert not calls & forbidden, calls & forbidden
    assert "stream" in calls and "run" in calls  # it delegates
    imports = _imports(bridge)
    assert not any(name.startswith(("actoviq.providers", "actoviq.compat")) for name in imports)
    runtime_imports = {name for name in imports if name.startswith("actoviq.runtime")}
    assert runtime_imports <= {
        "actoviq.runtime",
        "actoviq.runtime.AgentInput",
        "actoviq.runtime.RunHandle",
        "actoviq.runtime.InterruptionDecision",
    }
    source = inspect.getsource(bridge)
    assert "if TYPE_CHECKING:\n    from actoviq.runtime import AgentInput" in source


def test_row_99_products_wire_the_legacy_pipeline_per_target() -> None:
    source = inspect.getsource(pipeline)
    assert "def project_for(" in source
    assert "self.projector.project_for(adapted, target)" in source


async def test_resume_continues_the_same_projection() -> None:
    from actoviq.core import ToolCallItem
    from actoviq.runtime import InterruptionDecision, ToolRegistry, tool

    @tool(effect="side-effect", requires_approval=True)
    def ship(order: str) -> str:
        """Ship an order.

        Args:
            order: the order id.
        """
        return f"shipped {order}"

    provider = ScriptedProvider(
        [
            ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="ship", input={"order": "A1"})]),
            "done",
        ]
    )
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="shop", name="Shop", instructions="Ship.", model="scripted:m", tools=("ship",)
    )
    async with AgentRuntime(
        models=ModelRegistry([provider]), tools=ToolRegistry([ship])
    ) as runtime:
        adapter = AgentRuntimeBridgeAdapter(runtime, agent)
        async with adapter.stream("ship A1") as first:
            first_leg = [semantic async for semantic in first]
            interrupted = await first.result()
        assert interrupted.status == "interrupted"
        decisions = [InterruptionDecision.approve(entry.id) for entry in interrupted.interruptions]
        async with adapter.resume(
            interrupted.state, decisions, projector=first.projector
        ) as second:
            second_leg = [semantic async for semantic in second]
            assert (await second.result()).output == "done"
    assert first_leg[-1].data["status"] == "interrupted"
    started = next(s for s in second_leg if s.type.value == "tool.started")
    assert started.data["input"] == {"order": "A1"}  # rebuilt from the first leg's deltas
    assert second_leg[0].sequence > first_leg[-1].sequence
