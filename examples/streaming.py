"""Streaming: print text as it arrives, show tool activity, then the final result.

Every event goes through the redaction processor before the handle (and any sink) sees it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from support import choose_models

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.events import (
    InMemoryEventSink,
    ModelCompletedEvent,
    ModelTextDeltaEvent,
    ToolCompletedEvent,
    ToolStartedEvent,
)
from actoviq.providers.testing import ScriptedTurn
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
]


async def main() -> None:
    models = choose_models(SCRIPT)
    print(f"provider: {models.label}")
    sink = InMemoryEventSink()
    runtime = AgentRuntime(
        models=models.registry, tools=ToolRegistry([get_weather]), event_sinks=[sink]
    )
    async with runtime:
        agent: AgentSpec[Any, Any] = AgentSpec(
            id="weather",
            name="Weather",
            instructions="Answer briefly; call get_weather for weather questions.",
            model=models.model,
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


if __name__ == "__main__":
    asyncio.run(main())
