"""Models from the environment: the providers whose API keys are set (issue 14 newcomer path)."""

from __future__ import annotations

import pytest

from actoviq.core import ModelRegistryError
from actoviq.providers import (
    DEFAULT_ANTHROPIC_MODEL,
    DEFAULT_OPENAI_MODEL,
    models_from_environment,
)


def test_no_key_is_a_typed_error_that_names_the_fix() -> None:
    with pytest.raises(ModelRegistryError) as caught:
        models_from_environment({})
    assert caught.value.code == "MODELS_NOT_CONFIGURED"
    message = str(caught.value)
    assert "OPENAI_API_KEY" in message
    assert "ANTHROPIC_API_KEY" in message
    assert "ScriptedProvider" in message


def test_openai_key_registers_responses_with_a_default_model() -> None:
    registry = models_from_environment({"OPENAI_API_KEY": "sk-test-0123456789"})
    assert [provider.id for provider in registry.list()] == ["openai-responses"]
    assert registry.default_model == DEFAULT_OPENAI_MODEL


def test_both_keys_and_a_chosen_model() -> None:
    registry = models_from_environment(
        {
            "OPENAI_API_KEY": "sk-test-0123456789",
            "ANTHROPIC_API_KEY": "sk-ant-test-0123456789",
            "ACTOVIQ_MODEL": "anthropic:claude-x",
        }
    )
    assert sorted(provider.id for provider in registry.list()) == [
        "anthropic",
        "openai-responses",
    ]
    assert registry.default_model == "anthropic:claude-x"
    only_anthropic = models_from_environment({"ANTHROPIC_API_KEY": "sk-ant-test-0123456789"})
    assert only_anthropic.default_model == DEFAULT_ANTHROPIC_MODEL
