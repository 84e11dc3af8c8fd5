"""Legacy bridges (02 §4, test rows §5.9 78-82) and the known lossy cases (§4.4)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

import pytest
from providers_support import Recorder, json_answer, make_adapter, sse_answer

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
    ModelResponse,
    ModelToolDefinition,
    ResolvedModel,
    StreamConsumedError,
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
    core_usage_to_legacy,
    from_legacy_request,
    legacy_usage_to_core,
    normalize_legacy_effort,
    to_legacy_message,
    to_legacy_request,
)
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn

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


def legacy_request(**kwargs: Any) -> ModelRequest:
    return ModelRequest(
        model="legacy:legacy-model", input=[TextItem(role="user", text="hello")], **kwargs
    )


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


async def test_adapter_create_message_row_81() -> None:
    answer = {
        "id": "resp_legacy_adapter",
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "provider ok"}],
            }
        ],
        "usage": {"input_tokens": 4, "output_tokens": 2, "total_tokens": 6},
    }
    recorder = Recorder([json_answer(answer)])
    async with make_adapter("openai-responses", recorder) as provider:
        adapter = ModelProviderLegacyAdapter(provider)
        message = await adapter.create_message(
            {
                "model": "test-model",
                "messages": [{"role": "user", "content": "legacy hello"}],
                "max_tokens": 128,
            }
        )
    assert {k: v for k, v in message.items() if k not in ("usage", "stop_sequence")} == {
        "id": "resp_legacy_adapter",
        "type": "message",
        "role": "assistant",
        "model": "test-model",
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "provider ok"}],
    }
    assert message.get("usage") == {
        "input_tokens": 4,
        "output_tokens": 2,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    assert len(recorder.requests) == 1 and b"legacy hello" in recorder.requests[0].content
    assert recorder.bodies()[0]["max_output_tokens"] == 128


async def test_adapter_stream_message_row_82() -> None:
    completed = {
        "id": "resp_s",
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "provider ok"}],
            }
        ],
        "usage": {"input_tokens": 4, "output_tokens": 2, "total_tokens": 6},
    }
    recorder = Recorder(
        [
            sse_answer(
                [
                    {"type": "response.output_text.delta", "delta": "provider ", "output_index": 0},
                    {"type": "response.output_text.delta", "delta": "ok", "output_index": 0},
                    {"type": "response.completed", "response": completed},
                ]
            )
        ]
    )
    async with make_adapter("openai-responses", recorder) as provider:
        adapter = ModelProviderLegacyAdapter(provider)
        handle = adapter.stream_message(
            {
                "model": "test-model",
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 8,
            }
        )
        async with handle:
            events = [event async for event in handle]
            final = await handle.final_message()
    types = [e["type"] for e in events]
    assert types == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[0]["message"]["id"] == "msg_stream"  # lossy case 6: placeholder id and model
    assert events[0]["message"]["model"] == "unknown"
    assert final["content"] == [{"type": "text", "text": "provider ok"}]
    assert final["id"] == "resp_s"
    assert events[-2] == {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": final.get("usage"),
    }


async def test_adapter_stream_translation_blocks_and_single_consumer() -> None:
    provider = ScriptedProvider(
        [
            ScriptedTurn(
                reasoning="think",
                text="ab",
                stream_deltas=["a", "b"],
                tool_calls=[
                    ToolCallItem(id="c1", name="one", input={}),
                    ToolCallItem(id="c2", name="two", input={"x": 1}),
                ],
                usage={"inputTokens": 7, "outputTokens": 1, "cacheReadTokens": 5},
            )
        ]
    )
    adapter = ModelProviderLegacyAdapter(provider)
    handle = adapter.stream_message(
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 8}
    )
    events = [event async for event in handle]
    with pytest.raises(StreamConsumedError, match="single-consumer"):
        handle.__aiter__()
    starts = [
        (e["index"], e["content_block"]["type"])
        for e in events
        if e["type"] == "content_block_start"
    ]
    assert starts == [(0, "thinking"), (1, "text"), (2, "tool_use"), (3, "tool_use")]
    stops = [e["index"] for e in events if e["type"] == "content_block_stop"]
    assert stops == [0, 1, 2, 3]
    json_deltas = [
        e
        for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
    ]
    # c1's arguments are "{}" (non-empty), both calls stream their JSON.
    assert [(e["index"], e["delta"]["partial_json"]) for e in json_deltas] == [
        (2, "{}"),
        (3, '{"x":1}'),
    ]
    usage_deltas = [e for e in events if e["type"] == "message_delta" and e["delta"] == {}]
    assert usage_deltas[0]["usage"]["input_tokens"] == 2  # 7 canonical minus 5 cached
    final = await handle.final_message()
    assert final["stop_reason"] == "tool_use"
    assert [b["type"] for b in final["content"]] == [
        "scripted_reasoning",  # lossy case 8: the opaque object goes in verbatim
        "text",
        "tool_use",
        "tool_use",
    ]


async def test_adapter_final_message_drains_and_errors_propagate() -> None:
    adapter = ModelProviderLegacyAdapter(ScriptedProvider(["drained"]))
    request: LegacyModelRequest = {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}],
        "max_tokens": 8,
    }
    final = await adapter.stream_message(request).final_message()
    assert final["content"] == [{"type": "text", "text": "drained"}]
    failing = ModelProviderLegacyAdapter(ScriptedProvider([ProviderResponseError("down")]))
    handle = failing.stream_message(request)
    with pytest.raises(ProviderResponseError, match="down"):
        _ = [event async for event in handle]
    with pytest.raises(ProviderResponseError, match="down"):
        await handle.final_message()
    with pytest.raises(ProviderResponseError, match="down"):
        await ModelProviderLegacyAdapter(
            ScriptedProvider([ProviderResponseError("down")])
        ).create_message(request)


async def test_adapter_stream_stopped_early_settles() -> None:
    adapter = ModelProviderLegacyAdapter(
        ScriptedProvider([ScriptedTurn(text="ab", stream_deltas=["a", "b"])])
    )
    handle = adapter.stream_message(
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 8}
    )
    async with handle:
        async for _event in handle:
            break
    with pytest.raises(Exception, match="stopped early"):
        await handle.final_message()


def test_from_legacy_request_full_mapping_and_lossy_case_2() -> None:
    request: LegacyModelRequest = {
        "model": "gpt",
        "system": "sys",
        "max_tokens": 64,
        "temperature": 0.1,
        "top_p": 0.9,
        "context_management": {"edits": []},
        "extra_tool_schemas": [{"x": 1}],
        "stop_sequences": ["END"],
        "metadata": {"user_id": "u"},
        "effort": "max",
        "tools": [
            {
                "name": "lookup",
                "input_schema": {"type": "object"},
                "description": "d",
                "strict": False,
            }
        ],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "messages": [
            {"role": "user", "content": "plain"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "t"},
                    {"type": "image", "source": {"type": "url", "url": "https://x/i.png"}},
                    {"type": "image", "source": {"type": "file", "file_id": "f"}},
                    {"type": "image", "source": {"type": "base64", "data": "AAA"}},
                    {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"q": 1}},
                    {"type": "thinking", "thinking": "why", "signature": "s"},
                    {"type": "redacted_thinking", "data": "BLOB"},
                    {"type": "document", "source": {"type": "text", "data": "doc"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "c1",
                        "content": [{"type": "text", "text": "r"}],
                    },
                    {"type": "tool_result", "tool_use_id": "c2", "is_error": True},
                ],
            },
        ],
    }
    converted = from_legacy_request(request, "openai-responses")
    assert to_json(converted.model) == {"provider": "openai-responses", "model": "gpt"}
    assert [to_json(i) for i in converted.input] == [
        {"type": "text", "role": "system", "text": "sys"},
        {"type": "text", "role": "user", "text": "plain"},
        {"type": "text", "role": "assistant", "text": "t"},
        {"type": "image", "role": "assistant", "source": {"kind": "url", "url": "https://x/i.png"}},
        {"type": "image", "role": "assistant", "source": {"kind": "file", "fileId": "f"}},
        {
            "type": "image",
            "role": "assistant",
            "source": {"kind": "base64", "mediaType": "image/png", "data": "AAA"},
        },
        {"type": "tool_call", "id": "c1", "name": "lookup", "input": {"q": 1}},
        {
            "type": "reasoning",
            "provider": "openai-responses",
            "summary": "why",
            "opaque": {"type": "thinking", "thinking": "why", "signature": "s"},
        },
        {
            "type": "raw",
            "provider": "openai-responses",
            "value": {"type": "redacted_thinking", "data": "BLOB"},
        },
        {
            "type": "raw",
            "provider": "openai-responses",
            "value": {"type": "document", "source": {"type": "text", "data": "doc"}},
        },
        {
            "type": "tool_result",
            "callId": "c1",
            "status": "success",
            "output": [{"type": "text", "text": "r"}],
        },
        {"type": "tool_result", "callId": "c2", "status": "error", "output": ""},
    ]
    assert converted.tool_policy == "required" and converted.parallel_tool_calls is False
    assert converted.tools is not None and converted.tools[0].strict is False
    assert (converted.max_output_tokens, converted.temperature) == (64, 0.1)
    assert converted.stop_sequences == ("END",) and converted.metadata == {"user_id": "u"}
    assert converted.reasoning == ModelReasoningRequest(effort="max")
    # Lossy case 7 (coming in): top_p, context_management, extra_tool_schemas are dropped.
    assert "0.9" not in json.dumps(to_json(converted)) and "edits" not in json.dumps(
        to_json(converted)
    )
    choices = [
        ({"type": "tool", "name": "lookup"}, ToolChoice(name="lookup")),
        ({"type": "none"}, "none"),
        ({"type": "auto"}, "auto"),
        ({"type": "whatever"}, "auto"),
    ]
    for choice, expected in choices:
        legacy: LegacyModelRequest = {
            "model": "m",
            "messages": [],
            "max_tokens": 1,
            "tool_choice": cast(Any, choice),
        }
        assert from_legacy_request(legacy, "p").tool_policy == expected
        assert from_legacy_request(legacy, "p").parallel_tool_calls is None


def _response(*output: Any, finish: Any = "stop", usage: Usage | None = None) -> ModelResponse:
    model = ResolvedModel(provider_id="p", model_id="m", ref=to_json_ref())
    return ModelResponse(
        id="r", model=model, output=list(output), finish_reason=finish, usage=usage or Usage()
    )


def to_json_ref() -> Any:
    from actoviq.core import ModelRefParts

    return ModelRefParts(provider="p", model="m")


def test_lossy_case_3_to_legacy_message_drops_and_structured_visibility() -> None:
    from actoviq.core import AudioItem, HandoffResultItem

    message = to_legacy_message(
        _response(
            TextItem(role="assistant", text="hi"),
            ImageItem(source=UrlSource(url="https://x")),
            AudioItem(source=Base64Source(media_type="audio/wav", data="AA")),
            DocumentItem(source=UrlSource(url="https://d")),
            ToolResultItem(call_id="c", status="success", output=1),
            HandoffResultItem(call_id="h", target_agent_id="a", status="success", output=None),
            ErrorItem(source="model", code="E", message="m", retryable=False),
            RawItem(provider="p", value=[1]),
            RawItem(provider="p", value={"type": "custom"}),
            RefusalItem(message="nope"),
            StructuredItem(value={"hidden": True}),
            ReasoningItem(
                provider="openai-responses", opaque={"type": "reasoning", "encrypted_content": "E"}
            ),
            ReasoningItem(provider="p", opaque=None, summary="short"),
        )
    )
    assert message["content"] == [
        {"type": "text", "text": "hi"},
        {"type": "custom"},
        {"type": "text", "text": "nope"},
        {"type": "reasoning", "encrypted_content": "E"},  # lossy case 8: verbatim vendor opaque
        {"type": "thinking", "thinking": "short"},
    ]
    only_structured = to_legacy_message(_response(StructuredItem(value={"a": 1})))
    assert only_structured["content"] == [{"type": "text", "text": '{"a":1}'}]


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("tool_calls", "tool_use"),
        ("length", "max_tokens"),
        ("stop", "end_turn"),
        ("content_filter", "content_filter"),
        ("refusal", "refusal"),
        ("cancelled", "cancelled"),
        ("error", "error"),
        ("unknown", "unknown"),
    ],
)
def test_lossy_case_5_stop_reasons(finish: str, stop: str) -> None:
    message = to_legacy_message(_response(finish=finish))
    assert message["stop_reason"] == stop and message.get("stop_sequence") is None


def test_lossy_case_4_usage_round_trip_no_longer_double_counts_cache() -> None:
    usage = Usage(
        requests=1,
        input_tokens=100,
        output_tokens=20,
        total_tokens=120,
        cache_read_tokens=60,
        cache_write_tokens=15,
        reasoning_tokens=7,
        audio_input_tokens=3,
    )
    legacy = core_usage_to_legacy(usage)
    assert legacy == {
        "input_tokens": 25,
        "output_tokens": 20,
        "cache_read_input_tokens": 60,
        "cache_creation_input_tokens": 15,
    }
    back = legacy_usage_to_core(legacy)
    assert (back.input_tokens, back.output_tokens, back.total_tokens) == (100, 20, 120)
    assert (back.cache_read_tokens, back.cache_write_tokens) == (60, 15)
    assert (back.reasoning_tokens, back.audio_input_tokens) == (0, 0)  # lost going to legacy
    message = to_legacy_message(_response(usage=usage))
    assert legacy_usage_to_core(message.get("usage")).input_tokens == 100


async def test_legacy_round_trip_through_both_bridges_keeps_usage() -> None:
    inner = ScriptedProvider(
        [
            ScriptedTurn(
                text="x",
                usage={
                    "inputTokens": 50,
                    "outputTokens": 5,
                    "totalTokens": 55,
                    "cacheReadTokens": 40,
                },
            )
        ]
    )
    outer = LegacyModelApiProvider(model_api=ModelProviderLegacyAdapter(inner))
    response = await outer.generate(legacy_request())
    assert (
        response.usage.input_tokens,
        response.usage.cache_read_tokens,
        response.usage.total_tokens,
    ) == (50, 40, 55)
    assert response.text == "x"
