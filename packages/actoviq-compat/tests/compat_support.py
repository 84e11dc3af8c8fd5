"""Helpers of the compat tests: a Responses API on an httpx2 MockTransport, a legacy ModelApi."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from actoviq.providers.legacy import (
    ContentBlock,
    LegacyModelRequest,
    Message,
    MessageStreamEvent,
    ModelStreamHandle,
)
from actoviq.providers.openai import OpenAIResponsesProvider

SECRET = "sk-test-compat-0123456789abcdefghij"


def responses_body(text: str, response_id: str = "resp_compat") -> dict[str, Any]:
    """A completed Responses API response with one text message (usage 4 in, 2 out)."""
    return {
        "id": response_id,
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text}],
            }
        ],
        "usage": {"input_tokens": 4, "output_tokens": 2, "total_tokens": 6},
    }


class Transport:
    """Answers every request with the next queued JSON body and records the requests."""

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.bodies = list(bodies)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        body = self.bodies.pop(0) if len(self.bodies) > 1 else self.bodies[0]
        return httpx2.Response(
            200, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
        )

    def sent(self) -> list[dict[str, Any]]:
        """The JSON request bodies sent so far."""
        return [json.loads(request.content) for request in self.requests]


def responses_provider(transport: Transport) -> OpenAIResponsesProvider:
    """A real OpenAIResponsesProvider (the official SDK) talking to ``transport``."""
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(transport))
    return OpenAIResponsesProvider(api_key=SECRET, http_client=client, max_retries=0)


def legacy_message(text: str, *, tool_use: bool = False) -> Message:
    """An Anthropic-style legacy message."""
    content: list[ContentBlock] = [{"type": "text", "text": text}]
    if tool_use:
        content = [{"type": "tool_use", "id": "tool_1", "name": "lookup", "input": {"q": "x"}}]
    return {
        "id": "msg_legacy",
        "type": "message",
        "role": "assistant",
        "model": "legacy-model",
        "content": content,
        "stop_reason": "tool_use" if tool_use else "end_turn",
        "usage": {"input_tokens": 2, "output_tokens": 3},
    }


class _Handle:
    def __init__(self, message: Message) -> None:
        self._message = message

    def __aiter__(self) -> AsyncIterator[MessageStreamEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[MessageStreamEvent]:
        text = "".join(b.get("text", "") for b in self._message["content"])
        yield {"type": "message_start", "message": {**self._message, "content": []}}
        yield {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
        for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
            yield {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": piece},
            }
        yield {"type": "message_stop"}

    async def final_message(self) -> Message:
        return self._message


class FakeModelApi:
    """A legacy ``ModelApi`` answering from a queue of messages; records every request."""

    def __init__(self, *messages: Message) -> None:
        self.messages = list(messages)
        self.requests: list[LegacyModelRequest] = []

    def _next(self) -> Message:
        return self.messages.pop(0) if len(self.messages) > 1 else self.messages[0]

    async def create_message(self, request: LegacyModelRequest) -> Message:
        self.requests.append(request)
        return self._next()

    def stream_message(self, request: LegacyModelRequest) -> ModelStreamHandle:
        self.requests.append(request)
        return _Handle(self._next())
