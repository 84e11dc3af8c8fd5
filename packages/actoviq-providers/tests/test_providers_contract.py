"""Contract suite over the three SDK adapters (02 §5.3, §5.8, §5.11) plus golden vectors."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from providers_support import (
    ADAPTERS,
    SECRET,
    Recorder,
    json_answer,
    make_adapter,
    sse_answer,
)

from actoviq.core import (
    UNSET,
    AudioItem,
    Base64Source,
    CapabilityError,
    HandoffCallItem,
    ProviderResponseError,
    ProviderTransportError,
    ReasoningItem,
    TextItem,
    UnsupportedItemError,
    Usage,
    from_json,
    to_json,
)
from actoviq.providers import (
    ModelCapabilities,
    ModelRequest,
    ModelStreamEvent,
    ProviderOptionsError,
    ProviderStreamError,
    ResolvedModel,
    ResponseCompleted,
    ToolCallDelta,
    merge_capabilities,
)
from actoviq.providers.mapping import MappingOptions, anthropic, openai_responses

TEXT_ANSWERS: dict[str, Any] = {
    "openai-responses": {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "hello"}],
            }
        ],
        "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
    },
    "openai-chat": {
        "id": "chatcmpl_1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "hello"},
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    },
    "anthropic": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "hello"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 4},
    },
}


def req(provider: str, **kwargs: Any) -> ModelRequest:
    return ModelRequest(
        model=f"{provider}:test-model", input=[TextItem(role="user", text="hello")], **kwargs
    )


@pytest.mark.parametrize("name", ADAPTERS)
async def test_generate_text_usage_and_no_secret_leak(name: str) -> None:
    recorder = Recorder([json_answer(TEXT_ANSWERS[name])])
    async with make_adapter(name, recorder) as adapter:
        response = await adapter.generate(req(name))
        assert response.text == "hello"
        assert isinstance(response.usage, Usage)
        assert (
            response.usage.requests,
            response.usage.input_tokens,
            response.usage.total_tokens,
        ) == (1, 3, 7)
        assert response.raw_response is UNSET
        assert len(recorder.requests) == 1
        assert recorder.bodies()[0]["model"] == "test-model"
        assert SECRET not in repr(adapter) and SECRET not in json.dumps(to_json(response))


@pytest.mark.parametrize("name", ADAPTERS)
async def test_include_raw_response_opt_in(name: str) -> None:
    recorder = Recorder([json_answer(TEXT_ANSWERS[name])])
    async with make_adapter(name, recorder, include_raw_response=True) as adapter:
        response = await adapter.generate(req(name))
    assert cast(dict[str, Any], response.raw_response)["id"] == TEXT_ANSWERS[name]["id"]


@pytest.mark.parametrize("name", ADAPTERS)
async def test_http_errors_are_typed_with_retryable_and_no_secret(name: str) -> None:
    recorder = Recorder([json_answer({"error": {"message": "busy"}}, status=503)])
    async with make_adapter(name, recorder) as adapter:
        with pytest.raises(ProviderTransportError) as info:
            await adapter.generate(req(name))
    assert info.value.status == 503 and info.value.retryable
    assert "busy" in str(info.value)
    assert SECRET not in str(info.value.to_json()) and SECRET not in repr(info.value)


@pytest.mark.parametrize("name", ADAPTERS)
async def test_preflight_and_unsupported_items_before_network(name: str) -> None:
    recorder = Recorder([json_answer(TEXT_ANSWERS[name])])
    no_stream = merge_capabilities(ModelCapabilities(), {"streaming": False})
    async with make_adapter(name, recorder, capabilities=no_stream) as adapter:
        stream = adapter.stream(req(name))
        with pytest.raises(CapabilityError) as info:
            await stream.final_response()
        assert "streaming" in info.value.capabilities
    async with make_adapter(name, recorder) as adapter:
        audio = AudioItem(source=Base64Source(media_type="audio/wav", data="AA=="))
        for item in (audio, HandoffCallItem(id="h", target_agent_id="a", input=None)):
            with pytest.raises(CapabilityError):
                await adapter.generate(ModelRequest(model=f"{name}:m", input=[item]))
        with pytest.raises(UnsupportedItemError):
            adapter.build_body(
                ModelRequest(
                    model=f"{name}:m",
                    input=[HandoffCallItem(id="h", target_agent_id="a", input=None)],
                ),
                "m",
                stream=False,
            )
        foreign = ReasoningItem(provider="someone-else", opaque={"type": "reasoning"})
        with pytest.raises(CapabilityError, match="Reasoning item"):
            await adapter.generate(ModelRequest(model=f"{name}:m", input=[foreign]))
        with pytest.raises(ProviderOptionsError):
            await adapter.generate(req(name, provider_options={name: {"model": "must-not-win"}}))
    assert recorder.requests == []


STREAMS: dict[str, Any] = {
    "openai-responses": sse_answer(
        [
            {"type": "response.output_text.delta", "delta": "hel", "output_index": 0},
            {"type": "response.output_text.delta", "delta": "lo", "output_index": 0},
            {"type": "response.completed", "response": TEXT_ANSWERS["openai-responses"]},
        ]
    ),
    "openai-chat": sse_answer(
        [
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": "hel"}}],
            },
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
            },
        ],
        named=False,
        done=True,
    ),
    "anthropic": sse_answer(
        [
            {"type": "message_start", "message": {"id": "msg_s", "usage": {"input_tokens": 3}}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "hel"},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "lo"},
            },
            {
                "type": "message_delta",
                "delta": {"stop_reason": "stop_sequence"},
                "usage": {"output_tokens": 4},
            },
            {"type": "message_stop"},
        ]
    ),
}


@pytest.mark.parametrize("name", ADAPTERS)
async def test_stream_text_and_provider_events_opt_in(name: str) -> None:
    for emit in (False, True):
        recorder = Recorder([STREAMS[name]])
        adapter = make_adapter(name, recorder, emit_provider_events=emit)
        async with adapter, adapter.stream(req(name)) as stream:
            events = [event async for event in stream]
            final = await stream.final_response()
        assert "".join(e.delta for e in events if e.type == "text.delta") == "hello"
        assert final.text == "hello" and final.finish_reason == "stop"  # S4 for Anthropic
        assert isinstance(final.usage, Usage) and final.usage.total_tokens == 7
        assert any(e.type == "provider.event" for e in events) is emit
        assert recorder.bodies()[0]["stream"] is True


@pytest.mark.parametrize("name", ADAPTERS)
async def test_break_out_of_stream_closes_http_response(name: str) -> None:  # S10
    recorder = Recorder([STREAMS[name]])
    async with make_adapter(name, recorder) as adapter:
        async with adapter.stream(req(name)) as stream:
            async for _event in stream:
                break
        assert stream.signal.aborted
        with pytest.raises(Exception, match="stopped early"):
            await stream.final_response()


@pytest.mark.parametrize(
    ("name", "event"),
    [
        ("openai-responses", {"type": "error", "code": "server_error", "message": "boom"}),
        ("anthropic", {"type": "error", "error": {"type": "overloaded_error", "message": "boom"}}),
    ],
)
async def test_stream_error_event_raises(name: str, event: dict[str, Any]) -> None:  # S6
    recorder = Recorder([sse_answer([event])])
    async with make_adapter(name, recorder) as adapter:
        with pytest.raises(ProviderResponseError, match="boom") as info:
            await adapter.stream(req(name)).final_response()
    assert info.value.retryable


def _model(provider: str) -> ResolvedModel:
    return from_json(
        ResolvedModel,
        {
            "providerId": provider,
            "modelId": "test-model",
            "ref": {"provider": provider, "model": "test-model"},
        },
    )


def test_anthropic_stream_fixes() -> None:  # S2, S3, S5-style pre-seed fix
    mapper = anthropic.AnthropicStreamMapper(
        _model("anthropic"), req("anthropic"), MappingOptions(provider_id="anthropic")
    )
    events: list[dict[str, Any]] = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "now", "input": {}},
        },
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "redacted_thinking", "data": "BLOB"},
        },
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "t2", "name": "x", "input": {"seed": 1}},
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": '{"a":1}'},
        },
        {"type": "message_stop"},  # D10: the terminal event (without it, finalize raises)
    ]
    for event in events:
        mapper.map(event)
    final = mapper.finalize()
    first, redacted, second = final.output
    assert to_json(first)["input"] == {}
    assert cast(dict[str, Any], to_json(redacted)["opaque"])["data"] == "BLOB"
    assert to_json(second)["input"] == {"a": 1}


def test_responses_stream_uses_call_id_and_does_not_duplicate() -> None:  # S5
    mapper = openai_responses.ResponsesStreamMapper(
        _model("openai-responses"),
        req("openai-responses"),
        MappingOptions(provider_id="openai-responses"),
    )
    deltas: list[ModelStreamEvent] = []
    for event in [
        {
            "type": "response.output_item.added",
            "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup"},
        },
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"q":'},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "1}"},
        {
            "type": "response.output_item.done",
            "item": {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "lookup",
                "arguments": '{"q":1}',
            },
        },
    ]:
        deltas.extend(mapper.map(event))
    assert {(d.call_id, d.name) for d in deltas if isinstance(d, ToolCallDelta)} == {
        ("call_1", "lookup")
    }
    # D10: no fallback response is assembled from the deltas: without a terminal event the
    # stream is an error (the call is never duplicated because it is never built twice).
    with pytest.raises(ProviderStreamError) as info:
        mapper.finalize()
    assert not info.value.retryable
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup"}
    done = mapper.map(
        {
            "type": "response.completed",
            "response": {"id": "r", "status": "completed", "output": [{**item, "arguments": "{}"}]},
        }
    )
    final = [e.response for e in done if isinstance(e, ResponseCompleted)]
    calls = [i for i in final[0].output if i.type == "tool_call"]
    assert [to_json(c)["id"] for c in calls] == ["call_1"]
