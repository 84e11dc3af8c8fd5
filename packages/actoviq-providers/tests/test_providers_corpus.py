"""Replay every recorded corpus file through its adapter on the real SDK path (MockTransport).

New corpus files are picked up without changes here. Assertions per interaction: no exception for
200 (the typed error with ``retryable`` by status otherwise), every output item canonical or raw,
tool calls with id/name/object input, usage equal to the recorded numbers, and the streamed text
deltas concatenating to the final text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
from oracle_data import require_files
from providers_support import CORPUS, CORPUS_API, SECRET, Recorder, make_adapter

from actoviq.core import (
    ITEM_TYPES,
    ProviderTransportError,
    RawItem,
    TextItem,
    ToolCallItem,
    Usage,
)
from actoviq.providers import ALL_CAPABILITIES, ModelRequest, ModelResponse, ModelStreamEvent

pytestmark = pytest.mark.oracle
FILES = require_files(CORPUS, "*/*.json")
CONTENTS: dict[Path, Any] = {path: json.loads(path.read_text("utf-8")) for path in FILES}
REQUEST = ModelRequest(model="replay-model", input=[])


def _d(value: Any) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _recorded_usage(api: str, response: dict[str, Any]) -> dict[str, int] | None:
    """Expected usage from the recorded response (JSON body or SSE), independent of the adapter."""
    if "body" in response:
        usage: Any = _d(response["body"]).get("usage")
        return _expected(api, _d(usage)) if isinstance(usage, dict) else None
    events = _sse(response["sse"])
    if api == "openai-responses":
        done = ("response.completed", "response.incomplete", "response.failed")
        for event in reversed(events):
            final = _d(event.get("response"))
            if event.get("type") in done and isinstance(final.get("usage"), dict):
                return _expected(api, _d(final["usage"]))
        return None
    if api == "openai-chat":
        usages = [_d(e["usage"]) for e in events if isinstance(e.get("usage"), dict)]
        return _expected(api, usages[-1]) if usages else None
    merged: dict[str, int] = {}
    for event in events:
        found: Any = None
        if event.get("type") == "message_delta":
            found = event.get("usage")
        elif event.get("type") == "message_start":
            found = _d(event.get("message")).get("usage")
        for key, value in _d(found).items():
            if isinstance(value, int):
                merged[key] = max(merged.get(key, 0), value)
    return _expected(api, merged) if merged else None


def _expected(api: str, usage: dict[str, Any]) -> dict[str, int]:
    def num(value: Any) -> int:
        return value if isinstance(value, int) else 0

    if api == "openai-responses":
        return {
            "input_tokens": num(usage.get("input_tokens")),
            "output_tokens": num(usage.get("output_tokens")),
            "cache_read_tokens": num(_d(usage.get("input_tokens_details")).get("cached_tokens")),
            "reasoning_tokens": num(_d(usage.get("output_tokens_details")).get("reasoning_tokens")),
        }
    if api == "openai-chat":
        return {
            "input_tokens": num(usage.get("prompt_tokens")),
            "output_tokens": num(usage.get("completion_tokens")),
            "total_tokens": num(usage.get("total_tokens")),
            "cache_read_tokens": num(_d(usage.get("prompt_tokens_details")).get("cached_tokens")),
        }
    read = num(usage.get("cache_read_input_tokens"))
    write = num(usage.get("cache_creation_input_tokens"))
    return {
        "input_tokens": num(usage.get("input_tokens")) + read + write,
        "output_tokens": num(usage.get("output_tokens")),
        "cache_read_tokens": read,
        "cache_write_tokens": write,
    }


def _sse(text: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for line in text.splitlines():
        if line.startswith("data:"):
            payload = line[5:].strip()
            if payload and payload != "[DONE]":
                try:
                    value = json.loads(payload)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    events.append(cast(dict[str, Any], value))
    return events


def _check_output(response: ModelResponse) -> None:
    for item in response.output:
        assert type(item) in ITEM_TYPES.values()
        if isinstance(item, ToolCallItem):
            assert item.id and item.name
            assert isinstance(item.input, dict)
            assert "raw" not in item.input or len(item.input) > 1, item
        if isinstance(item, RawItem):
            assert SECRET not in json.dumps(item.value)


def _check_usage(usage: Usage, expected: dict[str, int] | None) -> None:
    if expected is None:
        return
    for field, value in expected.items():
        assert getattr(usage, field) == value, (field, usage)


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
async def test_corpus_file_replays(path: Path) -> None:
    data = CONTENTS[path]
    api = CORPUS_API[data["api"]]
    for interaction in data["interactions"]:
        response = interaction["response"]
        status = response["status"]
        body = (
            response["sse"].encode()
            if "sse" in response
            else json.dumps(response.get("body")).encode()
        )
        recorder = Recorder([(status, response["content_type"], body)])
        adapter = make_adapter(api, recorder, capabilities=ALL_CAPABILITIES)
        async with adapter:
            if status >= 400:
                with pytest.raises(ProviderTransportError) as info:
                    await adapter.generate(REQUEST)
                assert info.value.status == status
                assert info.value.retryable is (status in (408, 409, 429) or status >= 500)
                assert SECRET not in str(info.value) and SECRET not in repr(info.value)
                continue
            if "sse" in response:
                deltas: list[str] = []
                events: list[ModelStreamEvent] = []
                async with adapter.stream(REQUEST) as stream:
                    async for event in stream:
                        events.append(event)
                        if event.type == "text.delta":
                            deltas.append(event.delta)
                    final = await stream.final_response()
                assert [e.type for e in events].count("response.completed") == 1
                text = "".join(i.text for i in final.output if isinstance(i, TextItem))
                assert "".join(deltas) == text
            else:
                final = await adapter.generate(REQUEST)
            _check_output(final)
            _check_usage(final.usage, _recorded_usage(api, response))
            assert final.id


def test_corpus_count_reported() -> None:
    by_api: dict[str, int] = {}
    for path in FILES:
        by_api[path.parent.name] = by_api.get(path.parent.name, 0) + 1
    print(f"corpus replay: {len(FILES)}/{len(FILES)} files parametrised {by_api}")
    assert len(FILES) == sum(by_api.values()) > 0
