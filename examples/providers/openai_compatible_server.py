"""An OpenAI-compatible server (llama.cpp, vLLM, Ollama) behind OpenAIChatProvider.

Offline (the default) the scripted provider answers. Point it at a real server with
``ACTOVIQ_LOCAL_BASE_URL`` (e.g. ``http://127.0.0.1:8080/v1`` for ``python -m llama_cpp.server``)
and pick the server's profile with ``ACTOVIQ_LOCAL_COMPAT`` (``llama.cpp``, ``vllm``, ``ollama``;
default ``llama.cpp``). Such servers need no API key: ``require_api_key=False`` sends none.

It also shows the typed errors a local setup meets: a missing key at construction, a server that
is not running, a stream the server cut.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from actoviq.core import AgentSpec, ProviderTransportError
from actoviq.providers import (
    MissingAPIKeyError,
    ModelProvider,
    ModelRegistry,
    OpenAICompat,
    ProviderStreamError,
)
from actoviq.providers.openai import OpenAIChatProvider
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime


def choose_provider() -> tuple[ModelProvider, str]:
    """The local server when ACTOVIQ_LOCAL_BASE_URL is set (and not offline), else scripted."""
    base_url = os.environ.get("ACTOVIQ_LOCAL_BASE_URL")
    if base_url and os.environ.get("ACTOVIQ_OFFLINE") != "1":
        # --8<-- [start:provider]
        compat = OpenAICompat.preset(os.environ.get("ACTOVIQ_LOCAL_COMPAT", "llama.cpp"))
        provider = OpenAIChatProvider(
            id="local", base_url=base_url, compat=compat, require_api_key=False, timeout=60
        )
        # --8<-- [end:provider]
        return provider, f"local:{os.environ.get('ACTOVIQ_LOCAL_MODEL', 'local-model')}"
    script = [
        ScriptedTurn(text="Hello from the scripted provider."),
        ScriptedTurn(text="Red, green, blue.", stream_deltas=["Red, ", "green, ", "blue."]),
    ]
    return ScriptedProvider(script, id="local"), "local:scripted-model"


async def main() -> None:
    llama = OpenAICompat.llama_cpp()
    print(
        f"llama.cpp profile: tool-call content {llama.assistant_tool_content!r}, "
        f"limit field {llama.max_tokens_field!r}"
    )
    if not os.environ.get("OPENAI_API_KEY"):
        try:
            OpenAIChatProvider()  # the official API without a key: fails now, not at the call
        except MissingAPIKeyError as error:
            print(f"no key: set {error.env_var} (or base_url=... and require_api_key=False)")

    provider, model = choose_provider()
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="local-chat", name="Local", instructions="Answer briefly.", model=model
    )
    async with AgentRuntime(models=ModelRegistry([provider])) as runtime:
        result = await runtime.run(agent, "Say hello.")
        print(f"run: {result.status}: {result.output}")
        try:
            async with runtime.stream(agent, "Name three colours.") as handle:
                async for text in handle.text_deltas():
                    print(text, end="", flush=True)
                print(f"\nstream: {(await handle.result()).status}")
        except ProviderStreamError as error:  # the server closed the stream early
            print(f"\nstream cut (retryable={error.retryable}): {error}")

    nowhere = OpenAIChatProvider(
        base_url="http://127.0.0.1:9/v1", require_api_key=False, max_retries=0
    )
    offline_agent: AgentSpec[Any, Any] = AgentSpec(
        id="x", name="X", instructions="", model="openai-chat:any"
    )
    async with AgentRuntime(models=ModelRegistry([nowhere])) as runtime:
        try:
            await runtime.run(offline_agent, "hi")
        except ProviderTransportError as error:
            print(f"no server: {error}")


if __name__ == "__main__":
    asyncio.run(main())
