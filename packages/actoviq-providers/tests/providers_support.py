"""Shared helpers for the provider tests: SDK adapters on an httpx2 MockTransport."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

from actoviq.providers._sdk_adapter import SDKModelProvider
from actoviq.providers.anthropic import AnthropicProvider
from actoviq.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider

SECRET = "sk-test-SECRET-value-0123456789"
CORPUS = Path(__file__).resolve().parents[3] / ".." / "shared" / "corpus"
GOLDEN = Path(__file__).resolve().parents[3] / ".." / "shared" / "golden"
ADAPTERS = ("openai-responses", "openai-chat", "anthropic")
CORPUS_API = {
    "openai-responses": "openai-responses",
    "openai-chat": "openai-chat",
    "anthropic-messages": "anthropic",
}


class Recorder:
    """A MockTransport handler answering from a queue of (status, content-type, body)."""

    def __init__(self, answers: list[tuple[int, str, bytes]]) -> None:
        self.answers = list(answers)
        self.requests: list[httpx2.Request] = []
        self.closed_streams = 0

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        status, content_type, body = (
            self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        )
        return httpx2.Response(status, content=body, headers={"content-type": content_type})


def json_answer(body: object, status: int = 200) -> tuple[int, str, bytes]:
    return (status, "application/json", json.dumps(body).encode())


def sse_answer(
    events: list[dict[str, Any]], *, named: bool = True, done: bool = False
) -> tuple[int, str, bytes]:
    chunks: list[str] = []
    for event in events:
        prefix = f"event: {event.get('type')}\n" if named and "type" in event else ""
        chunks.append(f"{prefix}data: {json.dumps(event)}\n\n")
    if done:
        chunks.append("data: [DONE]\n\n")
    return (200, "text/event-stream", "".join(chunks).encode())


def make_adapter(
    name: str, recorder: Callable[[httpx2.Request], httpx2.Response], **options: Any
) -> SDKModelProvider:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(recorder))
    if name == "openai-responses":
        return OpenAIResponsesProvider(api_key=SECRET, http_client=client, max_retries=0, **options)
    if name == "openai-chat":
        return OpenAIChatProvider(api_key=SECRET, http_client=client, max_retries=0, **options)
    return AnthropicProvider(api_key=SECRET, http_client=client, max_retries=0, **options)
