"""Streaming: print text as it arrives, show tool activity, the final result, then cancel a run.

Every event goes through the redaction processor before the handle (and any sink) sees it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.events import (
    InMemoryEventSink,
    ModelCompletedEvent,
    ModelTextDeltaEvent,
    ToolCompletedEvent,
    ToolStartedEvent,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn, TurnLike
from actoviq.runtime import AgentRuntime, ToolRegistry, tool


@tool(effect="read")
def get_weather(city: str) -> dict[str, object]:
    """Current weather for a city.

    Args:
        city: the city name.
    """
    return {"city": city, "tempC": 18, "condition": "sunny"}


SCRIPT = [
    ScriptedTurn(
        text="Let me check the weather.",
        tool_calls=[ToolCallItem(id="call_w", name="get_weather", input={"city": "Paris"})],
        stream_deltas=["Let me ", "check the ", "weather."],
    ),
    ScriptedTurn(
        text="It is 18°C and sunny in Paris.",
        stream_deltas=["It is ", "18°C ", "and sunny ", "in Paris."],
        reasoning="The tool says sunny.",
    ),
    ScriptedTurn(
        text="Once upon a time, in Paris, " + "the river kept flowing. " * 50,
        stream_deltas=["Once upon a time, ", "in Paris, ", *["the river kept flowing. "] * 50],
        event_delay=0.01,
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
    sink = InMemoryEventSink()
    runtime = AgentRuntime(models=registry, tools=ToolRegistry([get_weather]), event_sinks=[sink])
    async with runtime:
        agent: AgentSpec[Any, Any] = AgentSpec(
            id="weather",
            name="Weather",
            instructions="Answer briefly; call get_weather for weather questions.",
            model=model,
            tools=("get_weather",),
        )
        async with runtime.stream(agent, "What's the weather in Paris?") as handle:
            async for event in handle:
                # Every event is an instance of its typed class: ``data`` is typed per type.
                match event:
                    case ModelTextDeltaEvent():
                        print(event.data["delta"], end="", flush=True)
                    case ToolStartedEvent():
                        print(f"\n  [tool {event.data['name']} started]", flush=True)
                    case ToolCompletedEvent():
                        print(f"  [tool {event.data['name']} completed]", flush=True)
                    case ModelCompletedEvent():
                        data = event.data
                        print(f"\n  [turn {data['turn']} done: {data['finishReason']}]")
                    case _:
                        pass
            result = await handle.result()
        print(f"result: {result.status}: {result.output}")
        print(f"events recorded by the sink: {len(sink.events)} (last: {sink.events[-1].type})")

        # Cancelling: stop a long answer after its first words. The run ends "cancelled"
        # (a run.cancelled event is its last), nothing is left running.
        async with runtime.stream(agent, "Tell me a long story about Paris.") as handle:
            async for text in handle.text_deltas():
                print(f"first words: {text!r}; cancelling")
                handle.cancel("the user pressed stop")
                break
            cancelled = await handle.result()
        print(f"result: {cancelled.status}; last event: {sink.events[-1].type}")


if __name__ == "__main__":
    asyncio.run(main())
