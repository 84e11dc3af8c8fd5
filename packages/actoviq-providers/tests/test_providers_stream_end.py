"""Issue 13 defects 4 and 7: how a stream ends, and streamed usage unknown versus zero.

A stream that ends without its terminal chunk/event (a server that answers 200 and closes with no
data, as llama.cpp's server does for a prompt longer than its context; a connection cut between
events) raises ``ProviderStreamError``, retryable only when no event was delivered. A stream that
ends properly without a usage chunk has unknown usage (``UNSET``), not zeros. Run against a real
loopback server (the SDK reads a real close-delimited body) and through the SDK on a
``MockTransport``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from loopback import LoopbackServer, Received, Reply
from providers_support import ADAPTERS, SECRET, Recorder, make_adapter, sse_answer

from actoviq.core import UNSET, RawItem, TextItem, Usage, to_json
from actoviq.providers import (
    ModelRequest,
    ModelStream,
    ModelStreamEvent,
    ProviderStreamError,
    ResponseCompleted,
)
from actoviq.providers._sdk_adapter import SDKModelProvider
from actoviq.providers.anthropic import AnthropicProvider
from actoviq.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider

GUARD = 30.0
NAMED = {"openai-responses": True, "openai-chat": False, "anthropic": True}

# Events each API streams before its terminal one: some text, nothing that ends the stream.
PARTIAL: dict[str, list[dict[str, Any]]] = {
    "openai-responses": [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {"type": "response.output_text.delta", "delta": "Hel", "output_index": 0},
        {"type": "response.output_text.delta", "delta": "lo", "output_index": 0},
    ],
    "openai-chat": [
        {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}}]},
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": "Hel"}}],
        },
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": "lo"}}],
        },
    ],
    "anthropic": [
        {
            "type": "message_start",
            "message": {"id": "msg_1", "usage": {"input_tokens": 3, "output_tokens": 1}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
    ],
}
TERMINAL: dict[str, list[dict[str, Any]]] = {
    "openai-responses": [
        {
            "type": "response.completed",
            "response": {
                "id": "resp_1",
                "status": "completed",
                "output": [
                    {"type": "message", "content": [{"type": "output_text", "text": "Hello"}]}
                ],
            },
        }
    ],
    "openai-chat": [
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }
    ],
    "anthropic": [
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"},
    ],
}


def provider(name: str, url: str) -> SDKModelProvider:
    kwargs: dict[str, Any] = {"api_key": SECRET, "max_retries": 2}
    if name == "openai-responses":
        return OpenAIResponsesProvider(base_url=f"{url}/v1", **kwargs)
    if name == "openai-chat":
        return OpenAIChatProvider(base_url=f"{url}/v1", **kwargs)
    return AnthropicProvider(base_url=url, **kwargs)


def request(name: str) -> ModelRequest:
    return ModelRequest(model=f"{name}:m", input=[TextItem(role="user", text="hi")])


async def collect(p: SDKModelProvider, name: str) -> list[ModelStreamEvent]:
    events: list[ModelStreamEvent] = []
    async with asyncio.timeout(GUARD), p.stream(request(name)) as stream:
        async for event in stream:
            events.append(event)
    return events


@pytest.mark.parametrize("name", ADAPTERS)
async def test_200_then_close_with_no_data_is_a_retryable_stream_error(name: str) -> None:
    async def script(received: Received, reply: Reply) -> None:
        await reply.head(content_type="text/event-stream")  # and close: no event at all

    async with LoopbackServer(script) as server, provider(name, server.url) as p:
        with pytest.raises(ProviderStreamError) as info:
            await collect(p, name)
        with pytest.raises(ProviderStreamError):
            await p.stream(request(name)).final_response()
    error = info.value
    assert error.code == "PROVIDER_STREAM_ERROR" and error.retryable
    assert error.details is not None and error.details["eventsDelivered"] == 0
    assert "before any event" in str(error) and SECRET not in str(error.to_json())
    # A 200 is an answer: the SDK does not retry it (one request per stream opened).
    assert len(server.requests) == 2


@pytest.mark.parametrize("name", ADAPTERS)
async def test_stream_cut_after_events_is_a_stream_error_not_retryable(name: str) -> None:
    async def script(received: Received, reply: Reply) -> None:
        await reply.events(PARTIAL[name], named=NAMED[name])  # then close, no terminal event

    seen: list[str] = []

    async def consume(stream: ModelStream) -> None:
        async with asyncio.timeout(GUARD):
            async for event in stream:
                if event.type == "text.delta":
                    seen.append(event.delta)

    async with LoopbackServer(script) as server, provider(name, server.url) as p:
        stream = p.stream(request(name))
        with pytest.raises(ProviderStreamError) as info:
            await consume(stream)
        with pytest.raises(ProviderStreamError):
            await stream.final_response()
    assert seen == ["Hel", "lo"]  # what arrived was delivered before the error
    assert not info.value.retryable
    assert info.value.details is not None and info.value.details["eventsDelivered"] >= 2


@pytest.mark.parametrize("name", ADAPTERS)
async def test_a_complete_stream_still_succeeds(name: str) -> None:
    async def script(received: Received, reply: Reply) -> None:
        await reply.events(PARTIAL[name] + TERMINAL[name], named=NAMED[name], done=True)

    async with LoopbackServer(script) as server, provider(name, server.url) as p:
        events = await collect(p, name)
    final = [e for e in events if isinstance(e, ResponseCompleted)]
    assert len(final) == 1 and final[0].response.text == "Hello"


@pytest.mark.parametrize("name", ADAPTERS)
async def test_mock_transport_stream_without_terminal_event(name: str) -> None:
    recorder = Recorder([sse_answer(PARTIAL[name], named=NAMED[name], done=True)])
    async with make_adapter(name, recorder) as p:
        with pytest.raises(ProviderStreamError) as info:
            await p.stream(request(name)).final_response()
    # [DONE] is not a terminal event: the chunk with a finish reason / completion event is.
    assert not info.value.retryable


async def test_chat_stream_without_usage_chunk_has_unknown_usage() -> None:
    events = PARTIAL["openai-chat"] + TERMINAL["openai-chat"]
    recorder = Recorder([sse_answer(events, named=False, done=True)])
    async with make_adapter("openai-chat", recorder) as p:
        stream = p.stream(request("openai-chat"))
        seen = [event.type async for event in stream]
        final = await stream.final_response()
    assert final.usage is UNSET and not final.has_usage
    assert "usage" not in seen
    assert recorder.bodies()[0]["stream_options"] == {"include_usage": True}


async def test_chat_stream_usage_chunk_is_the_usage_and_zero_is_not_unknown() -> None:
    usage_chunk: dict[str, Any] = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }
    events = [*PARTIAL["openai-chat"], *TERMINAL["openai-chat"], usage_chunk]
    recorder = Recorder([sse_answer(events, named=False, done=True)])
    async with make_adapter("openai-chat", recorder) as p:
        final = await p.stream(request("openai-chat")).final_response()
    assert final.has_usage and final.usage == Usage(requests=1)


@pytest.mark.parametrize("name", ADAPTERS)
async def test_plain_response_without_usage_has_unknown_usage(name: str) -> None:
    bodies: dict[str, Any] = {
        "openai-responses": TERMINAL["openai-responses"][0]["response"],
        "openai-chat": {
            "id": "c1",
            "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "Hello"}}],
        },
        "anthropic": {
            "id": "m1",
            "type": "message",
            "content": [{"type": "text", "text": "Hello"}],
        },
    }
    recorder = Recorder([(200, "application/json", json.dumps(bodies[name]).encode())])
    async with make_adapter(name, recorder) as p:
        response = await p.generate(request(name))
    assert response.text == "Hello" and response.usage is UNSET
    assert "usage" not in to_json(response)


async def test_anthropic_streamed_server_tool_blocks_keep_their_input() -> None:
    """Issue 11 §6: streamed and plain mappings of a server tool block agree on its input."""
    block: dict[str, Any] = {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {},
    }
    mcp: dict[str, Any] = {
        "type": "mcp_tool_use",
        "id": "mcptoolu_1",
        "name": "lookup",
        "server_name": "docs",
        "input": {},
    }
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"query":'},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '"sdk docs"}'},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": mcp},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"id": 7}'},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"},
    ]
    plain_body = {
        "id": "msg_1",
        "type": "message",
        "content": [
            {**block, "input": {"query": "sdk docs"}},
            {**mcp, "input": {"id": 7}},
        ],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1},
    }
    recorder = Recorder(
        [
            sse_answer(events),
            (200, "application/json", json.dumps(plain_body).encode()),
        ]
    )
    async with make_adapter("anthropic", recorder) as p:
        streamed = await p.stream(request("anthropic")).final_response()
        plain = await p.generate(request("anthropic"))
    raw_streamed = [item.value for item in streamed.output if isinstance(item, RawItem)]
    raw_plain = [item.value for item in plain.output if isinstance(item, RawItem)]
    assert raw_streamed == raw_plain
    assert raw_streamed[0] == {**block, "input": {"query": "sdk docs"}}
    assert raw_streamed[1] == {**mcp, "input": {"id": 7}}
