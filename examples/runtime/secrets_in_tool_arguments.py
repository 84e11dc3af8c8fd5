"""Secrets in tool arguments: redacted while streaming, encrypted at rest.

The model calls ``register_webhook`` with an API key among its arguments, streamed as JSON text
in pieces. By default the stream never carries those pieces: each ``model.tool_call.delta``
carries ``argumentsLength``, and the delta that completes the call carries the arguments parsed
and redacted by key. The checkpoint needs the real arguments (resume re-runs the call), so it is
written through ``FernetPayloadCodec``: the stored record holds no input in clear.

Offline (``ACTOVIQ_OFFLINE=1`` or no API key) the scripted provider plays the model; with
``OPENAI_API_KEY`` or ``ANTHROPIC_API_KEY`` a real model decides to call the tool.
``pip install "actoviq-runtime[fernet]"`` provides the codec.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from actoviq.core import AgentSpec, JsonObject, ToolCallItem
from actoviq.providers import ModelRegistry, ToolCallDelta
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    FernetPayloadCodec,
    InMemoryCheckpointStore,
    StoreRunCheckpointAdapter,
    tool,
)

DEMO_KEY = "sk-demo-0000-not-a-real-key"


@tool(effect="idempotent-write")
def register_webhook(url: str, api_key: str) -> dict[str, object]:
    """Register a webhook that authenticates with an API key.

    Args:
        url: where to send events.
        api_key: the key the webhook presents.
    """
    return {"registered": url, "keyLength": len(api_key)}


def models() -> tuple[ModelRegistry, str, str]:
    """A real provider when a key is set (and not offline), else the scripted one."""
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        name = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        return ModelRegistry([OpenAIResponsesProvider()]), f"openai-responses:{name}", name
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        name = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        return ModelRegistry([AnthropicProvider()]), f"anthropic:{name}", name
    arguments: JsonObject = {"url": "https://hooks.example.test/in", "api_key": DEMO_KEY}
    text = json.dumps(arguments)
    pieces = [text[i : i + 9] for i in range(0, len(text), 9)]  # the key is cut across pieces
    call = ToolCallItem(id="call_hook", name="register_webhook", input=arguments)
    deltas = [
        ToolCallDelta(call_id=call.id, name=call.name if i == 0 else None, arguments_delta=p)
        for i, p in enumerate(pieces)
    ]
    script = [ScriptedTurn(tool_calls=[call], events=deltas), ScriptedTurn(text="Registered.")]
    return ModelRegistry([ScriptedProvider(script)]), "scripted:demo-model", "scripted"


async def main() -> None:
    registry, model, label = models()
    print(f"provider: {label}")
    records = InMemoryCheckpointStore()
    # --8<-- [start:policy]
    codec = FernetPayloadCodec(FernetPayloadCodec.generate_key())  # keep the key in a vault
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="ops",
        name="Ops",
        instructions=(
            "Register the webhook https://hooks.example.test/in with register_webhook, using "
            f"the API key {DEMO_KEY}. Then confirm in one sentence."
        ),
        model=model,
        tools=("register_webhook",),
    )
    runtime = AgentRuntime(
        models=registry,
        tools=[register_webhook],
        checkpoint_store=StoreRunCheckpointAdapter(records, payload_codec=codec),
    )
    # --8<-- [end:policy]
    async with runtime, runtime.stream(agent, "Set up the webhook.", run_id="hook") as handle:
        async for event in handle:
            if event.type == "model.tool_call.delta" and isinstance(event.data, dict):
                data: dict[str, Any] = event.data
                print(f"  tool_call.delta: {data.get('argumentsLength')} characters")
                if "arguments" in data:
                    print(f"  arguments (redacted): {json.dumps(data['arguments'])}")
        result = await handle.result()
    print(f"run: {result.status}: {result.output}")
    record = await records.get(tenant_id="default", checkpoint_id="hook")
    assert record is not None
    stored = repr(record)
    print(f"stored checkpoint: {record.status}, state encoded as {record.state['$codec']!r}")
    print(f"the key appears in the stored record: {DEMO_KEY in stored}")
    assert DEMO_KEY not in stored


if __name__ == "__main__":
    asyncio.run(main())
