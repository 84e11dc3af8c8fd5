"""ModelSettings: validation, merge, wire form, and its place in the agent digest (issue 14 §1)."""

from __future__ import annotations

from typing import Any

import pytest

from actoviq.core import (
    AgentSpec,
    AgentSpecError,
    ModelSettings,
    ReasoningSettings,
    from_json,
    to_json,
)


def test_every_field_round_trips_in_camel_case() -> None:
    settings = ModelSettings(
        temperature=0.3,
        top_p=0.9,
        max_output_tokens=512,
        stop_sequences=["END", "STOP"],
        seed=7,
        reasoning=ReasoningSettings(effort="high", summary="auto", budget_tokens=2048),
        parallel_tool_calls=False,
        tool_choice="required",
        prompt_cache_key="cache-1",
        metadata={"user": "u1"},
        provider_options={"openai-responses": {"service_tier": "flex"}},
    )
    wire = to_json(settings)
    assert wire == {
        "temperature": 0.3,
        "topP": 0.9,
        "maxOutputTokens": 512,
        "stopSequences": ["END", "STOP"],
        "seed": 7,
        "reasoning": {"effort": "high", "summary": "auto", "budgetTokens": 2048},
        "parallelToolCalls": False,
        "toolChoice": "required",
        "promptCacheKey": "cache-1",
        "metadata": {"user": "u1"},
        "providerOptions": {"openai-responses": {"service_tier": "flex"}},
    }
    assert from_json(ModelSettings, wire) == settings
    assert ModelSettings().to_json() == {}
    assert ModelSettings().is_empty and not settings.is_empty


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"temperature": -0.1}, "temperature"),
        ({"temperature": 2.5}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"top_p": 1.5}, "topP"),
        ({"max_output_tokens": 0}, "maxOutputTokens"),
        ({"max_output_tokens": 1.5}, "maxOutputTokens"),
        ({"seed": 2**60}, "seed"),
        ({"seed": "1"}, "seed"),
        ({"stop_sequences": [""]}, "stopSequences"),
        ({"tool_choice": "  "}, "toolChoice"),
        ({"parallel_tool_calls": 1}, "parallelToolCalls"),
        ({"prompt_cache_key": ""}, "promptCacheKey"),
        ({"metadata": {"k": float("inf")}}, "metadata"),
        ({"provider_options": {"openai": "flex"}}, "providerOptions.openai"),
    ],
)
def test_invalid_values_are_typed_errors_naming_the_setting(
    kwargs: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(AgentSpecError, match=f"modelSettings.{fragment}") as caught:
        ModelSettings(**kwargs)
    assert caught.value.code == "AGENT_SPEC_INVALID"


def test_reasoning_values_are_checked() -> None:
    with pytest.raises(AgentSpecError, match=r"reasoning\.effort"):
        ReasoningSettings(effort="extreme")  # type: ignore[arg-type]
    with pytest.raises(AgentSpecError, match=r"reasoning\.budgetTokens"):
        ReasoningSettings(budget_tokens=0)


def test_a_single_stop_string_is_one_sequence() -> None:
    assert ModelSettings(stop_sequences="END").stop_sequences == ("END",)


def test_merged_later_wins_and_nested_values_merge() -> None:
    agent = ModelSettings(
        temperature=0.2,
        seed=1,
        reasoning=ReasoningSettings(effort="low", summary="auto"),
        metadata={"a": "1", "b": "2"},
        provider_options={"p": {"x": 1, "y": 2}, "q": {"z": 3}},
    )
    run = ModelSettings(
        temperature=0.9,
        reasoning=ReasoningSettings(effort="high"),
        metadata={"b": "3"},
        provider_options={"p": {"y": 20}},
    )
    merged = agent.merged(run)
    assert merged.temperature == 0.9
    assert merged.seed == 1
    assert merged.reasoning == ReasoningSettings(effort="high", summary="auto")
    assert merged.metadata == {"a": "1", "b": "3"}
    assert merged.provider_options == {"p": {"x": 1, "y": 20}, "q": {"z": 3}}
    assert agent.merged(None) is agent
    assert agent.merged(ModelSettings()) == agent


def test_settings_are_part_of_the_agent_digest() -> None:
    plain = AgentSpec(id="a", name="A", instructions="x")
    hot = AgentSpec(id="a", name="A", instructions="x", model_settings=ModelSettings(temperature=1))
    cold = AgentSpec(
        id="a", name="A", instructions="x", model_settings=ModelSettings(temperature=0)
    )
    empty = AgentSpec(id="a", name="A", instructions="x", model_settings=ModelSettings())
    assert len({plain.digest(), hot.digest(), cold.digest()}) == 3
    assert empty.digest() == plain.digest()  # unset settings keep earlier digests valid
    assert hot.declaration()["modelSettings"] == {"temperature": 1}
    assert hot != cold


def test_agent_spec_refuses_something_that_is_not_settings() -> None:
    with pytest.raises(AgentSpecError, match="model_settings"):
        AgentSpec(id="a", name="A", instructions="x", model_settings={"temperature": 1})  # type: ignore[arg-type]
