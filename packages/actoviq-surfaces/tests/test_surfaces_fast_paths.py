"""The projector's per-delta fast paths behave exactly as the checked paths they shortcut.

* ``build_unchecked`` (and the inlined copy on the text-delta path) gives an event equal to the
  validating constructor's, frozen, hashable as before, copyable, picklable;
* the identity window remembers a runtime text delta as a tuple of its values: an exact replay
  is still dropped and any difference is still a collision, as ``RunEvent.__eq__`` decides;
* the text block of the last delta is remembered per run: deltas to other blocks, a new model
  call and the run's end never write into a stale block.
"""

from __future__ import annotations

import copy
import pickle
import weakref
from typing import Any, cast

import attrs
import pytest
from surfaces_testkit import Stream

from actoviq.events import RunEvent
from actoviq.surfaces import (
    ProjectorOptions,
    RunEventSemanticProjector,
    SurfaceEventIdentityCollisionError,
    SurfaceEventValidationError,
    SurfaceSemanticCategory,
    SurfaceSemanticEvent,
    SurfaceSemanticType,
    surface_event_from_json,
    surface_event_to_json,
)
from actoviq.surfaces.types import build_unchecked


def _fields(event: SurfaceSemanticEvent) -> dict[str, Any]:
    return {field.name: getattr(event, field.name) for field in attrs.fields(SurfaceSemanticEvent)}


def _delta_semantic() -> SurfaceSemanticEvent:
    stream = Stream("fast")
    projector = RunEventSemanticProjector()
    projector.project(stream.next("model.requested", {"turn": 1, "model": "p:m"}))
    projector.project(stream.next("model.text.delta", {"delta": "one ", "outputIndex": 0}))
    (semantic,) = projector.project(
        stream.next("model.text.delta", {"delta": "two ", "outputIndex": 0})
    )
    return semantic


@pytest.mark.parametrize("source", ["build_unchecked", "projector"])
def test_trusted_construction_equals_the_validating_constructor(source: str) -> None:
    if source == "projector":
        event = _delta_semantic()
    else:
        event = build_unchecked(
            "e1", "model.text.delta", 0, 3, "r1", None, "0" * 32, "1" * 16, None,
            "2026-01-01T00:00:00.000Z", SurfaceSemanticType.TEXT_DELTA,
            SurfaceSemanticCategory.TEXT, "delta", {"delta": "hi"},
        )  # fmt: skip
    checked = SurfaceSemanticEvent(**_fields(event))
    assert type(event) is SurfaceSemanticEvent
    assert event == checked and repr(event) == repr(checked)
    assert surface_event_from_json(surface_event_to_json(event)) == event
    assert pickle.loads(pickle.dumps(event)) == event
    assert copy.deepcopy(event) == event and attrs.evolve(event) == event
    assert weakref.ref(event)() is event
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        event.sequence = 99  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        del event.data  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(event)  # data is a dict, as for an event built by the constructor


def test_the_public_constructor_still_validates() -> None:
    fields = _fields(_delta_semantic())
    for change, field in (({"sequence": 0}, "sequence"), ({"type": "not.a.type"}, "type")):
        changed: dict[str, Any] = {**fields, **change}
        with pytest.raises(SurfaceEventValidationError, match=field):
            SurfaceSemanticEvent(**changed)


def _stream_with_delta(data: dict[str, Any]) -> tuple[RunEventSemanticProjector, RunEvent]:
    stream = Stream("window")
    projector = RunEventSemanticProjector()
    projector.project(stream.next("model.requested", {"turn": 1, "model": "p:m"}))
    event = stream.next("model.text.delta", data)
    assert projector.project(event)
    return projector, event


@pytest.mark.parametrize("data", [{"delta": "a "}, {"delta": "a ", "outputIndex": 1}])
def test_an_exact_replay_of_a_remembered_delta_is_dropped(data: dict[str, Any]) -> None:
    projector, event = _stream_with_delta(data)
    assert projector.project(event) == []
    assert projector.project(attrs.evolve(event, data=dict(data))) == []  # equal, not identical


@pytest.mark.parametrize(
    "change",
    [
        {"data": {"delta": "b "}},
        {"data": {"delta": "a ", "outputIndex": 0}},  # an index the original did not carry
        {"data": {"delta": "a ", "outputIndex": None}},
        {"data": {"delta": "a ", "extra": 1}},
        {"data": {"delta": "a "}, "type": "model.reasoning.delta"},
        {"timestamp": "2030-01-01T00:00:00.000Z"},
        {"sequence": 99},
    ],
)
def test_any_difference_from_a_remembered_delta_is_a_collision(change: dict[str, Any]) -> None:
    projector, event = _stream_with_delta({"delta": "a "})
    with pytest.raises(SurfaceEventIdentityCollisionError):
        projector.project(attrs.evolve(event, **change))


def test_the_last_block_is_never_reused_for_another_block_call_or_run_end() -> None:
    stream = Stream("blocks")
    projector = RunEventSemanticProjector()

    def snapshot(data: dict[str, Any]) -> object:
        (semantic,) = projector.project(stream.next("model.text.delta", data))
        return semantic.data["snapshot"]

    projector.project(stream.next("model.requested", {"turn": 1, "model": "p:m"}))
    assert snapshot({"delta": "a ", "outputIndex": 0}) == "a "
    assert snapshot({"delta": "b ", "outputIndex": 1}) == "b "
    assert snapshot({"delta": "c ", "outputIndex": 0}) == "a c "
    assert snapshot({"delta": "d "}) == "a c d "  # no index is block 0
    projector.project(stream.next("model.requested", {"turn": 2, "model": "p:m"}))
    assert snapshot({"delta": "e ", "outputIndex": 0}) == "e "
    projector.project(stream.next("run.interrupted", {}))
    projector.project(stream.next("run.resumed", {}))
    assert snapshot({"delta": "f ", "outputIndex": 0}) == "f "


def test_checked_and_fast_paths_agree_on_one_block() -> None:
    # The first delta of an unknown run takes the checked path (it registers the run); the
    # next ones take the fast path. Both feed one snapshot and one identity window.
    stream = Stream("paths")
    projector = RunEventSemanticProjector()
    first = stream.next("model.text.delta", {"delta": "one "})
    second = stream.next("model.text.delta", {"delta": "two "})
    assert [s.data["snapshot"] for s in projector.project(first)] == ["one "]
    assert [s.data["snapshot"] for s in projector.project(second)] == ["one two "]
    assert projector.project(first) == [] and projector.project(second) == []
    for event in (first, second):
        with pytest.raises(SurfaceEventIdentityCollisionError):
            projector.project(attrs.evolve(event, data={"delta": "other "}))


def _checked_copy(event: RunEvent) -> RunEvent:
    """The same event as an instance of a subclass: the projector's checked path takes it."""
    checked_class = type("CheckedDelta", (type(event),), {"__slots__": ()})
    copy_: Any = object.__new__(checked_class)
    for field in attrs.fields(RunEvent):
        object.__setattr__(copy_, field.name, getattr(event, field.name))
    return copy_


_DELTA_SHAPES: list[dict[str, Any]] = [
    {"delta": "The "},
    {"delta": "runtime ", "outputIndex": 0},
    {"delta": "the key is api_key= "},  # held back: a value may follow
    {"delta": "ak-CANARY-0123456789 and ", "outputIndex": 0},
    {"delta": '{"password": "hunter2"} '},  # a JSON opener: redacted by key
    {"delta": "other block ", "outputIndex": 1},
    {"delta": "odd index ", "outputIndex": -1},
    {"delta": "bool index ", "outputIndex": True},
    {"delta": "text index ", "outputIndex": "2"},
    {"delta": "null index ", "outputIndex": None},
    {"delta": "extra key ", "extra": 1},
    {"delta": 7},
    {},
    {"delta": "word "},
]


def test_fast_and_checked_paths_give_the_same_events_and_errors() -> None:
    # Every shape, many times over (the snapshot bound is small, so it is cut repeatedly and
    # ``snapshotOffset`` appears), with replays and collisions in between: the fast path and the
    # checked path (fed the same events as a subclass instance) agree on every result.
    stream = Stream("agree")
    options = ProjectorOptions(max_snapshot_chars=64)
    fast, checked = RunEventSemanticProjector(options), RunEventSemanticProjector(options)
    first = stream.next("model.requested", {"turn": 1, "model": "p:m"})
    assert fast.project(first) == checked.project(first)
    offsets = 0
    for _ in range(6):
        for data in _DELTA_SHAPES:
            event = stream.next("model.text.delta", data)
            results: list[object] = []
            for projector, given in ((fast, event), (checked, _checked_copy(event))):
                outcome: list[object] = []
                for attempt in (given, given, attrs.evolve(given, data={"delta": "x "})):
                    try:
                        outcome.append(projector.project(attempt))
                    except SurfaceEventIdentityCollisionError as error:
                        outcome.append(error.code)
                results.append(outcome)
            assert results[0] == results[1], data
            offsets += sum(
                "snapshotOffset" in semantic.data
                for semantic in cast(list[SurfaceSemanticEvent], cast(list[object], results[0])[0])
            )
    assert offsets
    assert fast.last_sequence(first.run_id) == checked.last_sequence(first.run_id)


def test_a_forgotten_run_is_never_served_from_the_last_run_shortcut() -> None:
    # The projector remembers the run of the last text delta (by its id object). Once the run
    # is forgotten (``max_runs`` evicts it, or ``reset``), its next delta starts a new state.
    first = Stream("first")
    second = Stream("second", ids=first.ids)
    projector = RunEventSemanticProjector(ProjectorOptions(max_runs=1))

    def snapshot(stream: Stream, text: str) -> object:
        (semantic,) = projector.project(stream.next("model.text.delta", {"delta": text}))
        return semantic.data["snapshot"]

    assert snapshot(first, "a ") == "a " and snapshot(first, "b ") == "a b "
    projector.project(second.next("model.requested", {"turn": 1, "model": "p:m"}))  # evicts
    assert projector.last_sequence(first.context.run_id) == 0
    assert snapshot(first, "c ") == "c "  # evicts ``second`` in turn
    assert snapshot(first, "d ") == "c d "
    projector.reset()
    assert snapshot(first, "e ") == "e "
