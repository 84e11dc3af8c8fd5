"""Each model setting reaches each adapter's request body (issue 14 §1).

The real SDK clients run on an httpx2 ``MockTransport`` that records the body the runtime's model
call produced; a setting the adapter's model cannot take is refused before the transport is used.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from actoviq.core import AgentSpec, CapabilityError, ModelSettings, ReasoningSettings
from actoviq.providers import ModelRegistry
from actoviq.providers.anthropic import AnthropicProvider
from actoviq.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider
from actoviq.runtime import AgentRuntime, tool

KEY = "sk-test-0123456789"

ANSWERS: dict[str, dict[str, Any]] = {
    "openai-responses": {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
        ],
        "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
    },
    "openai-chat": {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    },
    "anthropic": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
}


@tool(effect="read")
def lookup(term: str) -> str:
    """Look a term up."""
    return term


class Recorder:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=self.answer)


def provider(adapter: str, recorder: Recorder) -> Any:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(recorder))
    if adapter == "openai-responses":
        return OpenAIResponsesProvider(api_key=KEY, http_client=client, max_retries=0)
    if adapter == "openai-chat":
        return OpenAIChatProvider(api_key=KEY, http_client=client, max_retries=0)
    return AnthropicProvider(api_key=KEY, http_client=client, max_retries=0)


CASES: dict[str, tuple[ModelSettings, dict[str, Any]]] = {
    "openai-responses": (
        ModelSettings(
            temperature=0.2,
            top_p=0.9,
            max_output_tokens=300,
            reasoning=ReasoningSettings(effort="low", summary="auto"),
            parallel_tool_calls=False,
            tool_choice="lookup",
            prompt_cache_key="cache-1",
            metadata={"user": "u"},
            provider_options={"openai-responses": {"service_tier": "flex"}},
        ),
        {
            "temperature": 0.2,
            "top_p": 0.9,
            "max_output_tokens": 300,
            "reasoning": {"effort": "low", "summary": "auto"},
            "parallel_tool_calls": False,
            "tool_choice": {"type": "function", "name": "lookup"},
            "prompt_cache_key": "cache-1",
            "metadata": {"user": "u"},
            "service_tier": "flex",
        },
    ),
    "openai-chat": (
        ModelSettings(
            temperature=0.2,
            top_p=0.9,
            max_output_tokens=300,
            stop_sequences=["END"],
            seed=7,
            parallel_tool_calls=False,
            tool_choice="required",
            metadata={"user": "u"},
            provider_options={"openai-chat": {"service_tier": "flex"}},
        ),
        {
            "temperature": 0.2,
            "top_p": 0.9,
            "max_completion_tokens": 300,
            "stop": ["END"],
            "seed": 7,
            "parallel_tool_calls": False,
            "tool_choice": "required",
            "metadata": {"user": "u"},
            "service_tier": "flex",
        },
    ),
    "anthropic": (
        ModelSettings(
            temperature=1.0,
            top_p=0.9,
            max_output_tokens=4096,
            stop_sequences=["END"],
            reasoning=ReasoningSettings(budget_tokens=1024),
            parallel_tool_calls=False,
            tool_choice="lookup",
            metadata={"user_id": "u"},
            provider_options={"anthropic": {"top_k": 5}},
        ),
        {
            "temperature": 1.0,
            "top_p": 0.9,
            "max_tokens": 4096,
            "stop_sequences": ["END"],
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "tool_choice": {"type": "tool", "name": "lookup", "disable_parallel_tool_use": True},
            "metadata": {"user_id": "u"},
            "top_k": 5,
        },
    ),
}


@pytest.mark.parametrize("adapter", sorted(CASES))
async def test_every_setting_reaches_the_request_body(adapter: str) -> None:
    settings, expected = CASES[adapter]
    recorder = Recorder(ANSWERS[adapter])
    agent = AgentSpec(
        id="tuned",
        name="Tuned",
        instructions="Be brief.",
        model=f"{adapter}:m",
        tools=("lookup",),
        model_settings=settings,
    )
    async with AgentRuntime(
        models=ModelRegistry([provider(adapter, recorder)]), tools=[lookup]
    ) as rt:
        result = await rt.run(agent, "hi")
    assert result.output == "ok"
    (body,) = recorder.bodies
    for key, value in expected.items():
        assert body.get(key) == value, f"{adapter}: {key} = {body.get(key)!r}, expected {value!r}"


async def test_run_settings_override_the_agents_in_the_body() -> None:
    recorder = Recorder(ANSWERS["openai-chat"])
    agent = AgentSpec(
        id="a",
        name="A",
        instructions="x",
        model="openai-chat:m",
        model_settings=ModelSettings(temperature=0.1, seed=1),
    )
    async with AgentRuntime(models=ModelRegistry([provider("openai-chat", recorder)])) as rt:
        await rt.run(agent, "hi", model_settings=ModelSettings(seed=2))
    (body,) = recorder.bodies
    assert (body["temperature"], body["seed"]) == (0.1, 2)
    assert "tool_choice" not in body  # no tools: no tool settings


@pytest.mark.parametrize(
    ("adapter", "settings", "capability"),
    [
        ("openai-responses", ModelSettings(seed=1), "seed"),
        ("openai-responses", ModelSettings(stop_sequences=["END"]), "stopSequences"),
        ("anthropic", ModelSettings(seed=1), "seed"),
        ("openai-chat", ModelSettings(reasoning=ReasoningSettings(effort="low")), "reasoning"),
        ("openai-chat", ModelSettings(prompt_cache_key="k"), "promptCaching"),
    ],
)
async def test_a_setting_the_model_cannot_take_never_reaches_the_network(
    adapter: str, settings: ModelSettings, capability: str
) -> None:
    recorder = Recorder(ANSWERS[adapter])
    agent = AgentSpec(
        id="a", name="A", instructions="x", model=f"{adapter}:m", model_settings=settings
    )
    async with AgentRuntime(models=ModelRegistry([provider(adapter, recorder)])) as rt:
        with pytest.raises(CapabilityError) as caught:
            await rt.run(agent, "hi")
    assert capability in str(caught.value)
    assert recorder.bodies == []
