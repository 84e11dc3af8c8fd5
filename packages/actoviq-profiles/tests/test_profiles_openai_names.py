"""Every shipped profile runs against OpenAI Chat, Responses and Anthropic (tool names mapped).

The adapters are the real ones on an httpx2 ``MockTransport``: no network. Each profile is built
with every optional tool the default registry binds and all three opt-ins, so its whole tool set
goes on the wire; OpenAI accepts only ``^[a-zA-Z0-9_-]{1,64}$`` function names (Anthropic the same
characters).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx2
import pytest

from actoviq.core import ToolCallItem, ToolResultItem
from actoviq.profiles import (
    AGENT_PROFILE_KINDS,
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    profile_config_of,
    run_profile,
)
from actoviq.profiles.definitions import profile_definition
from actoviq.providers import ModelRegistry
from actoviq.providers.anthropic import AnthropicProvider
from actoviq.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider
from actoviq.runtime import InMemoryCheckpointStore

VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ALL_OPT_INS = {"memory": True, "skills": True, "compaction": True}


class FakeOpenAI:
    """Answers Chat, Responses or Messages: ``workspace_read`` for the coding task, else text."""

    def __init__(self, api: str) -> None:
        self.api = api
        self.bodies: list[dict[str, Any]] = []

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        tools: list[dict[str, Any]] = body.get("tools") or []
        if self.api == "chat":
            return [tool["function"]["name"] for tool in tools]
        return [tool["name"] for tool in tools]

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        text = json.dumps(body)
        wants_read = "Read the readme" in text and "README contents" not in text
        if self.api == "anthropic":
            return httpx2.Response(200, json=_anthropic_answer(wants_read))
        if self.api == "chat":
            message: dict[str, Any] = {"role": "assistant", "content": "ok"}
            finish = "stop"
            if wants_read:
                call = {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "workspace_read", "arguments": '{"path":"README.md"}'},
                }
                message, finish = (
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                    ("tool_calls"),
                )
            answer: dict[str, Any] = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
            }
        else:
            item: dict[str, Any] = {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
            if wants_read:
                item = {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "name": "workspace_read",
                    "arguments": '{"path":"README.md"}',
                    "status": "completed",
                }
            answer = {
                "id": "resp_1",
                "object": "response",
                "status": "completed",
                "output": [item],
                "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4},
            }
        if body.get("stream"):
            return _as_stream(self.api, answer)
        return httpx2.Response(200, json=answer)


def _anthropic_answer(wants_read: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": "ok"}
    if wants_read:
        block = {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "workspace_read",
            "input": {"path": "README.md"},
        }
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "test-model",
        "content": [block],
        "stop_reason": "tool_use" if wants_read else "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }


def _as_stream(api: str, answer: dict[str, Any]) -> httpx2.Response:
    if api == "chat":
        (choice,) = answer["choices"]
        message = choice["message"]
        delta: dict[str, Any] = {"role": "assistant"}
        if message.get("content"):
            delta["content"] = message["content"]
        calls = message.get("tool_calls")
        if calls:
            delta["tool_calls"] = [{"index": n, **call} for n, call in enumerate(calls)]
        chunks: list[dict[str, Any]] = [
            {"id": "c", "choices": [{"index": 0, "delta": delta}]},
            {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    else:
        event = {"type": "response.completed", "response": answer}
        text = f"event: response.completed\ndata: {json.dumps(event)}\n\n"
    return httpx2.Response(200, text=text, headers={"content-type": "text/event-stream"})


def _provider(
    api: str, fake: FakeOpenAI
) -> OpenAIChatProvider | OpenAIResponsesProvider | AnthropicProvider:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(fake))
    if api == "anthropic":
        return AnthropicProvider(id="openai", api_key="sk-test", http_client=client, max_retries=0)
    if api == "chat":
        return OpenAIChatProvider(id="openai", api_key="sk-test", http_client=client, max_retries=0)
    return OpenAIResponsesProvider(
        id="openai", api_key="sk-test", http_client=client, max_retries=0
    )


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
async def test_every_profile_runs_against_each_api_with_valid_names(
    api: str, tmp_path: Path
) -> None:
    (tmp_path / "README.md").write_text("README contents", encoding="utf-8")
    fake = FakeOpenAI(api)
    registry = default_profile_registry(workspaces={"repo": tmp_path})
    async with create_profile_runtime(
        registry,
        models=ModelRegistry([_provider(api, fake)]),
        checkpoints=InMemoryCheckpointStore(),
    ) as runtime:
        seen: set[str] = set()
        for kind in AGENT_PROFILE_KINDS:
            definition = profile_definition(kind)
            assert definition is not None
            optional = [t for t in definition.optional_tools if runtime.tools.has(t)]
            profile = build_profile(
                kind, model="openai:gpt-test", tools=optional, opt_ins=ALL_OPT_INS
            )
            required = profile_config_of(profile).dependencies.required_tool_ids
            first = len(fake.bodies)
            task = "Read the readme" if kind == "coding" else f"go {kind}"
            result = await run_profile(
                runtime, profile, task, workspace_id="repo" if kind == "coding" else None
            )
            assert result.status == "completed", kind
            sent = fake.tool_names(fake.bodies[first])
            assert all(VALID.match(name) for name in sent), (kind, sent)
            assert len(sent) == len(set(sent)) == len(required)
            seen.update(required)
            if kind == "coding":
                (read,) = [i for i in result.items if isinstance(i, ToolResultItem)]
                # the model called "workspace_read"; the runtime ran the tool "workspace.read"
                assert read.status == "success", read.output
                assert "README contents" in json.dumps(read.output)
                (call,) = [i for i in result.items if isinstance(i, ToolCallItem)]
                assert call.name == "workspace.read"
                assert call.id == read.call_id
    every = [name for body in fake.bodies for name in fake.tool_names(body)]
    assert every and all(VALID.match(name) for name in every)
    dotted = sorted(name for name in seen if "." in name)
    assert dotted, "the profiles' tool sets include dotted names"
