"""The chat profile with the memory opt-in: a later run recalls what an earlier one was told.

Offline (no OPENAI_API_KEY, or ACTOVIQ_OFFLINE=1) a scripted model answers from what it is sent,
so the recalled memory note is visible in its answer.
"""

from __future__ import annotations

import asyncio
import os

from actoviq.core import TextItem
from actoviq.profiles import (
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import InMemoryMemoryStore

OFFLINE = os.environ.get("ACTOVIQ_OFFLINE") == "1" or not os.environ.get("OPENAI_API_KEY")


def models() -> tuple[ModelRegistry, str]:
    """OpenAI with a key, else a scripted model that repeats any memory note it was given."""
    if not OFFLINE:
        from actoviq.providers.openai import OpenAIResponsesProvider

        return ModelRegistry([OpenAIResponsesProvider()]), "openai-responses:gpt-4.1-mini"

    def answer(request: ModelRequest) -> str:
        notes = [i.text for i in request.input if isinstance(i, TextItem) and "memory" in i.text]
        return f"(I was reminded: {notes[0].splitlines()[1]})" if notes else "Noted."

    return ModelRegistry([ScriptedProvider([answer, answer])]), "scripted:demo"


async def main() -> None:
    registry_models, model = models()
    memory = InMemoryMemoryStore()
    registry = default_profile_registry(memory=memory)
    chat = build_profile("chat", model=model, optIns={"memory": True})
    async with create_profile_runtime(registry, models=registry_models) as runtime:
        first = await run_profile(runtime, chat, "Please remember: my favourite tea is sencha.")
        print(f"> remember sencha\n{first.output}")
        second = await run_profile(runtime, chat, "Which tea is my favourite?")
        print(f"> which tea?\n{second.output}")
    stored = await memory.list_memories(tenant_id="default", namespace="profile:chat-agent")
    print(f"memory entries: {len(stored)}")


if __name__ == "__main__":
    asyncio.run(main())
