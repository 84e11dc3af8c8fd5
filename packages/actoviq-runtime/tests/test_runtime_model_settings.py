"""Model settings on the agent and per run reach every model request (issue 14 §1)."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_testkit import RecordingCheckpointStore, scripted_runtime

from actoviq.core import (
    AgentSpec,
    CapabilityError,
    ModelSettings,
    ReasoningSettings,
    RunError,
    ToolCallItem,
)
from actoviq.providers import (
    ALL_CAPABILITIES,
    ModelReasoningRequest,
    ToolChoice,
    merge_capabilities,
)
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import InterruptionDecision, tool


@tool(effect="read")
def lookup(term: str) -> str:
    """Look a term up."""
    return term.upper()


@tool(effect="side-effect", requires_approval=True)
def send(to: str) -> str:
    """Send."""
    return f"sent to {to}"


def agent(settings: ModelSettings | None = None, *tools: str) -> AgentSpec[Any, str]:
    return AgentSpec(
        id="tuned",
        name="Tuned",
        instructions="x",
        model="scripted:m",
        tools=tools,
        model_settings=settings,
    )


async def test_agent_settings_reach_the_request() -> None:
    settings = ModelSettings(
        temperature=0.1,
        max_output_tokens=300,
        stop_sequences=["END"],
        reasoning=ReasoningSettings(effort="low", budget_tokens=1024),
        prompt_cache_key="k",
        metadata={"user": "u"},
        provider_options={"scripted": {"x": 1}},
    )
    provider = ScriptedProvider(["ok"])
    async with scripted_runtime(provider) as runtime:
        await runtime.run(agent(settings), "hi")
    request = provider.requests[0]
    assert request.temperature == 0.1
    assert request.max_output_tokens == 300
    assert request.stop_sequences == ("END",)
    assert request.reasoning == ModelReasoningRequest(effort="low", budget_tokens=1024)
    assert request.prompt_cache_key == "k"
    assert request.metadata == {"user": "u"}
    assert request.provider_options == {"scripted": {"x": 1}}
    assert request.tool_policy == "none"  # no tools: no tool settings
    assert request.parallel_tool_calls is None


async def test_run_settings_merge_over_the_agents() -> None:
    provider = ScriptedProvider(["a", "b"])
    base = agent(ModelSettings(temperature=0.1, max_output_tokens=100))
    async with scripted_runtime(provider) as runtime:
        await runtime.run(base, "hi", model_settings=ModelSettings(temperature=0.9))
        async with runtime.stream(base, "hi") as handle:
            await handle.result()
    first, second = provider.requests
    assert (first.temperature, first.max_output_tokens) == (0.9, 100)
    assert (second.temperature, second.max_output_tokens) == (0.1, 100)  # per run only


async def test_tool_choice_forces_the_first_call_then_reverts_to_auto() -> None:
    provider = ScriptedProvider(
        [
            ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="lookup", input={"term": "x"})]),
            "done",
        ]
    )
    settings = ModelSettings(tool_choice="lookup", parallel_tool_calls=False)
    async with scripted_runtime(provider, tools=[lookup]) as runtime:
        await runtime.run(agent(settings, "lookup"), "hi")
    first, second = provider.requests
    assert first.tool_policy == ToolChoice(name="lookup")
    assert second.tool_policy == "auto"  # forcing again would loop forever
    assert first.parallel_tool_calls is False
    assert second.parallel_tool_calls is False


async def test_unknown_tool_choice_is_a_typed_error_before_the_model() -> None:
    provider = ScriptedProvider(["never"])
    async with scripted_runtime(provider, tools=[lookup]) as runtime:
        with pytest.raises(RunError) as caught:
            await runtime.run(agent(ModelSettings(tool_choice="nope"), "lookup"), "hi")
    assert caught.value.code == "MODEL_SETTINGS_INVALID"
    assert provider.requests == []


async def test_a_setting_the_model_cannot_take_fails_before_the_network() -> None:
    no_stop = merge_capabilities(ALL_CAPABILITIES, {"stop_sequences": False})
    provider = ScriptedProvider(["never"], capabilities=no_stop)
    async with scripted_runtime(provider) as runtime:
        with pytest.raises(CapabilityError) as caught:
            await runtime.run(agent(ModelSettings(stop_sequences=["END"])), "hi")
    assert "stopSequences" in str(caught.value)
    assert provider.calls == []  # refused in preflight, nothing sent


async def test_run_settings_persist_across_resume_and_resume_can_override() -> None:
    store = RecordingCheckpointStore()
    provider = ScriptedProvider(
        [
            ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="send", input={"to": "ops"})]),
            "sent",
        ]
    )
    tuned = agent(ModelSettings(temperature=0.5), "send")
    async with scripted_runtime(provider, tools=[send], checkpoint_store=store) as runtime:
        first = await runtime.run(
            tuned, "send", model_settings=ModelSettings(seed=None, max_output_tokens=50)
        )
        assert first.status == "interrupted"
        assert first.state is not None
        assert first.state["modelSettings"] == {"maxOutputTokens": 50}
        handle = runtime.resume(
            first.state,
            [InterruptionDecision.approve(first.interruptions[0].id)],
            model_settings=ModelSettings(temperature=0.0),
        )
        result = await handle.result()
    assert result.status == "completed"
    resumed = provider.requests[1]
    assert resumed.max_output_tokens == 50
    assert resumed.temperature == 0.0


async def test_model_settings_must_be_model_settings() -> None:
    provider = ScriptedProvider(["x"])
    async with scripted_runtime(provider) as runtime:
        with pytest.raises(RunError) as caught:
            await runtime.run(agent(), "hi", model_settings={"temperature": 1})  # type: ignore[typeddict-item]
    assert caught.value.code == "RUN_OPTION_INVALID"
