"""Transport behaviour through the official SDKs (02 §5.7 as D4 applies it), on a MockTransport.

The SDKs own retries and timeouts; these tests pin what is observable: which statuses are retried
and how often (requests counted at the transport), error classification with ``retryable``,
timeouts as ``MODEL_CALL_TIMEOUT``, and no retry once a stream has produced events. Retries wait
what ``retry-after-ms`` says, and the mock sends ``1`` (ms) so no test waits noticeably.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import pytest
from providers_support import ADAPTERS, SECRET

from actoviq.core import ProviderTransportError, TextItem
from actoviq.providers import ModelCallTimeoutError, ModelRequest
from actoviq.providers._sdk_adapter import SDKModelProvider
from actoviq.providers.anthropic import AnthropicProvider
from actoviq.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider

OK: dict[str, Any] = {
    "openai-responses": {
        "id": "resp_ok",
        "object": "response",
        "status": "completed",
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "ok"}]}],
    },
    "openai-chat": {
        "id": "chat_ok",
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "ok"}}],
    },
    "anthropic": {"id": "msg_ok", "type": "message", "content": [{"type": "text", "text": "ok"}]},
}
NO_WAIT = {"retry-after-ms": "1"}  # the SDKs treat 0 as "unset" and back off 0.5 s
Handler = Callable[[httpx2.Request], httpx2.Response]


class Script:
    """Answers requests from a list of handlers (the last one repeats) and counts them."""

    def __init__(self, *answers: Handler) -> None:
        self.answers = list(answers)
        self.count = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        answer = self.answers[min(self.count, len(self.answers) - 1)]
        self.count += 1
        return answer(request)


def status(code: int, headers: dict[str, str] | None = None) -> Handler:
    body = json.dumps({"error": {"message": f"status {code}", "type": "api_error"}}).encode()
    return lambda _: httpx2.Response(
        code, content=body, headers={"content-type": "application/json", **(headers or {})}
    )


def ok(name: str) -> Handler:
    body = json.dumps(OK[name]).encode()
    return lambda _: httpx2.Response(
        200, content=body, headers={"content-type": "application/json"}
    )


def raises(error: Exception) -> Handler:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise error

    return handler


def adapter(name: str, script: Script, *, max_retries: int) -> SDKModelProvider:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(script))
    kwargs: dict[str, Any] = {"api_key": SECRET, "http_client": client, "max_retries": max_retries}
    if name == "openai-responses":
        return OpenAIResponsesProvider(**kwargs)
    if name == "openai-chat":
        return OpenAIChatProvider(**kwargs)
    return AnthropicProvider(**kwargs)


def request(name: str) -> ModelRequest:
    return ModelRequest(model=f"{name}:m", input=[TextItem(role="user", text="hi")])


@pytest.mark.parametrize("name", ADAPTERS)
async def test_503_is_retried_then_succeeds_row_51(name: str) -> None:
    script = Script(status(503, NO_WAIT), ok(name))
    async with adapter(name, script, max_retries=1) as provider:
        response = await provider.generate(request(name))
    assert response.text == "ok" and script.count == 2


@pytest.mark.parametrize("name", ADAPTERS)
async def test_retries_stop_at_max_retries(name: str) -> None:
    script = Script(status(500, NO_WAIT))
    async with adapter(name, script, max_retries=2) as provider:
        with pytest.raises(ProviderTransportError) as info:
            await provider.generate(request(name))
    assert script.count == 3  # the first attempt plus two retries
    assert info.value.status == 500 and info.value.retryable


@pytest.mark.parametrize("name", ADAPTERS)
@pytest.mark.parametrize("code", [400, 401, 403, 404, 422])
async def test_client_errors_are_not_retried_row_52(name: str, code: int) -> None:
    script = Script(status(code, NO_WAIT), ok(name))
    async with adapter(name, script, max_retries=3) as provider:
        with pytest.raises(ProviderTransportError) as info:
            await provider.generate(request(name))
    assert script.count == 1
    error = info.value
    assert (error.code, error.status, error.retryable) == ("PROVIDER_TRANSPORT_ERROR", code, False)
    assert f"status {code}" in str(error)  # the provider's own message (row 61)
    assert SECRET not in str(error.to_json())


@pytest.mark.parametrize("name", ADAPTERS)
@pytest.mark.parametrize("code", [408, 409, 429, 500, 502, 503, 529])
async def test_retryable_statuses_row_60(name: str, code: int) -> None:
    script = Script(status(code, NO_WAIT))
    async with adapter(name, script, max_retries=0) as provider:
        with pytest.raises(ProviderTransportError) as info:
            await provider.generate(request(name))
    assert script.count == 1
    assert (info.value.status, info.value.retryable) == (code, True)
    script = Script(status(code, NO_WAIT), ok(name))
    async with adapter(name, script, max_retries=1) as provider:
        assert (await provider.generate(request(name))).text == "ok"
    assert script.count == 2  # and the SDK retries exactly these statuses


@pytest.mark.parametrize("name", ADAPTERS)
async def test_server_says_do_not_retry(name: str) -> None:
    script = Script(status(503, {"x-should-retry": "false"}), ok(name))
    async with adapter(name, script, max_retries=2) as provider:
        with pytest.raises(ProviderTransportError) as info:
            await provider.generate(request(name))
    assert script.count == 1 and info.value.retryable  # classified by status, not by the header


@pytest.mark.parametrize("name", ADAPTERS)
async def test_timeouts_are_model_call_timeouts(name: str) -> None:
    script = Script(raises(httpx2.ReadTimeout("slow")))
    async with adapter(name, script, max_retries=0) as provider:
        with pytest.raises(ModelCallTimeoutError) as info:
            await provider.generate(request(name))
    assert script.count == 1
    assert info.value.code == "MODEL_CALL_TIMEOUT" and info.value.retryable
    assert isinstance(info.value.__cause__, Exception)


@pytest.mark.parametrize("name", ADAPTERS)
async def test_connection_errors_are_retryable_transport_errors_row_63(name: str) -> None:
    script = Script(raises(httpx2.ConnectError("refused")))
    async with adapter(name, script, max_retries=0) as provider:
        with pytest.raises(ProviderTransportError) as info:
            await provider.generate(request(name))
    assert script.count == 1 and info.value.retryable and info.value.status is None


@pytest.mark.parametrize("name", ADAPTERS)
async def test_stream_status_errors_are_retried_before_any_event(name: str) -> None:
    script = Script(status(429, NO_WAIT), status(503, NO_WAIT))
    async with adapter(name, script, max_retries=1) as provider:
        with pytest.raises(ProviderTransportError) as info:
            await provider.stream(request(name)).final_response()
    assert script.count == 2 and info.value.status == 503


class _BrokenBody(httpx2.AsyncByteStream):
    """An SSE body that yields one event and then fails mid-stream."""

    def __init__(self, first: bytes) -> None:
        self.first = first

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.first
        raise httpx2.ReadError("connection reset mid-stream")

    async def aclose(self) -> None:
        return None


FIRST_EVENT = {
    "openai-responses": {"type": "response.output_text.delta", "delta": "par", "output_index": 0},
    "openai-chat": {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": "par"}}],
    },
    "anthropic": {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "par"},
    },
}


@pytest.mark.parametrize("name", ADAPTERS)
async def test_no_retry_once_a_stream_produced_events(name: str) -> None:
    event = FIRST_EVENT[name]
    named = f"event: {event['type']}\n" if "type" in event else ""
    first = f"{named}data: {json.dumps(event)}\n\n".encode()

    def broken(_: httpx2.Request) -> httpx2.Response:
        headers = {"content-type": "text/event-stream"}
        return httpx2.Response(200, stream=_BrokenBody(first), headers=headers)

    script = Script(broken)
    seen: list[str] = []
    async with adapter(name, script, max_retries=3) as provider:
        stream = provider.stream(request(name))

        async def consume() -> None:
            async for event in stream:
                if event.type == "text.delta":
                    seen.append(event.delta)

        with pytest.raises(ProviderTransportError) as info:
            await consume()
        with pytest.raises(ProviderTransportError):
            await stream.final_response()
    assert seen == ["par"] and script.count == 1
    assert info.value.retryable and info.value.status is None
