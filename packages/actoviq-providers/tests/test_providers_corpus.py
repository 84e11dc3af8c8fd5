"""Replay every recorded corpus file through its adapter on the real SDK path (MockTransport).

New corpus files are picked up without changes here. Assertions per interaction: no exception for
200 (the typed error with ``retryable`` by status otherwise), every output item canonical or raw,
the streamed text deltas concatenating to the final text, and the canonical response equal to what
the recording says, read independently by ``corpus_readers`` (id, final text, tool-call ids, names
and arguments, finish reason, reasoning item count, every usage field).
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, cast

import pytest
from corpus_readers import USAGE_FIELDS, Recorded, read_recorded
from oracle_data import require_files
from providers_support import CORPUS, CORPUS_API, SECRET, Recorder, make_adapter, strict_diff

from actoviq.core import ITEM_TYPES, ProviderTransportError, RawItem, ReasoningItem, ToolCallItem
from actoviq.providers import ALL_CAPABILITIES, ModelRequest, ModelResponse, ModelStreamEvent

pytestmark = pytest.mark.oracle
FILES = require_files(CORPUS, "*/*.json")
CONTENTS: dict[Path, Any] = {path: json.loads(path.read_text("utf-8")) for path in FILES}
REQUEST = ModelRequest(model="replay-model", input=[])


def _check_output(response: ModelResponse) -> None:
    for item in response.output:
        assert type(item) in ITEM_TYPES.values()
        if isinstance(item, ToolCallItem):
            assert item.id and item.name
            assert isinstance(item.input, dict)
            assert "raw" not in item.input or len(item.input) > 1, item
        if isinstance(item, RawItem):
            assert SECRET not in json.dumps(item.value)


def _compare(final: ModelResponse, recorded: Recorded, label: str) -> None:
    """The canonical response says what the recording says (read by ``corpus_readers``)."""
    calls = [(i.id, i.name, i.input) for i in final.output if isinstance(i, ToolCallItem)]
    actual = Recorded(
        id=final.id if recorded.id is not None else None,
        text=final.text,
        tool_calls=cast(list[tuple[str, str, dict[str, Any]]], calls),
        finish=final.finish_reason,
        reasoning=sum(isinstance(i, ReasoningItem) for i in final.output),
        usage={name: cast(int, getattr(final.usage, name)) for name in USAGE_FIELDS}
        if final.has_usage
        else {},
    )
    diff = strict_diff(*(json.loads(json.dumps(asdict(r))) for r in (recorded, actual)))
    assert diff is None, f"{label}: {diff}"


async def _replay(api: str, response: dict[str, Any]) -> tuple[ModelResponse, list[str]]:
    """The recorded response through the adapter's real SDK client: streamed for SSE recordings
    (with the text deltas), ``generate`` for JSON ones."""
    body = (
        response["sse"].encode() if "sse" in response else json.dumps(response.get("body")).encode()
    )
    recorder = Recorder([(response["status"], response["content_type"], body)])
    adapter = make_adapter(api, recorder, capabilities=ALL_CAPABILITIES)
    deltas: list[str] = []
    async with adapter:
        if "sse" not in response:
            return await adapter.generate(REQUEST), deltas
        events: list[ModelStreamEvent] = []
        async with adapter.stream(REQUEST) as stream:
            async for event in stream:
                events.append(event)
                if event.type == "text.delta":
                    deltas.append(event.delta)
            final = await stream.final_response()
    assert [e.type for e in events].count("response.completed") == 1
    return final, deltas


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
async def test_corpus_file_replays(path: Path) -> None:
    data = CONTENTS[path]
    api = CORPUS_API[data["api"]]
    for number, interaction in enumerate(data["interactions"]):
        response = interaction["response"]
        status = response["status"]
        label = f"{path.parent.name}/{path.stem}#{number}"
        if status >= 400:
            with pytest.raises(ProviderTransportError) as info:
                await _replay(api, response)
            assert info.value.status == status
            assert info.value.retryable is (status in (408, 409, 429) or status >= 500)
            assert SECRET not in str(info.value) and SECRET not in repr(info.value)
            continue
        final, deltas = await _replay(api, response)
        _check_output(final)
        if "sse" in response:
            assert "".join(deltas) == final.text, label
        _compare(final, read_recorded(data["api"], response), label)
        assert final.id


async def test_the_replay_notices_a_recording_that_says_otherwise() -> None:
    """Each compared fact, changed in the recording's reading, fails the comparison."""
    path = (
        CORPUS
        / "openai-responses"
        / "test_openai_responses_model_simple_response_with_tool_call.json"
    )
    response = json.loads(path.read_text("utf-8"))["interactions"][0]["response"]
    final, _ = await _replay("openai-responses", response)
    recorded = read_recorded("openai-responses", response)
    _compare(final, recorded, "as recorded")
    call_id, name, arguments = recorded.tool_calls[0]
    changes = [
        {"id": "other-id"},
        {"text": recorded.text + "x"},
        {"tool_calls": [(call_id + "x", name, arguments)]},
        {"tool_calls": [(call_id, name, {**arguments, "extra": 1})]},
        {"finish": "stop"},
        {"reasoning": recorded.reasoning + 1},
        *({"usage": {**recorded.usage, key: recorded.usage[key] + 1}} for key in USAGE_FIELDS),
    ]
    for change in changes:
        with pytest.raises(AssertionError):
            _compare(final, replace(recorded, **change), "changed")


def test_corpus_count_reported() -> None:
    by_api: dict[str, int] = {}
    for path in FILES:
        by_api[path.parent.name] = by_api.get(path.parent.name, 0) + 1
    print(f"corpus replay: {len(FILES)}/{len(FILES)} files parametrised {by_api}")
    assert len(FILES) == sum(by_api.values()) > 0
