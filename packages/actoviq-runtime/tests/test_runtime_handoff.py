"""``before_handoff`` (03 §1.21, §7.1 row 12): validation, the beforeHandoff stage, events."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_testkit import make_agent, scripted_runtime

from actoviq.core import AbortController, CanonicalItem, TextItem, ToolCallItem
from actoviq.events import InMemoryEventSink
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    HandoffRequest,
    HandoffRequestError,
    MiddlewareInvariantViolationError,
    MiddlewareStage,
    RuntimeClosedError,
    RuntimeTool,
    ToolBehavior,
    ToolDescriptor,
    ToolExecutionContext,
    define_middleware,
    json_schema_input,
)

SPECIALIST = make_agent(id="specialist", name="Specialist")
HISTORY: tuple[CanonicalItem, ...] = (TextItem(role="user", text="please escalate"),)


def _request(**overrides: Any) -> HandoffRequest:
    values: dict[str, Any] = {
        "source_agent_id": "manager",
        "target_agent": SPECIALIST,
        "handoff_id": "to-specialist",
        "input": HISTORY,
        "parent_run_id": "manager-run",
    }
    values.update(overrides)
    return HandoffRequest(**values)


def _runtime(*middleware: Any, provider: ScriptedProvider | None = None, **kw: Any) -> AgentRuntime:
    provider = provider or ScriptedProvider(["accepted"])
    return scripted_runtime(provider, middleware=list(middleware), **kw)


async def test_middleware_sees_the_handoff_and_its_items_reach_the_child() -> None:
    seen: list[tuple[Any, ...]] = []

    def append_note(ctx: Any, next: Any) -> Any:
        request: HandoffRequest = ctx.handoff
        seen.append(
            (
                request.source_agent_id,
                request.target_agent.id,
                request.parent_run_id,
                request.handoff_id,
                ctx.deadline.scope,
                ctx.agent,
            )
        )
        return [*ctx.input, TextItem(role="user", text="note from manager")]

    provider = ScriptedProvider(["accepted"])
    runtime = _runtime(
        define_middleware("note", MiddlewareStage.BEFORE_HANDOFF, append_note), provider=provider
    )
    async with runtime:
        items = await runtime.before_handoff(_request(deadline=4_102_444_800_000.0))
        assert seen == [
            ("manager", "specialist", "manager-run", "to-specialist", "handoff:to-specialist", None)
        ]
        assert [item.text for item in items if isinstance(item, TextItem)] == [
            "please escalate",
            "note from manager",
        ]
        child = await runtime.run(SPECIALIST, items, parent_run_id="manager-run")
        assert child.output == "accepted"
        sent = [i.text for i in provider.requests[0].input if isinstance(i, TextItem)]
        assert sent[-2:] == ["please escalate", "note from manager"]


async def test_without_middleware_the_input_is_returned_as_a_copy() -> None:
    async with _runtime() as runtime:
        items = await runtime.before_handoff(_request())
    assert items == list(HISTORY) and items is not HISTORY


async def test_registered_source_agent_uses_its_own_pipeline() -> None:
    calls: list[str] = []

    def mark(ctx: Any, next: Any) -> Any:
        calls.append(ctx.agent.id)
        return next()

    runtime = _runtime()
    runtime.middleware_registry.register(
        "agent-mark", define_middleware("agent-mark", MiddlewareStage.BEFORE_HANDOFF, mark)
    )
    manager = make_agent(id="manager", middleware=("agent-mark",))
    runtime.register_agent(manager)
    async with runtime:
        await runtime.before_handoff(_request())
    assert calls == ["manager"]


@pytest.mark.parametrize("field", ["source_agent_id", "handoff_id", "parent_run_id"])
async def test_blank_ids_are_refused_with_a_typed_error(field: str) -> None:
    async with _runtime() as runtime:
        with pytest.raises(HandoffRequestError, match="must not be empty") as info:
            await runtime.before_handoff(_request(**{field: "  "}))
    assert info.value.code == "HANDOFF_REQUEST_INVALID" and isinstance(info.value, TypeError)


async def test_bad_target_and_input_are_refused() -> None:
    async with _runtime() as runtime:
        with pytest.raises(HandoffRequestError, match="targetAgent"):
            await runtime.before_handoff(_request(target_agent="specialist"))
        with pytest.raises(HandoffRequestError, match="canonical items"):
            await runtime.before_handoff(_request(input=["not an item"]))


async def test_aborted_signal_raises_its_reason() -> None:
    controller = AbortController()
    controller.abort(RuntimeError("parent cancelled"))
    async with _runtime() as runtime:
        with pytest.raises(RuntimeError, match="parent cancelled"):
            await runtime.before_handoff(_request(signal=controller.signal))


async def test_closed_runtime_refuses() -> None:
    runtime = _runtime()
    await runtime.close()
    with pytest.raises(RuntimeClosedError):
        await runtime.before_handoff(_request())


async def test_middleware_returning_non_items_violates_the_invariant() -> None:
    def broken(ctx: Any, next: Any) -> Any:
        return "not a list"

    async with _runtime(
        define_middleware("broken", MiddlewareStage.BEFORE_HANDOFF, broken)
    ) as runtime:
        with pytest.raises(MiddlewareInvariantViolationError) as info:
            await runtime.before_handoff(_request())
    assert info.value.phase == "handoff" and info.value.run_id == "manager-run"
    assert info.value.stage == "beforeHandoff"


async def test_handoff_inside_a_running_parent_emits_handoff_prepared() -> None:
    sink = InMemoryEventSink()
    prepared: list[list[CanonicalItem]] = []
    runtime: AgentRuntime

    async def delegate(ctx: ToolExecutionContext, value: Any) -> str:
        items = await runtime.before_handoff(_request(parent_run_id=ctx.run_id))
        prepared.append(items)
        return "delegated"

    tool = RuntimeTool(
        descriptor=ToolDescriptor(
            name="delegate",
            description="Hand the conversation over.",
            input=json_schema_input({"type": "object"}),
            behavior=ToolBehavior(effect="side-effect"),
        ),
        execute=delegate,
    )
    provider = ScriptedProvider(
        [ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="delegate", input={})]), "done"]
    )
    runtime = _runtime(provider=provider, tools=[tool], event_sinks=[sink])
    manager = make_agent(id="manager", tools=("delegate",))
    async with runtime:
        result = await runtime.run(manager, "escalate", run_id="parent-1")
    assert result.output == "done" and len(prepared) == 1
    events = sink.events_for_run("parent-1")
    types = [event.type for event in events]
    assert (
        types.index("tool.started")
        < types.index("handoff.prepared")
        < types.index("tool.completed")
    )
    handoff = next(event for event in events if event.type == "handoff.prepared")
    assert handoff.data == {
        "handoffId": "to-specialist",
        "sourceAgentId": "manager",
        "targetAgentId": "specialist",
        "itemCount": 1,
    }
    assert [event.sequence for event in events] == list(range(1, len(events) + 1))
