"""Legacy bridges, old ``ModelApi`` → provider direction (02 §4.2, rows §5.9 78-80), lossy case 1.

The other direction and lossy cases 2-5 are in ``test_providers_legacy_adapter.py``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

import pytest
from providers_support import legacy_request

from actoviq.core import (
    AbortController,
    ArtifactRefItem,
    Base64Source,
    CapabilityError,
    DocumentItem,
    ErrorItem,
    FileSource,
    HandoffCallItem,
    ImageItem,
    ProviderResponseError,
    RawItem,
    ReasoningItem,
    RefusalItem,
    StructuredItem,
    TextItem,
    ToolCallItem,
    ToolResultItem,
    UrlSource,
    Usage,
    to_json,
)
from actoviq.providers import (
    ModelCallContext,
    ModelOutputSchema,
    ModelReasoningRequest,
    ModelRequest,
    ModelToolDefinition,
    ToolChoice,
)
from actoviq.providers.legacy import (
    LegacyModelApiProvider,
    LegacyModelRequest,
    Message,
    MessageStreamEvent,
    ModelApi,
    ModelProviderLegacyAdapter,
    ModelStreamHandle,
    normalize_legacy_effort,
    to_legacy_request,
)
from actoviq.providers.testing import ScriptedProvider

LEGACY_MESSAGE: Message = {
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


class FakeHandle:
    def __init__(self, events: Sequence[MessageStreamEvent], final: Message) -> None:
        self.events = list(events)
        self.final = final

    async def _iterate(self) -> AsyncIterator[MessageStreamEvent]:
        for event in self.events:
            yield event

    def __aiter__(self) -> AsyncIterator[MessageStreamEvent]:
        return self._iterate()

    async def final_message(self) -> Message:
        return self.final


class FakeLegacyApi:
    def __init__(self, message: Message = LEGACY_MESSAGE) -> None:
        self.message = message
        self.requests: list[LegacyModelRequest] = []

    async def create_message(self, request: LegacyModelRequest) -> Message:
        self.requests.append(request)
        return self.message

    def stream_message(self, request: LegacyModelRequest) -> ModelStreamHandle:
        self.requests.append(request)
        events: list[MessageStreamEvent] = [
            {"type": "message_start", "message": {"id": "msg_legacy"}},
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "legacy "},
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "ok"},
            },
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": "{}"},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "hmm"},
            },
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 3},
            },
        ]
        return FakeHandle(events, self.message)


def test_fakes_satisfy_the_legacy_protocols() -> None:
    assert isinstance(FakeLegacyApi(), ModelApi)
    assert isinstance(FakeHandle([], LEGACY_MESSAGE), ModelStreamHandle)
    assert isinstance(ModelProviderLegacyAdapter(ScriptedProvider()), ModelApi)


async def test_legacy_provider_generate_row_78() -> None:
    api = FakeLegacyApi()
    provider = LegacyModelApiProvider(model_api=api)
    tool = ModelToolDefinition(name="lookup", input_schema={"type": "object"}, description="d")
    response = await provider.generate(
        legacy_request(
            tools=[tool],
            max_output_tokens=256,
            reasoning=ModelReasoningRequest(effort="high"),
        )
    )
    sent = api.requests[0]
    assert {k: sent[k] for k in ("model", "max_tokens", "messages")} == {
        "model": "legacy-model",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
    }
    assert sent.get("effort") == "high"
    assert sent.get("tools") == [
        {"name": "lookup", "input_schema": {"type": "object"}, "description": "d"}
    ]
    assert "signal" not in sent
    assert response.text == "legacy ok"
    calls = [i for i in response.output if isinstance(i, ToolCallItem)]
    assert [(c.id, c.name, c.input) for c in calls] == [("tool_1", "lookup", {"q": "x"})]
    reasoning = [i for i in response.output if isinstance(i, ReasoningItem)]
    assert [(r.provider, r.summary) for r in reasoning] == [("legacy", "hmm")]
    assert reasoning[0].opaque == {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    assert response.finish_reason == "tool_calls" and response.id == "msg_legacy"
    usage = response.usage
    assert isinstance(usage, Usage)
    assert (usage.requests, usage.input_tokens, usage.output_tokens, usage.total_tokens) == (
        1,
        2,
        3,
        5,
    )


async def test_legacy_provider_stream_row_79() -> None:
    api = FakeLegacyApi()
    provider = LegacyModelApiProvider(model_api=api)
    async with provider.stream(legacy_request()) as stream:
        events = [event async for event in stream]
        final = await stream.final_response()
    text = "".join(e.delta for e in events if e.type == "text.delta")
    assert text == "legacy ok"
    assert final.id == "msg_legacy" and final.finish_reason == "tool_calls"
    tool_deltas = [e for e in events if e.type == "tool_call.delta"]
    assert [(e.call_id, e.name, e.arguments_delta) for e in tool_deltas] == [
        ("legacy_tool_2", None, "{}")
    ]
    assert [e.delta for e in events if e.type == "reasoning.delta"] == ["hmm"]
    usage_events = [e for e in events if e.type == "usage"]
    assert [e.usage.output_tokens for e in usage_events] == [3]
    assert events[-1].type == "response.completed"
    assert not any(e.type == "provider.event" for e in events)  # D4: opt-in only


async def test_legacy_provider_stream_provider_events_are_opt_in() -> None:
    provider = LegacyModelApiProvider(model_api=FakeLegacyApi(), emit_provider_events=True)
    events = [event async for event in provider.stream(legacy_request())]
    provider_events = [e for e in events if e.type == "provider.event"]
    assert [cast(dict[str, Any], e.event)["type"] for e in provider_events] == ["message_start"]


async def test_legacy_stream_without_final_message_raises() -> None:
    class NoFinal(FakeLegacyApi):
        def stream_message(self, request: LegacyModelRequest) -> ModelStreamHandle:
            return cast(ModelStreamHandle, _EmptyHandle())

    class _EmptyHandle:
        def __aiter__(self) -> AsyncIterator[MessageStreamEvent]:
            return FakeHandle([], LEGACY_MESSAGE).__aiter__()

        async def final_message(self) -> Message:
            raise ProviderResponseError("Legacy ModelApi stream ended without a final message.")

    provider = LegacyModelApiProvider(model_api=NoFinal())
    with pytest.raises(ProviderResponseError, match="without a final message"):
        await provider.stream(legacy_request()).final_response()


async def test_legacy_provider_preflight_before_legacy_call_row_80() -> None:
    api = FakeLegacyApi()
    provider = LegacyModelApiProvider(model_api=api)
    schema = ModelOutputSchema(name="answer", schema={"type": "object"})
    with pytest.raises(CapabilityError) as info:
        await provider.generate(legacy_request(output_schema=schema))
    assert info.value.code == "CAPABILITY_ERROR"
    with pytest.raises(CapabilityError):
        await provider.stream(legacy_request(output_schema=schema)).final_response()
    with pytest.raises(CapabilityError):
        await provider.generate(legacy_request(prompt_cache_key="k"))
    assert api.requests == []


async def test_legacy_provider_passes_the_signal_and_raw_response() -> None:
    api = FakeLegacyApi()
    provider = LegacyModelApiProvider(model_api=api, include_raw_response=True)
    controller = AbortController()
    response = await provider.generate(legacy_request(), ModelCallContext(signal=controller.signal))
    assert api.requests[0].get("signal") is controller.signal
    assert cast(dict[str, Any], response.raw_response)["id"] == "msg_legacy"


def test_to_legacy_request_full_mapping() -> None:
    request = ModelRequest(
        model="legacy:m",
        input=[
            TextItem(role="system", text="be brief"),
            TextItem(role="system", text="be kind"),
            TextItem(role="assistant", text="earlier"),
            ImageItem(source=UrlSource(url="https://x/img.png")),
            ImageItem(source=FileSource(file_id="file_1")),
            ImageItem(source=Base64Source(media_type="image/gif", data="R0lG")),
            ToolCallItem(id="c1", name="lookup", input={"q": 1}),
            ToolResultItem(call_id="c1", status="error", output={"bad": True}),
            ToolResultItem(call_id="c2", status="success", output="plain"),
            ReasoningItem(provider="legacy", opaque="plain thought", summary=None),
            StructuredItem(value={"a": 1}),
            RawItem(provider="legacy", value={"type": "server_tool_use", "id": "s"}),
            RawItem(provider="legacy", value=3),
        ],
        tools=[ModelToolDefinition(name="lookup", strict=True, hosted=False)],
        tool_policy=ToolChoice(name="lookup"),
        parallel_tool_calls=False,
        temperature=0.5,
        metadata={"user_id": "u"},
        stop_sequences=["END"],
        reasoning=ModelReasoningRequest(effort="xhigh", summary="auto", budget_tokens=9),
        prompt_cache_key="dropped",
    )
    legacy = to_legacy_request(request, "m")
    assert legacy.get("system") == "be brief\n\nbe kind"
    assert [m["role"] for m in legacy["messages"]] == [
        "assistant",
        "user",
        "user",
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
        "assistant",
        "user",
        "user",
    ]
    blocks = [cast(Sequence[Any], m["content"])[0] for m in legacy["messages"]]
    assert blocks == [
        {"type": "text", "text": "earlier"},
        {"type": "image", "source": {"type": "url", "url": "https://x/img.png"}},
        {"type": "image", "source": {"type": "file", "file_id": "file_1"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lG"}},
        {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"q": 1}},
        {"type": "tool_result", "tool_use_id": "c1", "content": '{"bad":true}', "is_error": True},
        {"type": "tool_result", "tool_use_id": "c2", "content": "plain", "is_error": False},
        {"type": "thinking", "thinking": "plain thought"},
        {"type": "text", "text": '{"a":1}'},
        {"type": "server_tool_use", "id": "s"},
        {"type": "text", "text": "3"},
    ]
    assert legacy.get("max_tokens") == 4096
    assert legacy.get("tool_choice") == {
        "type": "tool",
        "name": "lookup",
        "disable_parallel_tool_use": True,
    }
    assert legacy.get("tools") == [{"name": "lookup", "input_schema": {}, "strict": True}]
    assert (legacy.get("temperature"), legacy.get("metadata"), legacy.get("stop_sequences")) == (
        0.5,
        {"user_id": "u"},
        ["END"],
    )
    assert legacy.get("effort") == "high"
    # Lossy case 7 (going out): cache key, summary/budget and provider options are dropped.
    assert "dropped" not in json.dumps({k: v for k, v in legacy.items() if k != "signal"})
    for policy, expected in [("required", "any"), ("none", "none"), ("auto", "auto")]:
        choice = to_legacy_request(legacy_request(tool_policy=policy), "m").get("tool_choice")
        assert choice == {"type": expected}


@pytest.mark.parametrize(
    ("effort", "expected"),
    [
        ("none", "low"),
        ("minimal", "low"),
        ("low", "low"),
        ("medium", "medium"),
        ("high", "high"),
        ("xhigh", "high"),
        ("max", "max"),
    ],
)
def test_legacy_effort_normalisation(effort: str, expected: str) -> None:
    assert normalize_legacy_effort(effort) == expected


def test_lossy_case_1_unmapped_items_become_json_text() -> None:
    items = [
        DocumentItem(source=UrlSource(url="https://x/doc.pdf"), name="doc"),
        ArtifactRefItem(artifact_id="art_1"),
        HandoffCallItem(id="h", target_agent_id="agent", input={"x": 1}),
        RefusalItem(message="no"),
        ErrorItem(source="tool", code="E", message="boom", retryable=False),
    ]
    legacy = to_legacy_request(ModelRequest(model="legacy:m", input=items), "m")
    for item, message in zip(items, legacy["messages"], strict=True):
        block = cast(Sequence[Any], message["content"])[0]
        assert block["type"] == "text"
        assert json.loads(block["text"]) == to_json(item)
