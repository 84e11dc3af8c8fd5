"""Issue 13 defect 3: the provider ``timeout`` and the call deadline combine by minimum.

Every adapter, plain and streamed, against a real loopback server that stalls (an answer that
never comes, or a stream that stops sending) or keeps generating slowly. The provider's own
timeout firing is a retryable ``MODEL_CALL_TIMEOUT``; the call's deadline passing is not
retryable. A guard (``asyncio.timeout``) turns a missing timeout into a failure instead of a hang.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from loopback import LoopbackServer, Received, Reply
from providers_support import ADAPTERS, SECRET

from actoviq.core import TextItem
from actoviq.providers import ModelCallContext, ModelCallTimeoutError, ModelRequest, ModelStream
from actoviq.providers._sdk_adapter import SDKModelProvider
from actoviq.providers.anthropic import AnthropicProvider
from actoviq.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider

GUARD = 30.0  # seconds: far above every timeout here; reaching it means no timeout fired

FIRST_EVENT: dict[str, dict[str, Any]] = {
    "openai-responses": {"type": "response.output_text.delta", "delta": "tick", "output_index": 0},
    "openai-chat": {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": "tick"}}],
    },
    "anthropic": {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "tick"},
    },
}


def provider(name: str, url: str, **options: Any) -> SDKModelProvider:
    kwargs: dict[str, Any] = {"api_key": SECRET, "max_retries": 0, **options}
    if name == "openai-responses":
        return OpenAIResponsesProvider(base_url=f"{url}/v1", **kwargs)
    if name == "openai-chat":
        return OpenAIChatProvider(base_url=f"{url}/v1", **kwargs)
    return AnthropicProvider(base_url=url, **kwargs)


def request(name: str) -> ModelRequest:
    return ModelRequest(model=f"{name}:m", input=[TextItem(role="user", text="hi")])


def deadline_in(seconds: float) -> ModelCallContext:
    return ModelCallContext(deadline=time.time() * 1000 + seconds * 1000)


async def deltas(stream: ModelStream, seen: list[str]) -> None:
    """Read ``stream`` to its end, keeping its text deltas in ``seen``."""
    async with stream:
        async for event in stream:
            if event.type == "text.delta":
                seen.append(event.delta)


async def stall(received: Received, reply: Reply) -> None:
    await reply.stall()  # the generation never finishes


async def one_event_then_stall(name: str, reply: Reply) -> None:
    await reply.head(content_type="text/event-stream")
    await reply.event(FIRST_EVENT[name], named=name != "openai-chat")
    await reply.stall()


@pytest.mark.parametrize("name", ADAPTERS)
async def test_plain_call_provider_timeout_wins_over_a_later_deadline(name: str) -> None:
    async with LoopbackServer(stall) as server, provider(name, server.url, timeout=0.3) as p:
        async with asyncio.timeout(GUARD):
            with pytest.raises(ModelCallTimeoutError) as info:
                await p.generate(request(name), deadline_in(120))
    error = info.value
    assert error.code == "MODEL_CALL_TIMEOUT" and error.retryable  # the provider's timeout
    assert server.url in str(error) and "0.3 s" in str(error)
    assert len(server.requests) == 1


@pytest.mark.parametrize("name", ADAPTERS)
async def test_plain_call_deadline_wins_over_a_later_provider_timeout(name: str) -> None:
    async with LoopbackServer(stall) as server, provider(name, server.url, timeout=600) as p:
        async with asyncio.timeout(GUARD):
            with pytest.raises(ModelCallTimeoutError) as info:
                await p.generate(request(name), deadline_in(0.3))
    assert not info.value.retryable  # the call's own deadline passed
    assert "deadline" in str(info.value)


@pytest.mark.parametrize("name", ADAPTERS)
async def test_plain_call_deadline_bounds_the_sdk_retries(name: str) -> None:
    # Each attempt times out after 0.2 s and the SDK would retry 5 times with back-off: the
    # deadline ends the whole call, retries included.
    async with (
        LoopbackServer(stall) as server,
        provider(name, server.url, timeout=0.2, max_retries=5) as p,
    ):
        async with asyncio.timeout(GUARD):
            with pytest.raises(ModelCallTimeoutError) as info:
                await p.generate(request(name), deadline_in(0.9))
    assert not info.value.retryable
    assert 1 <= len(server.requests) < 6


@pytest.mark.parametrize("name", ADAPTERS)
async def test_stream_provider_timeout_fires_between_chunks(name: str) -> None:
    async def script(received: Received, reply: Reply) -> None:
        await one_event_then_stall(name, reply)

    seen: list[str] = []
    async with LoopbackServer(script) as server, provider(name, server.url, timeout=0.3) as p:
        async with asyncio.timeout(GUARD):
            with pytest.raises(ModelCallTimeoutError) as info:
                await deltas(p.stream(request(name), deadline_in(120)), seen)
    assert seen == ["tick"]
    assert info.value.retryable


@pytest.mark.parametrize("name", ADAPTERS)
async def test_stream_deadline_bounds_a_slow_generation(name: str) -> None:
    # The server keeps generating (a chunk every 20 ms, never ending): no read ever waits for
    # the provider's 600 s timeout, so only the call's deadline can end the stream.
    async def script(received: Received, reply: Reply) -> None:
        await reply.head(content_type="text/event-stream")
        while True:
            await reply.event(FIRST_EVENT[name], named=name != "openai-chat")
            await asyncio.sleep(0.02)  # the generation's pace

    seen: list[str] = []
    async with LoopbackServer(script) as server, provider(name, server.url, timeout=600) as p:
        async with asyncio.timeout(GUARD):
            with pytest.raises(ModelCallTimeoutError) as info:
                await deltas(p.stream(request(name), deadline_in(0.8)), seen)
    assert len(seen) >= 1
    assert not info.value.retryable and "deadline" in str(info.value)


@pytest.mark.parametrize("name", ADAPTERS)
async def test_stream_open_deadline_wins_over_a_later_provider_timeout(name: str) -> None:
    async with LoopbackServer(stall) as server, provider(name, server.url, timeout=600) as p:
        async with asyncio.timeout(GUARD):
            with pytest.raises(ModelCallTimeoutError) as info:
                await p.stream(request(name), deadline_in(0.3)).final_response()
    assert not info.value.retryable


@pytest.mark.parametrize("name", ADAPTERS)
async def test_without_deadline_the_provider_timeout_applies(name: str) -> None:
    async with LoopbackServer(stall) as server, provider(name, server.url, timeout=0.3) as p:
        async with asyncio.timeout(GUARD):
            with pytest.raises(ModelCallTimeoutError) as info:
                await p.generate(request(name))
    assert info.value.retryable
