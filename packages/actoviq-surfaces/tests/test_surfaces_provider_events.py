"""Raw ``model.provider.event`` payloads on surfaces: structure shown, content withheld.

A provider streams its output in pieces (``delta``, ``text``, ``content``, ``partial_json``…); a
secret split across two raw events is whole in neither, so the per-event scan cannot find it.
The surface view keeps the structural strings and withholds every other string.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from surfaces_testkit import Stream
from test_surfaces_properties import MARK, canary_trees

from actoviq.core import JsonValue
from actoviq.surfaces import (
    SURFACE_TARGETS,
    ProjectorOptions,
    RunEventSemanticProjector,
    SharedRunEventSurfaceProjector,
    SurfaceRedaction,
    surface_event_to_json,
)


def _openai(piece: str) -> dict[str, Any]:
    return {
        "type": "response.output_text.delta",
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "sequence_number": 7,
        "delta": piece,
    }


def _anthropic(piece: str) -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": piece},
    }


def _chat(piece: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": piece}}],
    }


def _other(piece: str) -> dict[str, Any]:
    return {"type": "vendor.custom", "payload": {"chunks": [piece, {"note": piece}]}}


SHAPES = {"openai": _openai, "anthropic": _anthropic, "chat": _chat, "other": _other}


def _strings(value: JsonValue) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for child in value.values() for text in _strings(child)]
    if isinstance(value, list):
        return [text for child in value for text in _strings(child)]
    return []


def _project_raw(raws: list[dict[str, Any]]) -> tuple[list[Any], str]:
    stream = Stream("provider")
    shared = SharedRunEventSurfaceProjector()
    wire: list[Any] = []
    events = [
        stream.next("run.started", {"agentId": "a"}),
        stream.next("model.requested", {"turn": 1, "model": "p:m"}),
        *(stream.next("model.provider.event", {"provider": "p", "event": raw}) for raw in raws),
        stream.next("model.completed", {"turn": 1, "usage": {"requests": 1}}),
    ]
    for event in events:
        fan = shared.project(event)
        for target in SURFACE_TARGETS:
            wire.extend(surface_event_to_json(s) for s in fan.for_target(target))
    views = [w["data"] for w in wire if w["data"].get("producerType") == "model.provider.event"]
    return views, json.dumps(wire)


def test_provider_event_keeps_its_structure_and_withholds_content() -> None:
    views, _ = _project_raw([_openai("Hello "), _anthropic("world"), _chat("!")])
    assert len(views) == 3 * len(SURFACE_TARGETS)
    openai, anthropic, chat = views[0], views[len(SURFACE_TARGETS)], views[-1]
    assert openai == {
        "producerType": "model.provider.event",
        "provider": "p",
        "event": {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "sequence_number": 7,
            "delta": "[REDACTED]",
        },
    }
    assert anthropic["event"] == {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "[REDACTED]"},
    }
    choice = chat["event"]["choices"][0]
    assert chat["event"]["id"] == "chatcmpl-1" and chat["event"]["model"] == "gpt-test"
    assert choice == {"index": 0, "delta": {"role": "assistant", "content": "[REDACTED]"}}


def test_provider_event_view_uses_the_chosen_replacement_and_still_scans_structure() -> None:
    options = ProjectorOptions(redaction=SurfaceRedaction(replacement="<hidden>"))
    stream = Stream("replacement")
    projector = RunEventSemanticProjector(options)
    projector.project(stream.next("run.started", {"agentId": "a"}))
    raw = {"type": "x", "id": "sk-test-CANARYABCDEFGH12345678", "delta": "plain words"}
    (semantic,) = projector.project(
        stream.next("model.provider.event", {"provider": "p", "event": raw})
    )
    assert semantic.data["event"] == {"type": "x", "id": "<hidden>", "delta": "<hidden>"}


@settings(max_examples=12, deadline=None)
@given(canary_trees, st.sampled_from(sorted(SHAPES)))
def test_no_canary_shows_when_split_across_raw_provider_events(data: Any, shape: str) -> None:
    text = json.dumps(data)
    at = text.index(MARK)
    build = SHAPES[shape]
    for cut in range(max(0, at - 12), min(len(text), at + 12)):
        views, wire = _project_raw([build(text[:cut]), build(text[cut:])])
        assert MARK not in wire, (shape, cut)
        assert MARK not in "".join(s for view in views for s in _strings(view)), (shape, cut)
