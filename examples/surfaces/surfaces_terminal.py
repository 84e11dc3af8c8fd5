"""Render a run in the terminal through actoviq-surfaces: text inline, one line per tool call,
an approval as a prompt marker, usage at the end.

The host owns the runtime; ``AgentRuntimeBridgeAdapter`` only runs the agent on it and turns the
run's events into redacted semantic events, which ``arender_text`` writes as plain text. The run
pauses for an approval; the example approves it and resumes with the same projector.

Offline (the default in ``make examples``) the scripted provider answers; with
``OPENAI_API_KEY`` set it asks OpenAI instead.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, InterruptionDecision, ToolRegistry, tool
from actoviq.surfaces import AgentRuntimeBridgeAdapter, arender_text


@tool(effect="read")
def get_weather(city: str) -> dict[str, object]:
    """Current weather for a city.

    Args:
        city: the city name.
    """
    return {"city": city, "tempC": 18, "condition": "sunny"}


@tool(effect="side-effect", requires_approval=True)
def post_message(channel: str, text: str) -> str:
    """Post a message to a team channel (needs approval).

    Args:
        channel: the channel name.
        text: the message.
    """
    return f"posted to #{channel}"


SCRIPT = [
    ScriptedTurn(
        text="Let me check Paris and tell the team.",
        stream_deltas=["Let me check ", "Paris and ", "tell the team."],
        tool_calls=[
            ToolCallItem(id="call_weather", name="get_weather", input={"city": "Paris"}),
            ToolCallItem(
                id="call_post",
                name="post_message",
                input={"channel": "travel", "text": "Paris: 18°C and sunny"},
            ),
        ],
        usage={"inputTokens": 52, "outputTokens": 18},
    ),
    ScriptedTurn(
        text="It is 18°C and sunny in Paris; I posted it to #travel.",
        stream_deltas=["It is 18°C ", "and sunny in Paris; ", "I posted it to #travel."],
        usage={"inputTokens": 80, "outputTokens": 14},
    ),
]


def models() -> tuple[ModelRegistry, str]:
    if os.environ.get("ACTOVIQ_OFFLINE") != "1" and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        return ModelRegistry([OpenAIResponsesProvider()]), "openai-responses:gpt-4.1-mini"
    return ModelRegistry([ScriptedProvider(SCRIPT)]), "scripted:demo-model"


async def main() -> None:
    registry, model = models()
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="travel",
        name="Travel",
        instructions="Check the weather with get_weather, then post it with post_message.",
        model=model,
        tools=("get_weather", "post_message"),
    )
    async with AgentRuntime(
        models=registry, tools=ToolRegistry([get_weather, post_message])
    ) as runtime:
        # --8<-- [start:bridge]
        bridge = AgentRuntimeBridgeAdapter(runtime, agent)
        async with bridge.stream("What's the weather in Paris? Tell #travel.") as stream:
            async for chunk in arender_text(stream):
                sys.stdout.write(chunk)
            first = await stream.result()
        # --8<-- [end:bridge]
        if first.status == "interrupted":
            decisions = [InterruptionDecision.approve(entry.id) for entry in first.interruptions]
            print(f"(host approves {len(decisions)} call(s) and resumes)")
            resumed = bridge.resume(first.state, decisions, projector=stream.projector)
            async with resumed:
                async for chunk in arender_text(resumed):
                    sys.stdout.write(chunk)
                final = await resumed.result()
            print(f"final status: {final.status}")


if __name__ == "__main__":
    asyncio.run(main())
