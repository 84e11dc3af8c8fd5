"""The 0.x façade: create_agent_sdk, legacy AgentEvents, JSON v1 sessions, usage diagnostics.

Code written against the 0.x client keeps its shape (``sdk.run``, ``sdk.stream``, ``result.text``,
``event["type"] == "response.text.delta"``, ``session.send``) while every call runs on the one
``AgentRuntime`` (``sdk.runtime``). Sessions are 0.x JSON v1 files, so a 0.x reader can still open
them until the data is migrated. The diagnostics at the end list which compat names the program
used: the migration to-do list.

Offline (no API key, or ACTOVIQ_OFFLINE=1) a scripted provider answers through
``ModelProviderLegacyAdapter``; with OPENAI_API_KEY or ANTHROPIC_API_KEY the real model does.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from actoviq.compat import (
    AgentClient,
    ModelProviderLegacyAdapter,
    configure_compat_diagnostics,
    create_agent_sdk,
    get_compat_diagnostics,
)
from actoviq.core import ToolCallItem
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import tool

SYSTEM = "You are a terse assistant. Use the glossary tool for terms."


@tool(effect="read")
def glossary(term: str) -> str:
    """Explain a term from the glossary.

    Args:
        term: the term to explain.
    """
    entries = {"cas": "compare-and-set: write only if the value is still the expected one"}
    return entries.get(term.lower(), "no entry")


def scripted() -> ScriptedProvider:
    """Offline answers for the four model calls below."""
    return ScriptedProvider(
        [
            ScriptedTurn(
                tool_calls=[ToolCallItem(id="call_1", name="glossary", input={"term": "CAS"})]
            ),
            ScriptedTurn(
                text="CAS writes only if the value is unchanged.",
                usage={"inputTokens": 40, "outputTokens": 9},
            ),
            ScriptedTurn(text="Hello there!", stream_deltas=["Hello ", "there!"]),
            ScriptedTurn(text="You asked about CAS.", stream_deltas=["You asked ", "about CAS."]),
        ]
    )


async def make_client(session_directory: Path) -> tuple[AgentClient, str]:
    """OpenAI or Anthropic when a key is set (and not ACTOVIQ_OFFLINE=1), else scripted."""
    common: dict[str, Any] = {
        "systemPrompt": SYSTEM,
        "tools": [glossary],
        "sessionDirectory": session_directory,
        "permissionMode": "plan",  # 0.x plan mode: read-only tools only
    }
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        model = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        return await create_agent_sdk(provider="openai", model=model, **common), "OpenAI"
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        model = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        return await create_agent_sdk(provider="anthropic", model=model, **common), "Anthropic"
    adapter = ModelProviderLegacyAdapter(scripted())
    client = await create_agent_sdk(modelApi=adapter, model="demo", **common)
    return client, "scripted provider (offline)"


async def main() -> None:
    configure_compat_diagnostics(warn_once=False)  # we print the summary ourselves
    with tempfile.TemporaryDirectory() as folder:
        sdk, label = await make_client(Path(folder))
        print(f"provider: {label}")
        async with sdk:
            # 0.x: const result = await sdk.run(...)
            result = await sdk.run("What is CAS? One sentence.")
            print(f"run: {result.text!r} (stop: {result.stop_reason}, usage: {result.usage})")
            print(f"tool calls: {[(c['name'], c['outputText']) for c in result.tool_calls]}")

            # 0.x: for await (const event of sdk.stream(...)) — in a JSON v1 session
            session = await sdk.create_session(title="Glossary chat")
            for prompt in ("Say hello.", "What did I ask before?"):
                print("stream: ", end="", flush=True)
                stream = session.stream(prompt)
                async for event in stream:
                    if event["type"] == "response.text.delta":
                        print(event["delta"], end="", flush=True)
                streamed = await stream.result
                print(f"  [{len(streamed.messages)} messages in the session]")

            stored = await sdk.sessions.load(session.id)
            print(f"session file: {len(stored['messages'])} messages, {len(stored['runs'])} runs")
            print(json.dumps(stored["messages"][0]))

    used = {d.symbol: d.count for d in get_compat_diagnostics()}
    print(f"compat symbols used (migrate these): {used}")


if __name__ == "__main__":
    asyncio.run(main())
