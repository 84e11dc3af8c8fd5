"""The README quickstart: one agent, one run (OpenAI with OPENAI_API_KEY, else scripted)."""

import asyncio
import os

from actoviq.core import AgentSpec
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime

if os.environ.get("OPENAI_API_KEY") and os.environ.get("ACTOVIQ_OFFLINE") != "1":
    from actoviq.providers.openai import OpenAIResponsesProvider

    provider, model = OpenAIResponsesProvider(), "openai-responses:gpt-4.1-mini"
else:
    provider, model = ScriptedProvider(["CAS writes only if nothing changed."]), "scripted:demo"


async def main() -> None:
    agent = AgentSpec(id="concise", name="Concise", instructions="Be brief.", model=model)
    async with AgentRuntime(models=ModelRegistry([provider])) as runtime:
        result = await runtime.run(agent, "Explain compare-and-set in one sentence.")
        print(result.output)


asyncio.run(main())
