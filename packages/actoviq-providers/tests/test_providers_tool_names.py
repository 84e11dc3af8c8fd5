"""Tool names a provider cannot carry are mapped on the wire and back (responses and streams)."""

from __future__ import annotations

import json
import re
from typing import Any, cast

import pytest
from providers_support import Recorder, json_answer, make_adapter, sse_answer

from actoviq.core import TextItem, ToolCallItem, ToolResultItem
from actoviq.providers import (
    ANTHROPIC_TOOL_NAMES,
    OPENAI_TOOL_NAMES,
    ModelRequest,
    ModelResponse,
    ModelToolDefinition,
    ResponseCompleted,
    ToolCallDelta,
    ToolChoice,
    ToolNameError,
    ToolNameMap,
)

VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
LONG = "ns." + "x" * 80
NAMES = ["workspace.read", "workspace_read", "agent.spawn", "a.b", "a-b", "a:b", LONG]
ADAPTERS = ("openai-responses", "openai-chat", "anthropic")


def test_names_map_reversibly_and_collision_free() -> None:
    names = ToolNameMap.of(NAMES, OPENAI_TOOL_NAMES)
    wire = [names.to_provider(name) for name in NAMES]
    assert all(VALID.match(name) for name in wire), wire
    assert len(set(wire)) == len(wire)
    assert [names.to_canonical(name) for name in wire] == NAMES
    # valid names are sent unchanged; a plain mapping when nothing else takes it
    assert names.to_provider("workspace_read") == "workspace_read"
    assert names.to_provider("a-b") == "a-b"
    assert names.to_provider("agent.spawn") == "agent_spawn"
    # "workspace.read" would take "workspace_read", and "a.b" / "a:b" would share "a_b"
    assert re.fullmatch(r"workspace_read_[0-9a-f]{8}", names.to_provider("workspace.read"))
    assert names.to_provider("a.b") != names.to_provider("a:b")
    assert names.to_provider("a.b").startswith("a_b_")
    assert len(names.to_provider(LONG)) == 64
    # order does not matter: every turn of a run maps alike
    assert ToolNameMap.of(reversed(NAMES), OPENAI_TOOL_NAMES).outgoing == names.outgoing
    # unknown names pass through
    assert names.to_canonical("never_sent") == "never_sent"
    assert ToolNameMap.of(["plain", "also-plain"], ANTHROPIC_TOOL_NAMES).identity


@pytest.mark.parametrize("name", ["...", "搜索", " "])
def test_a_name_without_letters_or_digits_cannot_be_mapped(name: str) -> None:
    with pytest.raises(ToolNameError) as info:
        ToolNameMap.of(["fine", name], OPENAI_TOOL_NAMES)
    assert info.value.code == "PROVIDER_TOOL_NAME_INVALID"
    assert info.value.details == {"tool": name, "provider": "OpenAI"}


def _request(**options: Any) -> ModelRequest:
    tools = [ModelToolDefinition(name=name, input_schema={"type": "object"}) for name in NAMES]
    history = [
        TextItem(role="user", text="read it"),
        ToolCallItem(id="call_0", name="workspace.read", input={"path": "a"}),
        ToolResultItem(call_id="call_0", status="success", output="A", name="workspace.read"),
    ]
    return ModelRequest(model="test-model", input=history, tools=tools, **options)


def _answer(adapter: str, wire_name: str, *, stream: bool) -> tuple[int, str, bytes]:
    arguments = json.dumps({"path": "README.md"})
    if adapter == "openai-responses":
        item = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": wire_name,
            "arguments": arguments,
            "status": "completed",
        }
        response = {"id": "resp_1", "object": "response", "status": "completed", "output": [item]}
        if not stream:
            return json_answer(response)
        return sse_answer(
            [
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": "fc_1",
                    "output_index": 0,
                    "delta": arguments,
                },
                {"type": "response.completed", "response": response},
            ]
        )
    if adapter == "openai-chat":
        call: dict[str, Any] = {"id": "call_1", "type": "function", "function": {"name": wire_name}}
        if not stream:
            call["function"]["arguments"] = arguments
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
            return json_answer(
                {"id": "chatcmpl-1", "object": "chat.completion", "choices": [choice]}
            )
        first = {**call, "index": 0, "function": {"name": wire_name, "arguments": ""}}
        rest = {"index": 0, "function": {"arguments": arguments}}
        chunks: list[dict[str, Any]] = [
            {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [first]}}]},
            {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [rest]}}]},
            {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
        return sse_answer(chunks, named=False, done=True)
    block = {"type": "tool_use", "id": "toolu_1", "name": wire_name, "input": {"path": "README.md"}}
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "test-model",
        "content": [block],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    if not stream:
        return json_answer(message)
    return sse_answer(
        [
            {"type": "message_start", "message": {**message, "content": []}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {**block, "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": arguments},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
            {"type": "message_stop"},
        ]
    )


def _forced(body: dict[str, Any], *path: str) -> str | None:
    """The forced tool's name at ``tool_choice.<path>``."""
    value: Any = body.get("tool_choice")
    for key in path:
        value = cast(dict[str, Any], value).get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) else None


def _sent_names(adapter: str, body: dict[str, Any]) -> tuple[list[str], list[str], str | None]:
    """(tool names, transcript tool-call names, forced tool) of a request body."""
    if adapter == "openai-responses":
        tools = [tool["name"] for tool in body["tools"]]
        calls = [item["name"] for item in body["input"] if item.get("type") == "function_call"]
        return tools, calls, _forced(body, "name")
    if adapter == "openai-chat":
        tools = [tool["function"]["name"] for tool in body["tools"]]
        calls = [
            call["function"]["name"]
            for message in body["messages"]
            for call in message.get("tool_calls", [])
        ]
        return tools, calls, _forced(body, "function", "name")
    tools = [tool["name"] for tool in body["tools"]]
    calls = [
        block["name"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_use"
    ]
    return tools, calls, _forced(body, "name")


@pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])
@pytest.mark.parametrize("adapter", ADAPTERS)
async def test_adapters_send_mapped_names_and_map_calls_back(adapter: str, stream: bool) -> None:
    request = _request(tool_policy=ToolChoice(name="workspace.read"))
    provider_names = ToolNameMap.for_request(request, OPENAI_TOOL_NAMES)
    wire = provider_names.to_provider("workspace.read")
    recorder = Recorder([_answer(adapter, wire, stream=stream)])
    provider = make_adapter(adapter, recorder)
    deltas: list[ToolCallDelta] = []
    async with provider:
        if stream:
            response: ModelResponse | None = None
            async for event in provider.stream(request):
                if isinstance(event, ToolCallDelta):
                    deltas.append(event)
                elif isinstance(event, ResponseCompleted):
                    response = event.response
            assert response is not None
        else:
            response = await provider.generate(request)
    (body,) = recorder.bodies()
    tools, calls, forced = _sent_names(adapter, body)
    assert all(VALID.match(name) for name in tools), tools
    assert tools == [provider_names.to_provider(name) for name in NAMES]
    assert calls == [wire]
    assert forced == wire
    (call,) = [item for item in response.output if isinstance(item, ToolCallItem)]
    assert call.name == "workspace.read"
    assert call.input == {"path": "README.md"}
    assert all(delta.name in (None, "workspace.read") for delta in deltas)
    if stream:
        assert any(delta.name == "workspace.read" for delta in deltas)


@pytest.mark.parametrize("adapter", ADAPTERS)
async def test_an_unmappable_name_fails_before_the_request(adapter: str) -> None:
    recorder = Recorder([json_answer({})])
    provider = make_adapter(adapter, recorder)
    request = ModelRequest(
        model="test-model",
        input=[TextItem(role="user", text="hi")],
        tools=[ModelToolDefinition(name="...", input_schema={"type": "object"})],
    )
    async with provider:
        with pytest.raises(ToolNameError):
            await provider.generate(request)
        with pytest.raises(ToolNameError):
            async for _ in provider.stream(request):
                pass
    assert recorder.requests == []
