"""A provider built from a ready SDK client scrubs that client's key from its errors (issue 11 §5).

Bug found by the adversarial review of resolved promises: with ``client=`` (a documented way to
bring your own configured SDK client) the adapter knew no secret, so a server or proxy echoing
the credential in its error body put the key in ``ProviderTransportError``'s message, hence in
``run.failed`` and the logs. ``api_key=`` was already covered (test_providers_fixable_errors).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from providers_support import ADAPTERS, SECRET

from actoviq.core import ProviderTransportError, TextItem
from actoviq.providers import ModelRequest
from actoviq.providers.anthropic import AnthropicProvider
from actoviq.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider


def _echo(request: httpx2.Request) -> httpx2.Response:
    header = request.headers.get("authorization") or request.headers.get("x-api-key", "")
    body = {"error": {"message": f"invalid credential {header}", "type": "auth"}}
    return httpx2.Response(401, json=body)


def _provider(name: str, http: httpx2.AsyncClient) -> Any:
    if name == "anthropic":
        client = anthropic.AsyncAnthropic(
            api_key=SECRET, base_url="https://gateway.example", http_client=http, max_retries=0
        )
        return AnthropicProvider(client=client)
    sdk = openai.AsyncOpenAI(
        api_key=SECRET, base_url="https://gateway.example/v1", http_client=http, max_retries=0
    )
    return (OpenAIResponsesProvider if name == "openai-responses" else OpenAIChatProvider)(
        client=sdk
    )


@pytest.mark.parametrize("name", ADAPTERS)
async def test_a_ready_clients_key_never_reaches_the_error(name: str) -> None:
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(_echo)) as http:
        provider = _provider(name, http)
        request = ModelRequest(model=f"{name}:m", input=[TextItem(role="user", text="hi")])
        with pytest.raises(ProviderTransportError) as info:
            await provider.generate(request)
    text = str(info.value) + json.dumps(info.value.to_json()) + repr(info.value)
    assert SECRET not in text
    assert "invalid credential" in text and "***" in text
