"""Models from the environment: the registry a program gets without choosing providers itself.

``models_from_environment()`` (and ``AgentRuntime()`` without ``models=``) registers OpenAI's
Responses adapter when ``OPENAI_API_KEY`` is set and Anthropic's when ``ANTHROPIC_API_KEY`` is, and
takes the default model from ``ACTOVIQ_MODEL`` (``"provider:model"``), else
:data:`DEFAULT_OPENAI_MODEL` or :data:`DEFAULT_ANTHROPIC_MODEL`. The SDK adapters are imported
only here, when needed (their extras must be installed).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from actoviq.core import ModelRegistryError
from actoviq.providers.protocol import ModelProvider
from actoviq.providers.registry import ModelRegistry

__all__ = ["DEFAULT_ANTHROPIC_MODEL", "DEFAULT_OPENAI_MODEL", "models_from_environment"]

DEFAULT_OPENAI_MODEL: Final = "openai-responses:gpt-4.1-mini"
"""The model an OpenAI key selects when none is named (`models_from_environment`)."""
DEFAULT_ANTHROPIC_MODEL: Final = "anthropic:claude-3-5-haiku-latest"
"""The model an Anthropic key selects when none is named (`models_from_environment`)."""


def models_from_environment(environ: Mapping[str, str] | None = None) -> ModelRegistry:
    """A registry of the providers whose API keys are set (see the module docstring).

    Args:
        environ: the variables to read (default ``os.environ``).

    Raises:
        ModelRegistryError: ``MODELS_NOT_CONFIGURED`` when no key is set; the message names the
            variables and the offline alternative.
    """
    env = os.environ if environ is None else environ
    providers: list[ModelProvider] = []
    default: str | None = None
    if env.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        providers.append(OpenAIResponsesProvider(api_key=env["OPENAI_API_KEY"]))
        default = DEFAULT_OPENAI_MODEL
    if env.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        providers.append(AnthropicProvider(api_key=env["ANTHROPIC_API_KEY"]))
        default = default or DEFAULT_ANTHROPIC_MODEL
    if not providers:
        raise ModelRegistryError(
            "No model provider is configured: set OPENAI_API_KEY (pip install "
            '"actoviq-providers[openai]") or ANTHROPIC_API_KEY ("actoviq-providers[anthropic]"), '
            "or pass models=ModelRegistry([...]) (offline: "
            "actoviq.providers.testing.ScriptedProvider).",
            code="MODELS_NOT_CONFIGURED",
        )
    return ModelRegistry(providers, default_model=env.get("ACTOVIQ_MODEL") or default)
