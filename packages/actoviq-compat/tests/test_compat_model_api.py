"""The ModelApi protocol and the legacy bridges through ``actoviq.compat`` (§7.10 rows 105-108)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from compat_support import SECRET, FakeModelApi, Transport, responses_body, responses_provider

from actoviq.compat import LegacyModelApiProvider, ModelApi, ModelProviderLegacyAdapter
from actoviq.core import CapabilityError, ReasoningItem, TextItem, ToolCallItem
from actoviq.providers import (
    ModelOutputSchema,
    ModelReasoningRequest,
    ModelRequest,
    ModelToolDefinition,
    TextDelta,
)
from actoviq.providers import legacy as providers_legacy
from actoviq.providers.legacy import Message
from actoviq.providers.openai import OpenAIResponsesProvider

LEGACY: Message = {
    "id": "msg_legacy",
    "type": "message",
    "role": "assistant",
    "model": "legacy-model",
    "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "legacy ok"},
        {"type": "tool_use", "id": "tool_1", "name": "lookup", "input": {"q": "x"}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 2, "output_tokens": 3},
}


def _request(**extra: Any) -> ModelRequest:
    return ModelRequest(
        model="legacy:legacy-model", input=[TextItem(role="user", text="hello")], **extra
    )


def test_the_reexports_are_the_providers_classes() -> None:
    assert issubclass(LegacyModelApiProvider, providers_legacy.LegacyModelApiProvider)
    assert issubclass(ModelProviderLegacyAdapter, providers_legacy.ModelProviderLegacyAdapter)
    assert ModelApi is providers_legacy.ModelApi
    assert isinstance(FakeModelApi(LEGACY), ModelApi)


async def test_row_105_generate_sends_the_legacy_request_and_maps_back() -> None:
    api = FakeModelApi(LEGACY)
    provider = LegacyModelApiProvider(model_api=api)
    response = await provider.generate(
        _request(
            max_output_tokens=256,
            tools=[ModelToolDefinition(name="lookup", input_schema={"type": "object"})],
            reasoning=ModelReasoningRequest(effort="high"),
        )
    )
    (sent,) = api.requests
    assert {key: sent[key] for key in ("model", "max_tokens", "messages")} == {
        "model": "legacy-model",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
    }
    kinds = {type(item) for item in response.output}
    assert kinds == {ReasoningItem, TextItem, ToolCallItem}
    assert [i.text for i in response.output if isinstance(i, TextItem)] == ["legacy ok"]
    call = next(i for i in response.output if isinstance(i, ToolCallItem))
    assert (call.id, call.name) == ("tool_1", "lookup")
    reasoning = next(i for i in response.output if isinstance(i, ReasoningItem))
    assert reasoning.provider == "legacy"
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (2, 3, 5)  # type: ignore[union-attr]


async def test_row_105_the_model_api_may_be_given_positionally_with_a_bare_model_id() -> None:
    api = FakeModelApi(LEGACY)
    provider = LegacyModelApiProvider(api)  # the 0.x constructor took the client first
    response = await provider.generate(
        ModelRequest(
            model="legacy-model",
            input=[TextItem(role="user", text="hello")],
            max_output_tokens=256,
        )
    )
    (sent,) = api.requests
    assert (sent["model"], sent["max_tokens"]) == ("legacy-model", 256)
    assert [i.text for i in response.output if isinstance(i, TextItem)] == ["legacy ok"]


async def test_row_106_stream_concatenates_text_and_finishes_with_tool_calls() -> None:
    provider = LegacyModelApiProvider(model_api=FakeModelApi(LEGACY))
    stream = provider.stream(_request())
    text = ""
    async with stream:
        async for event in stream:
            if isinstance(event, TextDelta):
                text += event.delta
        final = await stream.final_response()
    assert text == "legacy ok"
    assert (final.id, final.finish_reason) == ("msg_legacy", "tool_calls")


async def test_row_107_structured_output_is_refused_before_the_legacy_api() -> None:
    api = FakeModelApi(LEGACY)
    provider = LegacyModelApiProvider(model_api=api)
    schema = ModelOutputSchema(name="answer", schema={"type": "object"})
    with pytest.raises(CapabilityError) as caught:
        await provider.generate(_request(output_schema=schema))
    assert caught.value.code == "CAPABILITY_ERROR"
    assert api.requests == []


async def test_row_108_create_message_answers_an_anthropic_message() -> None:
    transport = Transport(responses_body("provider ok", "resp_legacy_adapter"))
    adapter = ModelProviderLegacyAdapter(responses_provider(transport))
    message = await adapter.create_message(
        {
            "model": "test-model",
            "messages": [{"role": "user", "content": "legacy hello"}],
            "max_tokens": 128,
        }
    )
    assert message["stop_reason"] == "end_turn"
    assert message["content"] == [{"type": "text", "text": "provider ok"}]
    assert (message["id"], message["model"]) == ("resp_legacy_adapter", "test-model")
    assert len(transport.requests) == 1
    assert b"legacy hello" in transport.requests[0].content


async def test_row_108_stream_message_ends_with_message_stop() -> None:
    completed = responses_body("provider ok", "resp_s")
    events = [
        {"type": "response.output_text.delta", "delta": "provider ", "output_index": 0},
        {"type": "response.output_text.delta", "delta": "ok", "output_index": 0},
        {"type": "response.completed", "response": completed},
    ]
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    provider = OpenAIResponsesProvider(api_key=SECRET, http_client=client, max_retries=0)
    handle = ModelProviderLegacyAdapter(provider).stream_message(
        {"model": "test-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    )
    async with handle:
        seen = [event async for event in handle]
        final = await handle.final_message()
    types = [event["type"] for event in seen]
    assert "content_block_delta" in types
    assert types[-1] == "message_stop"
    assert final["content"] == [{"type": "text", "text": "provider ok"}]
