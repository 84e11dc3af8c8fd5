"""A tool result too large for the transcript: refused, typed, and the model asks for less.

``export_table`` returns every row it finds. With ``max_output_chars`` the runtime refuses a
result larger than the bound instead of copying it into the transcript, every event and the
checkpoint: the call fails with kind ``validation`` (cause ``ToolOutputTooLargeError``, code
``TOOL_OUTPUT_TOO_LARGE``), the model is told why, and here it asks again for one page.

Offline (``ACTOVIQ_OFFLINE=1`` or no API key) the scripted provider plays the model; with
``OPENAI_API_KEY`` or ``ANTHROPIC_API_KEY`` a real model decides what to ask for.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.events import InMemoryEventSink
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, tool

ROWS = [{"id": index, "name": f"customer-{index}", "city": "Lyon"} for index in range(5_000)]


@tool(effect="read", max_output_chars=4_000)
def export_table(limit: int = 0) -> list[dict[str, Any]]:
    """Export the customer table.

    Args:
        limit: the most rows to return (0: all of them).
    """
    return ROWS[:limit] if limit > 0 else ROWS


def models() -> tuple[ModelRegistry, str]:
    """A real provider when a key is set (and not offline), else the scripted one."""
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        name = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        return ModelRegistry([OpenAIResponsesProvider()]), f"openai-responses:{name}"
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        name = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        return ModelRegistry([AnthropicProvider()]), f"anthropic:{name}"
    script = [
        ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="export_table", input={})]),
        ScriptedTurn(tool_calls=[ToolCallItem(id="c2", name="export_table", input={"limit": 20})]),
        ScriptedTurn(text="Here are the first 20 customers; all of them live in Lyon."),
    ]
    return ModelRegistry([ScriptedProvider(script)]), "scripted:demo-model"


async def main() -> None:
    registry, model = models()
    sink = InMemoryEventSink()
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="analyst",
        name="Analyst",
        instructions="Use export_table; if a result is too large, ask for fewer rows.",
        model=model,
        tools=("export_table",),
    )
    async with AgentRuntime(models=registry, tools=[export_table], event_sinks=[sink]) as runtime:
        result = await runtime.run(agent, "Which city do our customers live in?")
    for event in sink.events:
        data: Any = event.data
        if event.type == "tool.failed":
            failure = data["failure"]
            print("refused:", failure["cause"]["type"], "-", failure["message"])
        elif event.type == "tool.completed":
            print("tool completed:", data["name"])
    print("answer:", result.output)


if __name__ == "__main__":
    asyncio.run(main())
