"""Legacy bridges, provider → old ``ModelApi`` direction (02 §4.3, rows §5.9 81-82).

Also the lossy cases 2-5 (§4.4) and the round trip through both bridges.
"""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from providers_support import (
    Recorder,
    json_answer,
    legacy_request,
    make_adapter,
    resolved_model,
    sse_answer,
)

from actoviq.core import (
    Base64Source,
    DocumentItem,
    ErrorItem,
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
    ModelReasoningRequest,
    ModelResponse,
    StreamConsumedError,
    ToolChoice,
)
from actoviq.providers.legacy import (
    LegacyModelApiProvider,
    LegacyModelRequest,
    ModelProviderLegacyAdapter,
    core_usage_to_legacy,
    from_legacy_request,
    legacy_usage_to_core,
    to_legacy_message,
)
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn


def _completed_response(response_id: str) -> dict[str, Any]:
    """A completed Responses API response saying "provider ok"."""
    return {
        "id": response_id,
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


async def test_adapter_create_message_row_81() -> None:
    answer = _completed_response("resp_legacy_adapter")
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
    completed = _completed_response("resp_s")
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
    return ModelResponse(
        id="r",
        model=resolved_model("p", "m"),
        output=list(output),
        finish_reason=finish,
        usage=usage or Usage(),
    )


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
    assert isinstance(response.usage, Usage)
    assert (
        response.usage.input_tokens,
        response.usage.cache_read_tokens,
        response.usage.total_tokens,
    ) == (50, 40, 55)
    assert response.text == "x"
