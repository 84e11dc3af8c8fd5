"""Quickstart: one agent, one tool, a plain run and a streamed run.

Offline (no API key, or ACTOVIQ_OFFLINE=1) the scripted provider answers; with OPENAI_API_KEY or
ANTHROPIC_API_KEY the same code talks to the real model.
"""

from __future__ import annotations

import asyncio
from typing import Any

from support import choose_models

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.providers.testing import ScriptedTurn
from actoviq.runtime import AgentRuntime, ToolRegistry, tool


@tool(effect="read")
def lookup(term: str) -> str:
    """Look up a glossary term.

    Args:
        term: the term to explain.
    """
    glossary = {"cas": "compare-and-set: write only if the value is still the expected one"}
    return glossary.get(term.lower(), "no entry")


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


async def main() -> None:
    models = choose_models(SCRIPT)
    print(f"provider: {models.label}")
    async with AgentRuntime(models=models.registry, tools=ToolRegistry([lookup])) as runtime:
        agent: AgentSpec[Any, Any] = AgentSpec(
            id="concise",
            name="Concise",
            instructions="Be brief. Use the lookup tool for glossary terms.",
            model=models.model,
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
