"""Dotted tool names on OpenAI: the coding profile sends ``workspace.read`` as ``workspace_read``.

OpenAI function names must match ``^[a-zA-Z0-9_-]{1,64}$``. The adapter maps the names it cannot
send (and back, in the model's tool calls), so the runtime runs ``workspace.read`` when the model
calls ``workspace_read``. Offline (the default) an in-process fake of the Responses API answers
through httpx2's ``MockTransport``; with ``OPENAI_API_KEY`` set (and ``ACTOVIQ_OFFLINE`` not
``1``) the real API does.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import httpx2

from actoviq.core import TextItem
from actoviq.profiles import (
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.providers import ModelRegistry, ModelRequest, ModelToolDefinition
from actoviq.providers.openai import OpenAIResponsesProvider


def fake_responses_api(request: httpx2.Request) -> httpx2.Response:
    """The Responses API, scripted: read README.md with ``workspace_read``, then answer."""
    body: dict[str, Any] = json.loads(request.content)
    names = [tool["name"] for tool in body.get("tools", [])]
    print(f"  request tools: {names}")
    answered = any(item.get("type") == "function_call_output" for item in body["input"])
    output: list[dict[str, Any]]
    if answered:
        output = [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "It says hello.", "annotations": []}],
            }
        ]
    else:
        output = [
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "workspace_read",
                "arguments": json.dumps({"path": "README.md"}),
                "status": "completed",
            }
        ]
    answer: dict[str, Any] = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": output,
    }
    if not body.get("stream"):
        return httpx2.Response(200, json=answer)
    event = json.dumps({"type": "response.completed", "response": answer})
    return httpx2.Response(
        200,
        text=f"event: response.completed\ndata: {event}\n\n",
        headers={"content-type": "text/event-stream"},
    )


def provider() -> tuple[OpenAIResponsesProvider, str]:
    """The real API with a key (online), else the fake one."""
    if os.environ.get("OPENAI_API_KEY") and os.environ.get("ACTOVIQ_OFFLINE") != "1":
        return OpenAIResponsesProvider(id="openai"), "openai:gpt-4.1-mini"
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(fake_responses_api))
    fake = OpenAIResponsesProvider(id="openai", api_key="sk-offline", http_client=client)
    return fake, "openai:gpt-offline"


async def main() -> None:
    openai, model = provider()
    request = ModelRequest(
        model=model,
        input=[TextItem(role="user", text="hi")],
        tools=[ModelToolDefinition(name=name) for name in ("workspace.read", "workspace_read")],
    )
    names = openai.tool_names(request)
    print(f"mapping when both names exist: {dict(names.outgoing)}")

    with tempfile.TemporaryDirectory() as folder:
        await asyncio.to_thread(Path(folder, "README.md").write_text, "hello", "utf-8")
        registry = default_profile_registry(workspaces={"repo": folder})
        coding = build_profile("coding", model=model)
        async with create_profile_runtime(registry, models=ModelRegistry([openai])) as runtime:
            result = await run_profile(
                runtime, coding, "Read the readme and say what it says.", workspace_id="repo"
            )
    calls = [item for item in result.items if item.type == "tool_call"]
    print(f"tool calls in the transcript: {[getattr(call, 'name', '') for call in calls]}")
    print(f"answer: {result.output}")


if __name__ == "__main__":
    asyncio.run(main())
