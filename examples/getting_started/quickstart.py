"""Quickstart: one agent, one tool, a plain run and a streamed run.

Offline (no API key, or ACTOVIQ_OFFLINE=1) the scripted provider answers; with OPENAI_API_KEY or
ANTHROPIC_API_KEY the same code talks to the real model.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn, TurnLike
from actoviq.runtime import AgentRuntime, ToolRegistry, tool


# --8<-- [start:tool]
@tool(effect="read")
def lookup(term: str) -> str:
    """Look up a glossary term.

    Args:
        term: the term to explain.
    """
    glossary = {"cas": "compare-and-set: write only if the value is still the expected one"}
    return glossary.get(term.lower(), "no entry")


# --8<-- [end:tool]


SCRIPT = [
    ScriptedTurn(tool_calls=[ToolCallItem(id="call_1", name="lookup", input={"term": "CAS"})]),
    ScriptedTurn(
        text="CAS writes a value only if it still equals the expected one.",
        usage={"inputTokens": 42, "outputTokens": 14},
    ),
    ScriptedTurn(
        text="Hello! Ask me about compare-and-set.",
        stream_deltas=["Hello! ", "Ask me ", "about ", "compare-and-set."],
    ),
]


def choose_models(script: Sequence[TurnLike]) -> tuple[ModelRegistry, str, str]:
    """OpenAI with OPENAI_API_KEY, else Anthropic with ANTHROPIC_API_KEY, else the script.

    ``ACTOVIQ_OFFLINE=1`` forces the scripted provider (what ``make test`` runs).
    """
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        name = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        registry = ModelRegistry([OpenAIResponsesProvider()])
        return registry, f"openai-responses:{name}", f"OpenAI ({name})"
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        name = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        registry = ModelRegistry([AnthropicProvider()])
        return registry, f"anthropic:{name}", f"Anthropic ({name})"
    registry = ModelRegistry([ScriptedProvider(script)])
    return registry, "scripted:demo-model", "scripted provider (offline)"


async def main() -> None:
    registry, model, label = choose_models(SCRIPT)
    print(f"provider: {label}")
    async with AgentRuntime(models=registry, tools=ToolRegistry([lookup])) as runtime:
        agent: AgentSpec[Any, Any] = AgentSpec(
            id="concise",
            name="Concise",
            instructions="Be brief. Use the lookup tool for glossary terms.",
            model=model,
            tools=("lookup",),
        )
        result = await runtime.run(agent, "Explain CAS in one sentence.")
        print(f"run: {result.status}: {result.output}")
        print(f"tokens: {result.usage.total_tokens} in {result.usage.requests} model calls")

        async with runtime.stream(agent, "hello") as handle:
            print("stream: ", end="", flush=True)
            async for text in handle.text_deltas():
                print(text, end="", flush=True)
            result = await handle.result()
        print(f"\nstream: {result.status}")


if __name__ == "__main__":
    asyncio.run(main())
