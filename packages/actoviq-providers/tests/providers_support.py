"""Shared helpers for the provider tests: SDK adapters on an httpx2 MockTransport."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import httpx2
from oracle_data import load_golden

from actoviq.core import ModelRefParts, TextItem
from actoviq.providers import ModelRequest, ResolvedModel
from actoviq.providers._sdk_adapter import SDKModelProvider
from actoviq.providers.anthropic import AnthropicProvider
from actoviq.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider

SECRET = "sk-test-SECRET-value-0123456789"
CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
ADAPTERS = ("openai-responses", "openai-chat", "anthropic")
CORPUS_API = {
    "openai-responses": "openai-responses",
    "openai-chat": "openai-chat",
    "anthropic-messages": "anthropic",
}


def resolved_model(provider: str, model: str = "test-model") -> ResolvedModel:
    """``provider:model`` as a resolved model."""
    return ResolvedModel(
        provider_id=provider, model_id=model, ref=ModelRefParts(provider=provider, model=model)
    )


def golden_vectors(folder: str) -> list[tuple[str, dict[str, Any]]]:
    """``(adapter, vector)`` for every vector in the golden ``<folder>/<adapter>.json``."""
    return [
        (adapter, vector)
        for adapter in ADAPTERS
        for vector in load_golden(folder, f"{adapter}.json")["vectors"]
    ]


def legacy_request(**kwargs: Any) -> ModelRequest:
    """A one-message request for the ``legacy`` provider."""
    return ModelRequest(
        model="legacy:legacy-model", input=[TextItem(role="user", text="hello")], **kwargs
    )


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


def strict_diff(expected: object, actual: object, path: str = "$") -> str | None:
    """The first difference between two JSON values, type-strict for bools (golden README).

    ``True`` never equals ``1`` and ``1`` never equals ``True``; ints and floats compare by value
    (JSON has one number type). Key order is not significant. Returns None when equal.
    """
    if isinstance(expected, bool) or isinstance(actual, bool):
        if type(expected) is not type(actual) or expected != actual:
            return f"{path}: expected {expected!r}, got {actual!r}"
        return None
    if isinstance(expected, dict) and isinstance(actual, dict):
        exp = cast(dict[str, object], expected)
        act = cast(dict[str, object], actual)
        if set(exp) != set(act):
            missing = sorted(set(exp) - set(act))
            extra = sorted(set(act) - set(exp))
            return f"{path}: missing keys {missing}, unexpected keys {extra}"
        for key in exp:
            found = strict_diff(exp[key], act[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        exp_list = cast(list[object], expected)
        act_list = cast(list[object], actual)
        if len(exp_list) != len(act_list):
            return f"{path}: expected {len(exp_list)} entries, got {len(act_list)}"
        for index, (left, right) in enumerate(zip(exp_list, act_list, strict=True)):
            found = strict_diff(left, right, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    numbers = (int, float)
    if isinstance(expected, numbers) and isinstance(actual, numbers):
        return None if expected == actual else f"{path}: expected {expected!r}, got {actual!r}"
    if type(cast(object, expected)) is not type(actual) or expected != actual:
        return f"{path}: expected {expected!r}, got {actual!r}"
    return None


def assert_json_equal(expected: object, actual: object, label: str = "") -> None:
    """Assert two JSON values are equal under :func:`strict_diff`."""
    found = strict_diff(expected, actual)
    assert found is None, f"{label}: {found}"
