"""Agent-as-tool (spec 04 §7.2 rows 24, 26-29; §8.2-15, §8.2-19): the manager stays the owner, a
failed child is an error tool result, a child's approval surfaces in the manager's result and
resumes through the manager."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from orchestration_testkit import agent, call, runtime_for, script

from actoviq.core import (
    JsonValueError,
    ProviderResponseError,
    TextItem,
    ToolCallItem,
    ToolResultItem,
)
from actoviq.events import InMemoryEventSink
from actoviq.orchestration import (
    FAIL_FAST,
    AgentTool,
    AgentToolError,
    ChildRunError,
    ChildRunner,
    ConversationOwner,
    ConversationState,
    agent_as_tool,
    default_map_input,
)
from actoviq.providers.testing import ScriptedTurn
from actoviq.runtime import (
    InMemorySessionStore,
    InterruptionDecision,
    RuntimeServices,
    RuntimeTool,
    StoreRuntimeSessionAdapter,
    ToolBehavior,
    ToolDescriptor,
    ToolExecutionContext,
    json_schema_input,
)

MANAGER = ConversationOwner(agent_id="manager", run_id="manager-run")


def _conversation() -> ConversationState:
    return ConversationState(owner=MANAGER, items=(TextItem(role="user", text="help"),))


async def test_invoke_keeps_the_owner_and_adds_exactly_one_tool_result() -> None:
    store = InMemorySessionStore()
    services = RuntimeServices({"sessions": lambda: StoreRuntimeSessionAdapter(store)})
    provider = script("specialist", ["specialist-done"])
    async with runtime_for(provider, services=services) as runtime:
        runner = ChildRunner(runtime)
        from actoviq.orchestration import TenantSessionNamespace

        parent = runner.create_root(
            run_id="manager-run",
            tenant_session=TenantSessionNamespace(session_id="session-main"),
        )
        tool = agent_as_tool(agent("specialist"), runner)
        conversation = _conversation()
        invocation = await tool.invoke(
            parent=parent, conversation=conversation, call_id="call-1", input="please"
        )
    assert invocation.owner_before is invocation.owner_after is conversation.owner
    assert invocation.conversation.owner is MANAGER
    assert len(invocation.conversation.items) == 2
    result = invocation.conversation.items[-1]
    assert isinstance(result, ToolResultItem) and result is invocation.tool_result
    assert (result.call_id, result.status, result.name) == ("call-1", "success", "specialist")
    assert isinstance(result.output, dict)
    assert result.output["agentId"] == "specialist"
    assert result.output["output"] == "specialist-done"
    assert result.output["childRunId"] == invocation.child.child_run_id
    assert invocation.child.result is not None
    child_session = invocation.child.result.session_id
    assert child_session is not None and child_session != "session-main"
    assert "session-main" in child_session  # default:default:session-main:<child>


async def test_name_and_call_id_must_not_be_blank() -> None:
    async with runtime_for(script("specialist", ["x"])) as runtime:
        runner = ChildRunner(runtime)
        with pytest.raises(AgentToolError, match="name"):
            agent_as_tool(agent("specialist"), runner, name=" ")
        tool = AgentTool(agent("specialist"), runner)
        with pytest.raises(AgentToolError, match="callId"):
            await tool.invoke(
                parent=runner.create_root(), conversation=_conversation(), call_id=" ", input="x"
            )


async def test_a_failed_child_is_an_error_result_and_fail_fast_raises() -> None:
    provider = script(
        "specialist",
        [
            ProviderResponseError("child failed", provider_id="specialist", code="CHILD"),
            ProviderResponseError("again", provider_id="specialist"),
        ],
    )
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root()
        tool = agent_as_tool(agent("specialist"), runner)
        invocation = await tool.invoke(
            parent=root, conversation=_conversation(), call_id="c1", input={"input": "x"}
        )
        strict = agent_as_tool(agent("specialist"), runner, failure_policy=FAIL_FAST)
        with pytest.raises(ChildRunError):
            await strict.invoke(parent=root, conversation=_conversation(), call_id="c2", input="x")
    result = invocation.tool_result
    assert result is not None and result.status == "error"
    assert isinstance(result.output, dict)
    error = result.output["error"]
    assert isinstance(error, dict)
    assert (error["message"], error["code"]) == ("child failed", "CHILD")


def test_default_input_mapping() -> None:
    assert default_map_input("plain") == "plain"
    assert default_map_input({"input": "text"}) == "text"
    assert default_map_input({"valid": True, "n": [1, 2]}) == '{"valid":true,"n":[1,2]}'
    # As JSON.stringify writes it: integral floats as integers, text kept as UTF-8.
    assert default_map_input({"n": 2.0, "x": 0.5, "t": "é"}) == '{"n":2,"x":0.5,"t":"é"}'
    with pytest.raises(JsonValueError):
        default_map_input({"n": math.nan})


async def test_the_runtime_tool_descriptor_and_parse() -> None:
    async with runtime_for(script("specialist", ["x"])) as runtime:
        runner = ChildRunner(runtime)
        tool = agent_as_tool(
            agent("specialist", description="Knows things."),
            runner,
            effect="read",
            input_schema={"type": "object"},
        ).as_runtime_tool()
    assert tool.descriptor.effect == "read"
    assert tool.descriptor.description == "Knows things."
    assert tool.descriptor.input.parse({"valid": True}) == {"valid": True}
    with pytest.raises(AgentToolError, match="finite"):
        tool.descriptor.input.parse({"bad": float("nan")})


async def test_inside_a_manager_run_the_owner_stays_and_events_join_the_parent() -> None:
    sink = InMemoryEventSink()
    async with runtime_for(
        script("specialist", ["researched"]),
        script("manager", [call("specialist", input="find"), "final answer"]),
        event_sinks=[sink],
    ) as runtime:
        runner = ChildRunner(runtime)
        tool = agent_as_tool(agent("specialist"), runner)
        runtime.tools.register(tool.as_runtime_tool())
        root = runner.create_root(run_id="manager-run")
        async with runner.stream_scope(
            root, agent("manager", tools=("specialist",)), "question"
        ) as handle:
            streamed = [event async for event in handle]
            result = await handle.result()
    assert result.run_id == "manager-run" and result.output == "final answer"
    assert result.agent_id == "manager"
    results = [item for item in result.items if isinstance(item, ToolResultItem)]
    assert len(results) == 1 and results[0].status == "success"
    assert isinstance(results[0].output, dict) and results[0].output["output"] == "researched"
    # The child's transcript is not merged into the manager's.
    assert not any(isinstance(i, TextItem) and i.text == "researched" for i in result.items)
    types = [e.type for e in streamed]
    assert "orchestration.child.started" in types and "orchestration.child.completed" in types
    started = next(e for e in streamed if e.type == "orchestration.child.started")
    assert started.run_id == "manager-run"
    assert isinstance(started.data, dict) and started.data["parentRunId"] == "manager-run"
    child_id = started.data["childRunId"]
    child_events = [e for e in sink.events if e.run_id == child_id]
    assert child_events and child_events[0].parent_run_id == "manager-run"
    assert {e.trace_id for e in sink.events} == {root.trace.trace_id}
    assert len(runner.tree) == 1


async def test_a_failed_child_is_an_error_tool_result_in_the_manager_run() -> None:
    async with runtime_for(
        script("specialist", [ProviderResponseError("no data", provider_id="specialist")]),
        script("manager", [call("specialist", input="find"), "sorry"]),
    ) as runtime:
        runner = ChildRunner(runtime)
        runtime.tools.register(agent_as_tool(agent("specialist"), runner).as_runtime_tool())
        result = await runner.run_scope(
            runner.create_root(), agent("manager", tools=("specialist",)), "q"
        )
    [failed] = [item for item in result.items if isinstance(item, ToolResultItem)]
    assert failed.status == "error"  # never a success holding an error (§8.2-19)
    assert isinstance(failed.output, dict)
    assert "no data" in str(failed.output["message"])
    assert result.output == "sorry"


async def test_a_manager_started_without_a_scope_gets_an_implicit_root() -> None:
    sink = InMemoryEventSink()
    async with runtime_for(
        script("specialist", ["a", "b"]),
        script(
            "manager",
            [
                ScriptedTurn(
                    tool_calls=[
                        ToolCallItem(id="c1", name="specialist", input={"input": "1"}),
                        ToolCallItem(id="c2", name="specialist", input={"input": "2"}),
                    ]
                ),
                "done",
            ],
        ),
        event_sinks=[sink],
    ) as runtime:
        runner = ChildRunner(runtime)
        runtime.tools.register(
            agent_as_tool(agent("specialist"), runner, effect="read").as_runtime_tool()
        )
        result = await runtime.run(agent("manager", tools=("specialist",)), "q", run_id="plain")
    assert result.output == "done"
    statuses = [i.status for i in result.items if isinstance(i, ToolResultItem)]
    assert statuses == ["success", "success"]
    children = {e.run_id for e in sink.events if e.parent_run_id == "plain"}
    assert len(children) == 2
    manager_trace = next(e.trace_id for e in sink.events if e.run_id == "plain")
    assert {e.trace_id for e in sink.events} == {manager_trace}
    assert len(runner.tree) == 0


async def test_a_childs_approval_surfaces_in_the_manager_and_resumes_through_it() -> None:
    wiped: list[str] = []

    def wipe(ctx: ToolExecutionContext, data: Any) -> str:
        wiped.append(ctx.run_id)
        return "wiped"

    wipe_tool = RuntimeTool(
        descriptor=ToolDescriptor(
            name="wipe",
            input=json_schema_input({"type": "object"}),
            behavior=ToolBehavior(effect="side-effect", requires_approval=True),
        ),
        execute=wipe,
    )
    async with runtime_for(
        script("janitor", [call("wipe", call_id="jc1"), "cleaned"]),
        script("manager", [call("janitor", input="clean"), "all clean"]),
        tools=[wipe_tool],
    ) as runtime:
        runner = ChildRunner(runtime)
        runtime.tools.register(
            agent_as_tool(agent("janitor", tools=("wipe",)), runner).as_runtime_tool()
        )
        root = runner.create_root(run_id="manager-run")
        manager = agent("manager", tools=("janitor",))
        first = await runner.run_scope(root, manager, "clean everything")
        assert first.status == "interrupted" and wiped == []
        [surfaced] = first.interruptions
        assert surfaced.tool_name == "wipe" and surfaced.kind == "approval"
        assert surfaced.metadata is not None
        assert surfaced.metadata["agentTool"] == "janitor"
        assert surfaced.metadata["suspendedCallId"] == "call-1"
        child_run_id = surfaced.metadata["childRunId"]
        assert surfaced.id == f"{child_run_id}:jc1"
        async with asyncio.timeout(10):
            handle = runtime.resume(first.state, [InterruptionDecision.approve(surfaced.id)])
            async with handle:
                done = await handle.result()
    assert done.status == "completed" and done.output == "all clean"
    assert wiped == [child_run_id]
    [tool_result] = [i for i in done.items if isinstance(i, ToolResultItem)]
    assert tool_result.status == "success"
    assert isinstance(tool_result.output, dict) and tool_result.output["output"] == "cleaned"
    assert tool_result.output["childRunId"] == child_run_id


async def test_a_rejected_child_approval_lets_the_child_finish_without_the_tool() -> None:
    wipe_tool = RuntimeTool(
        descriptor=ToolDescriptor(
            name="wipe",
            input=json_schema_input({"type": "object"}),
            behavior=ToolBehavior(requires_approval=True),
        ),
        execute=lambda ctx, data: "wiped",
    )
    janitor_turns = [call("wipe", call_id="jc1"), ScriptedTurn(text="could not wipe")]
    async with runtime_for(
        script("janitor", janitor_turns),
        script("manager", [call("janitor", input="clean"), "reported"]),
        tools=[wipe_tool],
    ) as runtime:
        runner = ChildRunner(runtime)
        runtime.tools.register(
            agent_as_tool(agent("janitor", tools=("wipe",)), runner).as_runtime_tool()
        )
        first = await runner.run_scope(
            runner.create_root(), agent("manager", tools=("janitor",)), "clean"
        )
        [surfaced] = first.interruptions
        handle = runtime.resume(first.state, [InterruptionDecision.reject(surfaced.id, "no")])
        async with handle:
            done = await handle.result()
    [tool_result] = [i for i in done.items if isinstance(i, ToolResultItem)]
    assert isinstance(tool_result.output, dict)
    assert tool_result.output["output"] == "could not wipe"
    assert done.output == "reported"


async def test_a_child_output_that_is_not_json_is_refused_typed() -> None:
    from actoviq.core import RunResult, Usage
    from actoviq.orchestration import ChildRunOutcome

    async with runtime_for(script("specialist", ["x"])) as runtime:
        runner = ChildRunner(runtime)
        tool = agent_as_tool(agent("specialist"), runner)
        scope = runner.tree.derive_child(runner.create_root(), "child")
        outcome = ChildRunOutcome(
            status="completed",
            attempts=1,
            scope=scope,
            result=RunResult(
                run_id="child",
                agent_id="specialist",
                status="completed",
                output={"bad": float("nan")},
                items=(),
                usage=Usage(),
                started_at="2026-01-01T00:00:00.000Z",
                completed_at="2026-01-01T00:00:00.000Z",
            ),
        )
        with pytest.raises(AgentToolError, match="finite"):
            tool.tool_result("call-1", outcome)
