"""Issue 13 defects 1, 2 and 5: request bodies that real servers accept.

Bodies are captured at the transport of the real SDK client (``MockTransport``): no output-token
limit unless the request sets one (Anthropic requires one: the model's maximum from the table,
never above it, 4,096 for an unknown model); ``tool_choice`` and ``parallel_tool_calls`` only with
tools; the ``OpenAICompat`` profile of ``OpenAIChatProvider`` (defaults = the official API, named
presets for llama.cpp, vLLM and Ollama).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from providers_support import ADAPTERS, SECRET, Recorder, json_answer, make_adapter

from actoviq.core import TextItem, ToolCallItem, ToolResultItem
from actoviq.providers import (
    ANTHROPIC_FALLBACK_MAX_TOKENS,
    ANTHROPIC_MAX_OUTPUT_TOKENS,
    ModelReasoningRequest,
    ModelRequest,
    ModelToolDefinition,
    OpenAICompat,
    ProviderConfigurationError,
    ToolChoice,
    anthropic_max_tokens,
)
from actoviq.providers.openai import OpenAIChatProvider

ANSWERS: dict[str, Any] = {
    "openai-responses": {"id": "r", "object": "response", "status": "completed", "output": []},
    "openai-chat": {
        "id": "c",
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "ok"}}],
    },
    "anthropic": {"id": "m", "type": "message", "content": [], "stop_reason": "end_turn"},
}
LIMIT_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
TOOL = ModelToolDefinition(name="lookup", input_schema={"type": "object", "properties": {}})


async def body_for(name: str, request: ModelRequest, **options: Any) -> dict[str, Any]:
    recorder = Recorder([json_answer(ANSWERS[name])])
    async with make_adapter(name, recorder, **options) as provider:
        await provider.generate(request)
    return recorder.bodies()[0]


def text_request(name: str, model: str = "m", **fields: Any) -> ModelRequest:
    return ModelRequest(model=f"{name}:{model}", input=[TextItem(role="user", text="hi")], **fields)


# --- defect 1: output-token limits ------------------------------------------------------------


@pytest.mark.parametrize("name", ["openai-responses", "openai-chat"])
async def test_openai_bodies_carry_no_limit_unless_set(name: str) -> None:
    body = await body_for(name, text_request(name, "gpt-4.1-mini"))
    assert not set(LIMIT_KEYS) & set(body)
    body = await body_for(name, text_request(name, "gpt-4.1-mini", max_output_tokens=321))
    key = "max_output_tokens" if name == "openai-responses" else "max_completion_tokens"
    assert body[key] == 321 and not (set(LIMIT_KEYS) - {key}) & set(body)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-3-5-haiku-latest", 8_192),
        ("claude-3-5-haiku-20241022", 8_192),
        ("claude-3-haiku-20240307", 4_096),
        ("claude-3-7-sonnet-latest", 64_000),
        ("claude-sonnet-4-20250514", 64_000),
        ("claude-sonnet-4-5-20250929", 64_000),
        ("claude-sonnet-4-6", 128_000),
        ("claude-opus-4-1-20250805", 32_000),
        ("claude-opus-4-5", 64_000),
        ("claude-haiku-4-5", 64_000),
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", 8_192),
        ("claude-3-5-haiku@20241022", 8_192),
        ("claude-a-model-nobody-knows", ANTHROPIC_FALLBACK_MAX_TOKENS),
        ("claude-3-5-haikuX", ANTHROPIC_FALLBACK_MAX_TOKENS),  # a prefix only at a boundary
    ],
)
async def test_anthropic_default_is_the_models_maximum(model: str, expected: int) -> None:
    body = await body_for("anthropic", text_request("anthropic", model))
    assert body["max_tokens"] == expected == anthropic_max_tokens(model)


async def test_anthropic_default_never_exceeds_a_known_maximum() -> None:
    for family, maximum in ANTHROPIC_MAX_OUTPUT_TOKENS.items():
        assert anthropic_max_tokens(f"{family}-20990101") <= maximum
        thinking = anthropic_max_tokens(f"{family}-latest", budget_tokens=10**6)
        assert thinking <= maximum


async def test_anthropic_user_limit_and_table_overrides() -> None:
    request = text_request("anthropic", "claude-3-5-haiku-latest", max_output_tokens=77)
    assert (await body_for("anthropic", request))["max_tokens"] == 77
    limits = {"claude-next": 200_000, "*": 2_048}
    request = text_request("anthropic", "claude-next-1")
    body = await body_for("anthropic", request, output_token_limits=limits)
    assert body["max_tokens"] == 200_000
    request = text_request("anthropic", "claude-other")
    assert (await body_for("anthropic", request, output_token_limits=limits))["max_tokens"] == 2048


async def test_anthropic_fallback_leaves_room_for_a_thinking_budget() -> None:
    reasoning = ModelReasoningRequest(budget_tokens=10_000)
    body = await body_for("anthropic", text_request("anthropic", "claude-x", reasoning=reasoning))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 10_000}
    assert body["max_tokens"] > 10_000
    body = await body_for(
        "anthropic", text_request("anthropic", "claude-3-7-sonnet-latest", reasoning=reasoning)
    )
    assert body["max_tokens"] == 64_000


# --- defect 2: tool_choice only with tools ----------------------------------------------------


@pytest.mark.parametrize("name", ADAPTERS)
@pytest.mark.parametrize("policy", ["none", "auto", "required", ToolChoice(name="lookup")])
async def test_tool_choice_and_parallel_only_with_tools(name: str, policy: Any) -> None:
    without = await body_for(
        name, text_request(name, tool_policy=policy, parallel_tool_calls=True, tools=())
    )
    assert "tools" not in without and "tool_choice" not in without
    assert "parallel_tool_calls" not in without
    with_tools = await body_for(
        name, text_request(name, tool_policy=policy, parallel_tool_calls=False, tools=[TOOL])
    )
    assert with_tools["tools"] and "tool_choice" in with_tools


# --- defect 5: the OpenAI-compatible profile ---------------------------------------------------


HISTORY = [
    TextItem(role="user", text="look it up"),
    ToolCallItem(id="call_1", name="lookup", input={"q": "x"}),
    ToolResultItem(call_id="call_1", output="found", status="success"),
]


def history_request(**fields: Any) -> ModelRequest:
    return ModelRequest(model="openai-chat:m", input=HISTORY, tools=[TOOL], **fields)


async def test_chat_defaults_keep_the_official_api_behaviour() -> None:
    body = await body_for("openai-chat", history_request(max_output_tokens=10))
    assistant = body["messages"][1]
    assert assistant["role"] == "assistant" and assistant["content"] is None
    assert body["max_completion_tokens"] == 10 and "max_tokens" not in body


@pytest.mark.parametrize(
    ("compat", "content", "field"),
    [
        ("openai", None, "max_completion_tokens"),
        ("llama.cpp", "", "max_tokens"),
        ("llama-cpp", "", "max_tokens"),
        ("vllm", None, "max_tokens"),
        ("ollama", "", "max_tokens"),
        (OpenAICompat(assistant_tool_content="empty"), "", "max_completion_tokens"),
        (OpenAICompat(max_tokens_field="max_tokens"), None, "max_tokens"),
    ],
)
async def test_chat_compat_profiles(compat: Any, content: str | None, field: str) -> None:
    body = await body_for("openai-chat", history_request(max_output_tokens=10), compat=compat)
    assert body["messages"][1]["content"] == content
    assert body["messages"][1]["tool_calls"][0]["id"] == "call_1"
    assert body[field] == 10
    assert not ({"max_tokens", "max_completion_tokens"} - {field}) & set(body)


async def test_chat_compat_stream_usage_request() -> None:
    events: list[dict[str, Any]] = [
        {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}}]},
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        },
    ]
    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    for compat, expected in (
        (None, {"include_usage": True}),
        (OpenAICompat(stream_usage=False), None),
    ):
        recorder = Recorder([(200, "text/event-stream", text.encode())])
        async with make_adapter("openai-chat", recorder, compat=compat) as provider:
            await provider.stream(text_request("openai-chat")).final_response()
        assert recorder.bodies()[0].get("stream_options") == expected


def test_compat_presets_and_errors() -> None:
    assert OpenAICompat.llama_cpp() == OpenAICompat.preset("llama.cpp")
    assert OpenAICompat.vllm().name == "vllm" and OpenAICompat.ollama().name == "ollama"
    assert OpenAICompat() == OpenAICompat(
        assistant_tool_content="null", max_tokens_field="max_completion_tokens", stream_usage=True
    )
    with pytest.raises(ProviderConfigurationError, match=r"llama\.cpp"):
        OpenAICompat.preset("lmstudio-9000")
    with pytest.raises(ValueError, match="assistant_tool_content"):
        OpenAICompat(assistant_tool_content="omit")  # type: ignore[arg-type]
    provider = OpenAIChatProvider(api_key=SECRET, compat="ollama")
    assert provider.compat == OpenAICompat.ollama()
