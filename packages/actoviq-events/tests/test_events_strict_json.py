"""Event data follows the core strict-JSON rules (D2, D10): surrogates, safe integers, depth.

Delivered data (through the default redaction processor) is always strict JSON, so any sink can
write it as UTF-8; reading an event refuses what strict JSON refuses, typed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from actoviq.core import (
    MAX_JSON_DEPTH,
    MAX_SAFE_INTEGER,
    JsonValue,
    JsonValueError,
    ToolCallItem,
    is_json_value,
    item_to_json,
)
from actoviq.events import (
    EventDispatcher,
    EventEmitter,
    InMemoryEventSink,
    Redactor,
    RunEvent,
    create_root_trace_context,
    default_processors,
    run_event_dumps,
    run_event_from_json,
    run_event_to_json,
)


def _event(data: JsonValue) -> RunEvent:
    return RunEvent(
        event_id="e1",
        sequence=1,
        run_id="r1",
        trace_id="0" * 32,
        span_id="1" * 16,
        type="tool.completed",
        timestamp="2026-01-01T00:00:00.000Z",
        data=data,
    )


def _nest(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def test_redaction_repairs_surrogates_and_stringifies_unsafe_integers() -> None:
    redactor = Redactor()
    raw: dict[str, Any] = {
        "message": "bad \ud800 byte",
        "split": "\ud83d\ude00",
        "k\udc00": 1,
        "big": 2**64,
        "negative": -(2**53),
        "safe": MAX_SAFE_INTEGER,
        "list": ["x\udfff", 2**60, {"deep": ["\ud800"]}],
    }
    out: Any = redactor.redact(raw)
    assert is_json_value(out)
    assert out["message"] == "bad \ufffd byte"
    assert out["split"] == "\U0001f600"
    assert out["k\ufffd"] == 1
    assert out["big"] == str(2**64)
    assert out["negative"] == str(-(2**53))
    assert out["safe"] == MAX_SAFE_INTEGER
    assert out["list"] == ["x\ufffd", str(2**60), {"deep": ["\ufffd"]}]
    json.dumps(out, ensure_ascii=False).encode("utf-8")  # writable by any sink
    assert raw["message"] == "bad \ud800 byte"  # the input is not changed


def test_the_flat_fast_path_gives_the_same_answer() -> None:
    redactor = Redactor()
    for raw in ({"a": "\ud800"}, {"a": 2**53}, {"\ud800": "x"}, {"a": {"b": -(2**60)}}):
        out = redactor.redact(raw)
        assert is_json_value(out)
        assert out == redactor.redact([raw])[0]  # type: ignore[index]  # the general walk


async def test_delivered_events_are_strict_json_and_dump_as_utf8() -> None:
    sink = InMemoryEventSink()
    async with EventDispatcher(default_processors(), [sink]) as dispatcher:
        emitter = EventEmitter(create_root_trace_context("run-1"), dispatcher)
        await emitter.emit("tool.failed", {"error": {"message": "x\ud800"}, "count": 2**60})
    (event,) = sink.events
    assert is_json_value(event.data)
    text = run_event_dumps(event)
    text.encode("utf-8")
    assert run_event_from_json(text) == event


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"text": "x\ud800"}, "lone-surrogate"),
        ({"n": MAX_SAFE_INTEGER + 1}, "unsafe-integer"),
        ({"n": float("inf")}, "non-finite"),
        ({"deep": _nest(100_000)}, "too-deep"),
    ],
)
def test_events_that_are_not_strict_json_are_refused_typed(data: Any, reason: str) -> None:
    event = _event(data)  # built directly: no redaction processor ran
    with pytest.raises(JsonValueError) as caught:
        run_event_dumps(event)
    assert caught.value.reason == reason
    with pytest.raises(JsonValueError) as caught:
        run_event_from_json(run_event_to_json(event))
    assert caught.value.reason == reason


@pytest.mark.parametrize(
    ("data_text", "reason"),
    [
        ('{"text": "x\\ud800"}', "lone-surrogate"),
        ('{"n": 9007199254740993}', "unsafe-integer"),
        ('{"n": 45927402752296410}', "unsafe-integer"),
        ('{"n": 1e400}', "non-finite"),
        ("[" * 100_000 + "]" * 100_000, "too-deep"),
    ],
)
def test_event_text_that_is_not_strict_json_is_refused_typed(data_text: str, reason: str) -> None:
    good = run_event_dumps(_event({"x": 1}))
    text = good.replace('{"x":1}', data_text)
    with pytest.raises(JsonValueError) as caught:
        run_event_from_json(text)
    assert caught.value.reason == reason


def test_an_event_carrying_an_item_at_the_depth_limit_round_trips() -> None:
    call = ToolCallItem(id="c", name="n", input={"deep": _nest(MAX_JSON_DEPTH - 1)})
    event = _event({"item": item_to_json(call)})
    text = run_event_dumps(event)
    assert run_event_from_json(text) == event
