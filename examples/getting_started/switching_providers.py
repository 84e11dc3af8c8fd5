"""Switching providers: one agent declaration, any provider, chosen by the model reference.

An agent names its model as ``"<provider id>:<model>"``; the ``ModelRegistry`` routes the call to
the provider with that id. Changing providers is changing that string (``attrs.evolve``, with a
new agent id: a runtime registers each agent id once); nothing else in the agent, its tools or
the runtime changes. Every request is checked against the model's
declared capabilities before the network: asking a text-only model for structured output fails
with ``CapabilityError`` and no call is made.

Offline (no API key, or ACTOVIQ_OFFLINE=1) two scripted providers stand in ("fast" and "smart");
with OPENAI_API_KEY the OpenAI Responses and Chat Completions adapters are registered, with
ANTHROPIC_API_KEY the Anthropic adapter, and the same agent runs on each.
"""

from __future__ import annotations

import asyncio
import os

import attrs

from actoviq.core import AgentSpec, CapabilityError
from actoviq.providers import MINIMAL_CAPABILITIES, ModelProvider, ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime


def available_providers() -> tuple[list[ModelProvider], list[str]]:
    """The providers to register and one model reference per provider."""
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    providers: list[ModelProvider] = []
    refs: list[str] = []
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider

        providers += [OpenAIResponsesProvider(), OpenAIChatProvider()]
        refs += ["openai-responses:gpt-4.1-mini", "openai-chat:gpt-4.1-mini"]
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        providers.append(AnthropicProvider())
        refs.append("anthropic:claude-3-5-haiku-latest")
    if not providers:
        providers = [
            ScriptedProvider(["(fast) Paris."], id="fast", repeat_last=True),
            ScriptedProvider(["(smart) Paris, on the Seine."], id="smart", repeat_last=True),
        ]
        refs = ["fast:small-model", "smart:large-model"]
    return providers, refs


@attrs.frozen
class Capital:
    """A structured answer."""

    city: str


async def main() -> None:
    providers, refs = available_providers()
    # A text-only model: the structured-output agent below is refused before any call.
    text_only = ScriptedProvider(["unused"], id="text-only", capabilities=MINIMAL_CAPABILITIES)
    registry = ModelRegistry([*providers, text_only])
    agent = AgentSpec(id="geo", name="Geo", instructions="Answer in a few words.", model=refs[0])
    async with AgentRuntime(models=registry) as runtime:
        for ref in refs:
            # Agents are registered by id: a different declaration needs its own id.
            variant = attrs.evolve(agent, id=f"geo-{ref.split(':')[0]}", model=ref)
            result = await runtime.run(variant, "Capital of France?")
            print(f"{ref}: {result.output}")
            caps = await registry.capabilities(ref)
            print(f"  streaming={caps.streaming} structured={caps.output.structured}")

        typed = AgentSpec(
            id="geo-typed",
            name="Geo",
            instructions="Answer with the city.",
            model="text-only:tiny",
            output=Capital,
        )
        try:
            await runtime.run(typed, "Capital of France?")
        except CapabilityError as error:
            print(f"refused before the network: {error.code}")
        print(f"calls made to the text-only model: {len(text_only.calls)}")


if __name__ == "__main__":
    asyncio.run(main())
