"""Shared setup for the examples: pick a real provider when an API key is set, else scripted.

``ACTOVIQ_OFFLINE=1`` forces the scripted provider (that is what ``make test`` runs).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import attrs

from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, TurnLike

__all__ = ["Models", "choose_models"]


@attrs.frozen(kw_only=True)
class Models:
    """The registry to use, the model reference for agents, and whether it is scripted."""

    registry: ModelRegistry
    model: str
    offline: bool
    label: str


def choose_models(script: Sequence[TurnLike]) -> Models:
    """OpenAI with ``OPENAI_API_KEY``, else Anthropic with ``ANTHROPIC_API_KEY``, else scripted."""
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        model = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        return Models(
            registry=ModelRegistry([OpenAIResponsesProvider()]),
            model=f"openai-responses:{model}",
            offline=False,
            label=f"OpenAI ({model})",
        )
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        model = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        return Models(
            registry=ModelRegistry([AnthropicProvider()]),
            model=f"anthropic:{model}",
            offline=False,
            label=f"Anthropic ({model})",
        )
    return Models(
        registry=ModelRegistry([ScriptedProvider(script)]),
        model="scripted:demo-model",
        offline=True,
        label="scripted provider (offline)",
    )
