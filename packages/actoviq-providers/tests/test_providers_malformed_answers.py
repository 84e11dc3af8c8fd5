"""A server (or proxy) answering 200 with bytes that are not JSON gets a typed error (review).

Before: the SDK's ``JSONDecodeError``, ``UnicodeDecodeError`` or ``RecursionError`` escaped the
adapter untyped, so the runtime could not classify the failure and hosts saw a bare traceback.
"""

from __future__ import annotations

import json

import httpx2
import pytest
from providers_support import ADAPTERS, SECRET, make_adapter

from actoviq.core import ProviderResponseError, TextItem
from actoviq.providers import ModelRequest

DEEP = b"[" * 100_000 + b"]" * 100_000  # past every Python's C recursion limit (3.13: 10,000)
BODIES = {
    "garbage": b"{not json",
    "empty": b"",
    "invalid-utf8": b'{"id": "\xff"}',
    "too-deep": b'{"id": ' + DEEP + b"}",
}
EVENTS = {
    "garbage": b"data: {not json\n\n",
    "invalid-utf8": b'data: {"type": "\xff"}\n\n',
    "too-deep": b"data: " + DEEP + b"\n\n",
}


def _request(name: str) -> ModelRequest:
    return ModelRequest(model=f"{name}:m", input=[TextItem(role="user", text="hi")])


def _answering(content_type: str, body: bytes) -> tuple[list[httpx2.Request], object]:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=body, headers={"content-type": content_type})

    return seen, handler


def _check(error: ProviderResponseError, name: str) -> None:
    assert error.code == ProviderResponseError.default_code
    assert not error.retryable  # the server answered: the request may have been processed
    assert "not valid JSON" in error.message
    assert name in error.message
    text = str(error) + json.dumps(error.to_json(), default=str) + repr(error)
    assert SECRET not in text


@pytest.mark.parametrize("case", sorted(BODIES))
@pytest.mark.parametrize("name", ADAPTERS)
async def test_a_malformed_json_answer_is_a_typed_response_error(name: str, case: str) -> None:
    seen, handler = _answering("application/json", BODIES[case])
    provider = make_adapter(name, handler)  # type: ignore[arg-type]
    with pytest.raises(ProviderResponseError) as caught:
        await provider.generate(_request(name))
    _check(caught.value, name)
    assert len(seen) == 1


@pytest.mark.parametrize("case", sorted(EVENTS))
@pytest.mark.parametrize("name", ADAPTERS)
async def test_a_malformed_stream_event_is_a_typed_response_error(name: str, case: str) -> None:
    # Anthropic's SDK reads only named events; the OpenAI SDKs read unnamed ones.
    prefix = b"event: message_start\n" if name == "anthropic" else b""
    _, handler = _answering("text/event-stream", prefix + EVENTS[case])
    provider = make_adapter(name, handler)  # type: ignore[arg-type]
    with pytest.raises(ProviderResponseError) as caught:
        async for _ in provider.stream(_request(name)):
            pass
    _check(caught.value, name)
