"""Model-driven handoff in the runtime: ``AgentSpec.handoffs`` are offered as tools in every
adapter and the model's handoff call ends the run with ``RunResult.handoff`` (issue 15 point 6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from runtime_testkit import json_tool, make_agent, scripted_runtime

from actoviq.core import (
    HandoffCallItem,
    HandoffRef,
    ModelRefParts,
    TextItem,
    ToolCallItem,
    ToolResultItem,
)
from actoviq.events import InMemoryEventSink
from actoviq.providers import ModelRequest, ResolvedModel
from actoviq.providers.mapping import MappingOptions, anthropic, openai_chat, openai_responses
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import HandoffToolError, InterruptionDecision, ToolExecutionContext

TO_BILLING = HandoffRef(id="to-billing", target_agent_id="billing", description="Billing topics.")
TO_SUPPORT = HandoffRef(id="to_support", target_agent_id="support")
TRIAGE = make_agent(id="triage", name="Triage", handoffs=(TO_BILLING, TO_SUPPORT))


def _handoff_call(call_id: str, name: str, reason: str = "billing question") -> ToolCallItem:
    return ToolCallItem(id=call_id, name=name, input={"reason": reason})


async def test_handoffs_are_offered_to_the_model_as_tools_after_the_agents_tools() -> None:
    provider = ScriptedProvider(["hello"])
    lookup = json_tool("lookup", _constant("x"))
    agent = make_agent(id="triage", name="Triage", tools=("lookup",), handoffs=(TO_BILLING,))
    async with scripted_runtime(provider, tools=[lookup]) as runtime:
        result = await runtime.run(agent, "hi")
    assert result.handoff is None and result.output == "hello"
    request = provider.calls[0].request
    assert request.tools is not None
    assert [tool.name for tool in request.tools] == ["lookup", "to-billing"]
    handoff_tool = request.tools[1]
    assert handoff_tool.description == "Billing topics."
    assert handoff_tool.input_schema["type"] == "object"
    assert request.tool_policy == "auto"


Builder = Callable[..., dict[str, Any]]


def _names(body: dict[str, Any], *path: str) -> list[str]:
    names: list[str] = []
    for tool in body["tools"]:
        value: Any = tool
        for key in path:
            value = value[key]
        names.append(str(value))
    return names


def _constant(value: str) -> Callable[[ToolExecutionContext, Any], str]:
    def execute(ctx: ToolExecutionContext, data: Any) -> str:
        return value

    return execute


@pytest.mark.parametrize(
    ("provider_id", "build", "path"),
    [
        ("openai-responses", openai_responses.build_request_body, ("name",)),
        ("openai-chat", openai_chat.build_request_body, ("function", "name")),
        ("anthropic", anthropic.build_request_body, ("name",)),
    ],
)
async def test_every_adapter_maps_the_handoff_tools_and_the_transfer_transcript(
    provider_id: str, build: Builder, path: tuple[str, ...]
) -> None:
    provider = ScriptedProvider([ScriptedTurn(tool_calls=[_handoff_call("call-1", "to-billing")])])
    async with scripted_runtime(provider) as runtime:
        result = await runtime.run(TRIAGE, "my invoice is wrong")
    model = ResolvedModel(
        provider_id=provider_id, model_id="m", ref=ModelRefParts(provider=provider_id, model="m")
    )
    offered = provider.calls[0].request
    body = build(
        ModelRequest(model=model, input=offered.input, tools=offered.tools, tool_policy="auto"),
        "m",
        MappingOptions(provider_id=provider_id),
    )
    assert _names(body, *path) == ["to-billing", "to_support"]
    # The transcript the next owner receives (call + transferred result) maps as well.
    history = [TextItem(role="user", text="my invoice is wrong"), *result.items]
    build(ModelRequest(model=model, input=history), "m", MappingOptions(provider_id=provider_id))


async def test_a_handoff_call_ends_the_run_completed_with_the_handoff() -> None:
    sink = InMemoryEventSink()
    provider = ScriptedProvider(
        [
            ScriptedTurn(
                text="Let me get billing.",
                tool_calls=[_handoff_call("call-1", "to-billing")],
            )
        ]
    )
    async with scripted_runtime(provider, event_sinks=[sink]) as runtime:
        result = await runtime.run(TRIAGE, "my invoice is wrong")
    assert result.status == "completed"
    assert result.output == "Let me get billing."
    assert result.handoff == HandoffCallItem(
        id="call-1",
        target_agent_id="billing",
        input={"reason": "billing question"},
        metadata={"handoffId": "to-billing", "toolName": "to-billing"},
    )
    assert len(provider.calls) == 1  # no further model call after the handoff
    transferred = result.items[-1]
    assert isinstance(transferred, ToolResultItem)
    assert (transferred.call_id, transferred.status) == ("call-1", "success")
    assert transferred.output == {
        "handoffId": "to-billing",
        "targetAgentId": "billing",
        "transferred": True,
    }
    types = [event.type for event in sink.events]
    assert "tool.started" not in types
    assert types[-2:] == ["handoff.requested", "run.completed"]
    assert sink.events[-2].data == {
        "handoffId": "to-billing",
        "callId": "call-1",
        "sourceAgentId": "triage",
        "targetAgentId": "billing",
    }


async def test_only_the_first_handoff_of_a_turn_counts_and_other_tools_still_run() -> None:
    ran: list[str] = []

    def lookup(ctx: ToolExecutionContext, data: Any) -> str:
        ran.append(ctx.call_id)
        return "found"

    agent = make_agent(id="triage", name="Triage", tools=("lookup",), handoffs=TRIAGE.handoffs)
    provider = ScriptedProvider(
        [
            ScriptedTurn(
                tool_calls=[
                    _handoff_call("h1", "to_support"),
                    ToolCallItem(id="t1", name="lookup", input={}),
                    _handoff_call("h2", "to-billing"),
                ]
            )
        ]
    )
    async with scripted_runtime(provider, tools=[json_tool("lookup", lookup)]) as runtime:
        result = await runtime.run(agent, "route me")
    assert ran == ["t1"]
    assert result.handoff is not None and result.handoff.target_agent_id == "support"
    results = {item.call_id: item for item in result.items if isinstance(item, ToolResultItem)}
    assert results["h1"].status == "success"
    assert results["t1"].status == "success"
    assert results["h2"].status == "error"
    assert isinstance(results["h2"].output, dict)
    assert results["h2"].output["kind"] == "handoff_ignored"


async def test_a_handoff_waits_for_an_approval_in_its_turn_and_survives_resume() -> None:
    provider = ScriptedProvider(
        [
            ScriptedTurn(
                tool_calls=[
                    ToolCallItem(id="t1", name="refund", input={}),
                    _handoff_call("h1", "to-billing"),
                ]
            )
        ]
    )
    refund = json_tool("refund", _constant("refunded"), requires_approval=True)
    agent = make_agent(id="triage", name="Triage", tools=("refund",), handoffs=(TO_BILLING,))
    async with scripted_runtime(provider, tools=[refund]) as runtime:
        first = await runtime.run(agent, "refund then route")
        assert first.status == "interrupted" and first.handoff is None
        decision = InterruptionDecision.approve(first.interruptions[0].id)
        async with runtime.resume(first.state, [decision]) as handle:
            resumed = await handle.result()
    assert resumed.status == "completed"
    assert resumed.handoff is not None and resumed.handoff.id == "h1"
    assert len(provider.calls) == 1


@pytest.mark.parametrize(
    ("handoffs", "tools", "message"),
    [
        ((HandoffRef(id="to billing", target_agent_id="b"),), (), "not a valid tool name"),
        ((TO_BILLING, TO_BILLING), (), "twice"),
        ((HandoffRef(id="lookup", target_agent_id="b"),), ("lookup",), "one of its tools"),
    ],
)
async def test_a_handoff_that_cannot_be_a_tool_is_refused_typed(
    handoffs: tuple[HandoffRef, ...], tools: tuple[str, ...], message: str
) -> None:
    agent = make_agent(id="triage", name="Triage", tools=tools, handoffs=handoffs)
    async with scripted_runtime(ScriptedProvider(["x"])) as runtime:
        with pytest.raises(HandoffToolError, match=message) as caught:
            await runtime.run(agent, "hi")
        assert caught.value.code == "HANDOFF_TOOL_INVALID"
