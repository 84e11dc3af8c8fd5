"""Newcomer program 3: typed structured output, validated (and retried) by the runtime.

``result.output`` is a ``Weather`` to the type checker and at run time; while the answer streams,
``handle.partial_output()`` shows the JSON parsed so far. Offline (no OPENAI_API_KEY, or
ACTOVIQ_OFFLINE=1) a scripted model streams the JSON.
"""

from __future__ import annotations

import asyncio
import os

import attrs

from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, AgentSpec

OFFLINE = os.environ.get("ACTOVIQ_OFFLINE") == "1" or not os.environ.get("OPENAI_API_KEY")


def models() -> ModelRegistry | None:
    """None with a key (the runtime then uses the environment's providers), else a script."""
    if not OFFLINE:
        return None
    pieces = ['{"city": "Par', 'is", "temperature_c": 1', '8.5, "conditions": "sun', 'ny"}']
    turn = ScriptedTurn(text="".join(pieces), stream_deltas=pieces)
    return ModelRegistry([ScriptedProvider([turn])], default_model="scripted:demo")


# --- the program ---------------------------------------------------------------------------------


@attrs.frozen
class Weather:
    city: str
    temperature_c: float
    conditions: str


agent = AgentSpec(id="weather", name="Weather", instructions="Report the weather.", output=Weather)


async def main() -> None:
    async with AgentRuntime(models=models()) as runtime:
        handle = runtime.stream(agent, "What is the weather in Paris?")
        async for partial in handle.partial_output():
            print("so far:", partial)
        weather = (await handle.result()).output  # a Weather, validated against its schema
    print(f"{weather.city}: {weather.temperature_c} °C, {weather.conditions}")


if __name__ == "__main__":
    asyncio.run(main())
