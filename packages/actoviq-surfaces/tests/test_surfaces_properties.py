"""Properties: projection is deterministic; no canary survives any target.

The canary trees are drawn by the strategy of actoviq-events' own canary property test (loaded
from that test module, so both packages are held to the same secrets).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from surfaces_testkit import Stream

from actoviq.core import JsonObject
from actoviq.events import RunEvent, SequentialIdFactory
from actoviq.surfaces import (
    SURFACE_TARGETS,
    LegacyAdapterOptions,
    LegacySurfaceEventPipeline,
    RunEventSemanticProjector,
    SharedRunEventSurfaceProjector,
    surface_event_to_json,
)

_EVENTS_CANARY = (
    Path(__file__).resolve().parents[2]
    / "actoviq-events"
    / "tests"
    / "test_events_canary_property.py"
)


def _load_canary_module() -> Any:
    spec = importlib.util.spec_from_file_location("actoviq_events_canary_strategy", _EVENTS_CANARY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CANARY = _load_canary_module()
MARK: str = CANARY.MARK
canary_trees: st.SearchStrategy[Any] = CANARY._trees(scan_text=True)

words = st.text(alphabet="abcdefghij ,.", max_size=10)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), words)
json_values = st.recursive(
    json_leaf,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(words, children, max_size=3),
    max_leaves=8,
)
payloads: dict[str, st.SearchStrategy[Any]] = {
    "run.started": st.fixed_dictionaries({"agentId": words}),
    "model.requested": st.fixed_dictionaries({"turn": st.integers(1, 5), "model": words}),
    "model.text.delta": st.fixed_dictionaries(
        {"delta": words}, optional={"outputIndex": st.integers(0, 2)}
    ),
    "model.reasoning.delta": st.fixed_dictionaries(
        {}, optional={"delta": words, "opaque": json_values, "outputIndex": st.integers(0, 2)}
    ),
    "model.tool_call.delta": st.fixed_dictionaries(
        {"callId": st.sampled_from(["c1", "c2"]), "argumentsDelta": words},
        optional={"name": words},
    ),
    "model.usage": st.fixed_dictionaries(
        {"usage": st.fixed_dictionaries({"requests": st.integers(0, 3)})}
    ),
    "model.completed": st.fixed_dictionaries(
        {"turn": st.integers(1, 5), "finishReason": words, "usage": st.just({"requests": 1})}
    ),
    "tool.started": st.fixed_dictionaries(
        {"callId": st.sampled_from(["c1", "c2"]), "name": words, "effect": st.just("read")}
    ),
    "tool.completed": st.fixed_dictionaries(
        {"callId": st.sampled_from(["c1", "c2"]), "name": words}
    ),
    "tool.failed": st.fixed_dictionaries(
        {"callId": st.sampled_from(["c1", "c2"]), "name": words, "failure": json_values}
    ),
    "custom.event": st.dictionaries(words, json_values, max_size=3),
    "run.completed": st.fixed_dictionaries({"status": st.just("completed"), "usage": st.just({})}),
}
steps = st.lists(
    st.tuples(
        st.booleans(),
        st.sampled_from(sorted(payloads)).flatmap(
            lambda kind: st.tuples(st.just(kind), payloads[kind])
        ),
    ),
    min_size=1,
    max_size=25,
)


def _build(script: list[tuple[bool, tuple[str, JsonObject]]]) -> list[RunEvent]:
    root = Stream("root", ids=SequentialIdFactory())
    child = root.child("child")
    return [(child if in_child else root).next(kind, data) for in_child, (kind, data) in script]


def _ids_and_wire(events: list[RunEvent]) -> tuple[list[str], str]:
    projector = RunEventSemanticProjector()
    semantics = projector.project_many(events)
    return [s.semantic_id for s in semantics], json.dumps(
        [surface_event_to_json(s) for s in semantics]
    )


@settings(max_examples=80, deadline=None)
@given(steps)
def test_projecting_a_stream_twice_gives_the_same_semantics(
    script: list[tuple[bool, tuple[str, JsonObject]]],
) -> None:
    events = _build(script)
    first_ids, first_wire = _ids_and_wire(events)
    second_ids, second_wire = _ids_and_wire(events)
    assert first_ids == second_ids and first_wire == second_wire
    assert len(set(first_ids)) == len(first_ids)
    shared = SharedRunEventSurfaceProjector()
    for event in events:
        fan = shared.project(event)
        assert all(fan.for_target(target) == fan.semantics for target in SURFACE_TARGETS)
        assert shared.project(event).semantics == ()  # a replay, whatever the payload


def _runtime_events(data: Any) -> list[RunEvent]:
    stream = Stream("canary")
    text = json.dumps(data)
    script: list[tuple[str, Any]] = [
        ("run.started", {"agentId": "a"}),
        ("model.requested", {"turn": 1, "model": "p:m"}),
        ("model.text.delta", {"delta": text}),
        ("model.reasoning.delta", {"delta": text, "opaque": data}),
        ("model.tool_call.delta", {"callId": "c", "name": "t", "argumentsDelta": text}),
        ("tool.started", {"callId": "c", "name": "t", "input": data}),
        ("tool.completed", {"callId": "c", "name": "t", "output": data, "outputText": text}),
        ("custom.payload", data),
        ("run.failed", {"error": data}),
    ]
    return [stream.next(kind, payload) for kind, payload in script]


def _legacy_events(data: Any) -> list[dict[str, Any]]:
    text = json.dumps(data)
    base = {"runId": "legacy", "timestamp": 0, "iteration": 1}
    return [
        {**base, "type": "response.text.delta", "delta": text, "snapshot": text},
        {
            **base,
            "type": "response.tool_input.delta",
            "toolUseId": "c",
            "delta": text,
            "snapshot": text,
        },
        {**base, "type": "tool.call", "call": {"id": "c", "name": "t", "input": data}},
        {**base, "type": "error", "error": {"message": text, "stack": text}},
        {**base, "type": "workflow.log", "message": data},
    ]


@settings(max_examples=60, deadline=None)
@given(canary_trees)
def test_no_canary_survives_any_target(data: Any) -> None:
    assert MARK in json.dumps(data)  # the property is not vacuous
    shared = SharedRunEventSurfaceProjector()
    pipeline = LegacySurfaceEventPipeline(legacy=LegacyAdapterOptions(ids=SequentialIdFactory(100)))
    delivered: list[Any] = []
    for event in _runtime_events(data):
        fan = shared.project(event)
        for target in SURFACE_TARGETS:
            delivered.extend(surface_event_to_json(s) for s in fan.for_target(target))
    for legacy in _legacy_events(data):
        fan = pipeline.project(legacy)
        for target in SURFACE_TARGETS:
            delivered.extend(surface_event_to_json(s) for s in fan.for_target(target))
    text = json.dumps(delivered)
    assert MARK not in text
    assert "[REDACTED]" in text


def _split_stream(pieces: list[str], kind: str = "model.text.delta") -> list[RunEvent]:
    stream = Stream("split")
    events = [
        stream.next("run.started", {"agentId": "a"}),
        stream.next("model.requested", {"turn": 1, "model": "p:m"}),
    ]
    events.extend(stream.next(kind, {"delta": piece, "outputIndex": 0}) for piece in pieces)
    events.append(stream.next("model.completed", {"turn": 1, "usage": {"requests": 1}}))
    events.append(stream.next("run.completed", {"status": "completed", "usage": {}}))
    return events


def _delivered_deltas(events: list[RunEvent]) -> tuple[list[str], str]:
    """Every target's text deltas (checked identical) and the whole wire of every target."""
    shared = SharedRunEventSurfaceProjector()
    deltas: list[str] = []
    wire: list[Any] = []
    for event in events:
        fan = shared.project(event)
        for target in SURFACE_TARGETS:
            wire.extend(surface_event_to_json(s) for s in fan.for_target(target))
        deltas.extend(
            str(s.data["delta"])
            for s in fan.for_target("cli")
            if s.type.value in ("text.delta", "reasoning.delta")
        )
    return deltas, json.dumps(wire)


@settings(max_examples=15, deadline=None)
@given(canary_trees, st.sampled_from(["model.text.delta", "model.reasoning.delta"]))
def test_no_canary_shows_when_split_across_two_deltas_at_any_position(data: Any, kind: str) -> None:
    text = json.dumps(data)
    at = text.index(MARK)
    # Every cut inside and around the first secret (its prefix "sk-test-" starts 8 before).
    for cut in range(max(0, at - 12), min(len(text), at + 40)):
        deltas, wire = _delivered_deltas(_split_stream([text[:cut], text[cut:]], kind))
        joined = "".join(deltas)
        assert MARK not in wire, (cut, deltas)
        assert MARK not in joined and "[REDACTED]" in joined


@settings(max_examples=40, deadline=None)
@given(canary_trees, st.lists(st.integers(0, 10_000), min_size=1, max_size=8))
def test_no_canary_shows_when_split_across_many_deltas(data: Any, cuts: list[int]) -> None:
    text = json.dumps(data)
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    deltas, wire = _delivered_deltas(_split_stream(pieces))
    assert MARK not in wire
    assert "[REDACTED]" in "".join(deltas)


@settings(max_examples=40, deadline=None)
@given(
    st.text(alphabet="abcdefghij ,.:=\n", max_size=60),
    st.lists(st.integers(0, 100), max_size=6),
)
def test_held_text_is_delivered_in_order_and_whole(text: str, cuts: list[int]) -> None:
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    deltas, _ = _delivered_deltas(_split_stream(pieces))
    assert "".join(deltas) == text  # nothing here is a secret: every character, in order
