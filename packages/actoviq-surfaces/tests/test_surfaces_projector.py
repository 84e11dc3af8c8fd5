"""RunEventSemanticProjector: rows 95, 96 of spec 03 §7.10 and the Q26 fix."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import attrs
import pytest
from surfaces_testkit import Stream, wire

from actoviq.events import RedactionError, RunEvent, SequentialIdFactory
from actoviq.surfaces import (
    ProjectorOptions,
    RunEventSemanticProjector,
    SurfaceEventIdentityCollisionError,
    SurfaceEventSchemaVersionError,
    SurfaceEventSequenceError,
    SurfaceEventTraceError,
    SurfaceEventValidationError,
    SurfaceRedaction,
    SurfaceSemanticCategory,
    SurfaceSemanticEvent,
    SurfaceSemanticType,
)

T = SurfaceSemanticType


def _types(events: list[SurfaceSemanticEvent]) -> list[str]:
    return [event.type.value for event in events]


def test_row_95_snapshots_reasoning_and_tool_input_rebuilt_from_deltas() -> None:
    stream = Stream()
    projector = RunEventSemanticProjector()
    out: list[SurfaceSemanticEvent] = []
    for kind, data in [
        ("run.started", {"agentId": "a"}),
        ("model.requested", {"turn": 1, "model": "p:m"}),
        ("model.reasoning.delta", {"delta": "check ", "outputIndex": 0, "opaque": "SIG-1"}),
        ("model.reasoning.delta", {"opaque": {"signature": "SIG-2"}}),
        ("model.reasoning.delta", {"delta": "facts", "outputIndex": 0}),
        ("model.text.delta", {"delta": "hello", "outputIndex": 1}),
        ("model.text.delta", {"delta": " world", "outputIndex": 1}),
        ("model.tool_call.delta", {"callId": "c1", "name": "search", "argumentsDelta": '{"query"'}),
        ("model.tool_call.delta", {"callId": "c1", "argumentsDelta": ':"sdk"}'}),
        ("model.completed", {"turn": 1, "finishReason": "tool_calls", "usage": {"requests": 1}}),
        ("tool.started", {"callId": "c1", "name": "search", "effect": "read"}),
    ]:
        out.extend(projector.project(stream.next(kind, data)))
    text = [e.data["snapshot"] for e in out if e.type is T.TEXT_DELTA]
    reasoning = [e.data["snapshot"] for e in out if e.type is T.REASONING_DELTA]
    # "hello" / "world" could still be the start of a secret until the next delta / the end.
    assert text == ["", "hello ", "hello world"]
    assert "".join(e.data["delta"] for e in out if e.type is T.TEXT_DELTA) == "hello world"  # type: ignore[misc]
    assert reasoning == ["check ", "check ", "check facts"]
    assert "SIG-" not in wire(out)
    started = next(e for e in out if e.type is T.TOOL_STARTED)
    assert started.data["input"] == {"query": "sdk"}
    assert started.data["publicName"] == "search"
    assert started.data["iteration"] == 1
    assert _types(out).count("usage") == 1


def test_q26_snapshots_do_not_accumulate_across_model_calls() -> None:
    stream = Stream()
    projector = RunEventSemanticProjector()
    snapshots: list[tuple[object, object]] = []
    script = [
        ("model.requested", {"turn": 1, "model": "p:m"}),
        ("model.text.delta", {"delta": "first "}),
        ("model.requested", {"turn": 2, "model": "p:m"}),
        ("model.text.delta", {"delta": "second"}),
        ("model.text.delta", {"delta": " call"}),
        ("model.completed", {"turn": 2}),
    ]
    for kind, data in script:
        for event in projector.project(stream.next(kind, data)):
            if event.type is T.TEXT_DELTA:
                snapshots.append((event.data["iteration"], event.data["snapshot"]))
    assert snapshots == [(1, "first "), (2, ""), (2, "second "), (2, "second call")]


def test_iteration_falls_back_to_a_counter_without_turns() -> None:
    stream = Stream()
    projector = RunEventSemanticProjector()
    first = projector.project(stream.next("model.requested", {}))
    second = projector.project(stream.next("request.started", {}))
    assert [first[0].data["iteration"], second[0].data["iteration"]] == [1, 2]


def test_row_96_replay_collision_regression_and_trace_errors() -> None:
    stream = Stream("root")
    projector = RunEventSemanticProjector()
    first = stream.next("run.started", {"agentId": "a"})
    assert len(projector.project(first)) == 1
    assert projector.project(first) == []  # exact replay
    assert projector.project(attrs.evolve(first)) == []  # an equal copy is a replay too
    with pytest.raises(SurfaceEventIdentityCollisionError) as collision:
        projector.project(attrs.evolve(first, data={"agentId": "other"}))
    assert collision.value.code == "SURFACE_EVENT_IDENTITY_COLLISION"
    with pytest.raises(SurfaceEventSequenceError):
        projector.project(attrs.evolve(first, event_id="fresh-id"))  # sequence 1 again
    child = stream.child("child")
    bad = attrs.evolve(child.next("run.started", {}), parent_span_id="f" * 16)
    with pytest.raises(SurfaceEventTraceError):
        projector.project(bad)
    with pytest.raises(SurfaceEventTraceError):
        projector.project(attrs.evolve(child.next("run.started", {}), trace_id="e" * 32))
    assert len(projector.project(child.next("run.started", {}))) == 1


def test_a_refused_event_leaves_no_trace() -> None:
    stream = Stream()
    projector = RunEventSemanticProjector()
    projector.project(stream.next("run.started", {}))
    event = stream.next("model.text.delta", {"delta": "x"})
    with pytest.raises(SurfaceEventTraceError):
        projector.project(attrs.evolve(event, span_id="a" * 16))
    assert projector.last_sequence("run-1") == 1
    assert len(projector.project(event)) == 1  # the valid event still goes through


def test_trace_context_cannot_change_within_a_run() -> None:
    stream = Stream()
    projector = RunEventSemanticProjector()
    projector.project(stream.next("run.started", {}))
    with pytest.raises(SurfaceEventTraceError, match="Trace context changed within run"):
        projector.project(attrs.evolve(stream.next("model.requested", {}), trace_id="d" * 32))


def test_late_parent_is_checked_against_its_children() -> None:
    stream = Stream("root")
    child = stream.child("child")
    projector = RunEventSemanticProjector()
    projector.project(child.next("run.started", {}))
    with pytest.raises(SurfaceEventTraceError, match="Late parent"):
        projector.project(attrs.evolve(stream.next("run.started", {}), span_id="c" * 16))
    assert len(projector.project(stream.next("run.started", {}))) == 1


def test_child_without_parent_span_is_refused() -> None:
    stream = Stream("root").child("child")
    event = stream.next("run.started", {})
    with pytest.raises(SurfaceEventTraceError, match="parentSpanId"):
        RunEventSemanticProjector().project(attrs.evolve(event, parent_span_id=None))


def _raw_event(**overrides: Any) -> RunEvent:
    # Envelopes built around the validators, as a buggy or hostile producer could.
    event = Stream().next("run.started", {})
    clone = object.__new__(RunEvent)
    for field in attrs.fields(RunEvent):
        object.__setattr__(clone, field.name, overrides.get(field.name, getattr(event, field.name)))
    return clone


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"schema_version": 2}, SurfaceEventSchemaVersionError),
        ({"event_id": " "}, SurfaceEventValidationError),
        ({"run_id": ""}, SurfaceEventValidationError),
        ({"type": ""}, SurfaceEventValidationError),
        ({"trace_id": ""}, SurfaceEventTraceError),
        ({"span_id": "  "}, SurfaceEventTraceError),
        ({"sequence": 0}, SurfaceEventSequenceError),
        ({"sequence": True}, SurfaceEventSequenceError),
        ({"sequence": 2**53}, SurfaceEventSequenceError),
    ],
)
def test_envelope_validation_is_typed(overrides: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        RunEventSemanticProjector().project(_raw_event(**overrides))


def test_not_a_run_event_is_refused() -> None:
    with pytest.raises(SurfaceEventValidationError):
        RunEventSemanticProjector().project({"type": "run.started"})  # type: ignore[arg-type]


def test_mapping_table_for_runtime_events() -> None:
    stream = Stream()
    projector = RunEventSemanticProjector()
    script: list[tuple[str, Any]] = [
        ("run.started", {"agentId": "a"}),
        ("session.loaded", {"sessionId": "s", "revision": "1", "itemCount": 0}),
        ("model.requested", {"turn": 1, "model": "p:m"}),
        ("model.usage", {"usage": {"requests": 1}}),
        ("model.response.completed", {"responseId": "r", "finishReason": "stop"}),
        ("model.completed", {"turn": 1, "finishReason": "stop", "usage": {"requests": 1}}),
        ("tool.started", {"callId": "c", "name": "t", "effect": "read"}),
        ("tool.failed", {"callId": "c", "name": "t", "failure": {"kind": "x", "message": "m"}}),
        ("run.interrupted", {"interruptionId": "i", "reason": "needs approval"}),
    ]
    out = [e for kind, data in script for e in projector.project(stream.next(kind, data))]
    assert [(e.type.value, e.category.value, e.phase) for e in out] == [
        ("run.started", "run", "started"),
        ("extension", "extension", "event"),
        ("request.started", "request", "started"),
        ("usage", "usage", "reported"),
        ("request.completed", "request", "completed"),
        ("model.completed", "model", "completed"),
        ("usage", "usage", "reported"),
        ("tool.started", "tool", "started"),
        ("tool.failed", "tool", "failed"),
        ("interruption.requested", "interruption", "run"),
        ("terminal", "terminal", "interrupted"),
    ]
    assert out[1].data["producerType"] == "session.loaded"
    failed = out[8]
    assert failed.data["isError"] is True and failed.data["outputText"] == "m"
    assert failed.data["effect"] == "read"  # merged from the started record
    assert [e.projection_index for e in out[9:]] == [0, 1]
    assert out[10].semantic_id == f"{out[10].source_event_id}:1"


@pytest.mark.parametrize(
    ("kind", "data", "expected"),
    [
        ("run.cancelled", {"reason": "stop"}, ["interruption.cancelled", "terminal"]),
        (
            "run.failed",
            {"error": {"name": "RunError", "message": "m", "code": "X"}},
            ["error", "terminal"],
        ),
        ("run.completed", {"status": "completed", "usage": {"requests": 1}}, ["terminal", "usage"]),
        ("run.resumed", {"agentId": "a"}, ["run.resumed"]),
        ("tool.rejected", {"callId": "c", "name": "t"}, ["tool.rejected"]),
        ("model.refusal.delta", {"delta": "no"}, ["model.content"]),
    ],
)
def test_terminal_and_other_types(kind: str, data: Any, expected: list[str]) -> None:
    out = RunEventSemanticProjector().project(Stream().next(kind, data))
    assert _types(out) == expected
    if kind == "run.failed":
        assert out[0].data == {"message": "m", "code": "X", "name": "RunError"}
        assert out[1].data == {"status": "failed", "error": out[0].data}


def test_extensions_can_be_switched_off() -> None:
    projector = RunEventSemanticProjector(ProjectorOptions(include_extensions=False))
    assert projector.project(Stream().next("session.loaded", {"sessionId": "s"})) == []


def test_surface_redaction_applies_to_every_semantic() -> None:
    stream = Stream()
    projector = RunEventSemanticProjector(
        ProjectorOptions(
            redaction=SurfaceRedaction(replacement="<x>", additional_sensitive_keys=("ssn",))
        )
    )
    out = projector.project(
        stream.next("model.text.delta", {"delta": "key sk-proj-abcdefghij0123"})
    )
    out += projector.project(stream.next("custom.thing", {"ssn": "1", "note": "Bearer abc.def"}))
    text = wire(out)
    assert "abcdefghij0123" not in text and "abc.def" not in text and '"1"' not in text
    assert "<x>" in text


def test_tool_input_from_length_only_deltas_and_completed_arguments() -> None:
    # The runtime's fail-closed default: no raw argument text, the whole arguments at the end.
    stream = Stream()
    projector = RunEventSemanticProjector()
    first = projector.project(
        stream.next(
            "model.tool_call.delta", {"callId": "c1", "name": "login", "argumentsLength": 12}
        )
    )
    assert first[0].data["snapshot"] == "" and "input" not in first[0].data
    done = projector.project(
        stream.next(
            "model.tool_call.delta",
            {"callId": "c1", "arguments": {"user": "ann", "password": "pw-CANARY"}},
        )
    )
    assert done[0].data["input"] == {"user": "ann", "password": "[REDACTED]"}
    started = projector.project(stream.next("tool.started", {"callId": "c1", "name": "login"}))
    assert started[0].data["input"] == {"user": "ann", "password": "[REDACTED]"}
    assert "CANARY" not in wire(done + started)


def test_tool_input_from_raw_deltas_never_shows_partial_text_by_default() -> None:
    stream = Stream()
    projector = RunEventSemanticProjector()
    parts = ['{"api_key": "sk-', 'CANARY1234567"', ', "q": "x"}']
    out = [
        e
        for part in parts
        for e in projector.project(
            stream.next("model.tool_call.delta", {"callId": "c", "argumentsDelta": part})
        )
    ]
    assert [e.data["delta"] for e in out] == ["", "", ""]
    assert [e.data["snapshot"] for e in out][:2] == ["", ""]
    assert json.loads(str(out[2].data["snapshot"])) == {"api_key": "[REDACTED]", "q": "x"}
    assert out[2].data["argumentsLength"] == sum(len(part) for part in parts)
    assert "CANARY" not in wire(out)


def test_raw_tool_input_deltas_are_opt_in_and_scanned() -> None:
    stream = Stream()
    projector = RunEventSemanticProjector(ProjectorOptions(raw_tool_input_deltas=True))
    out = projector.project(
        stream.next(
            "model.tool_call.delta", {"callId": "c", "argumentsDelta": '{"q": "Bearer abcd.ef'}
        )
    )
    assert out[0].data["delta"] == '{"q": "Bearer [REDACTED]'
    assert out[0].data["snapshot"] == '{"q": "Bearer [REDACTED]'


def test_tool_started_input_wins_and_is_redacted() -> None:
    stream = Stream()
    out = RunEventSemanticProjector().project(
        stream.next("tool.started", {"callId": "c", "name": "t", "input": {"token": "t-1"}})
    )
    assert out[0].data["input"] == {"token": "[REDACTED]"}


def test_tool_durations_are_derived_from_timestamps() -> None:
    stream = Stream()
    projector = RunEventSemanticProjector()
    projector.project(stream.next("tool.started", {"callId": "c", "name": "t"}))
    stream.clock.advance(timedelta(seconds=1.5))
    out = projector.project(stream.next("tool.completed", {"callId": "c", "name": "t"}))
    assert 1500 <= float(out[0].data["durationMs"]) <= 1502  # type: ignore[arg-type]
    assert out[0].data["isError"] is False


def test_snapshots_are_a_bounded_tail() -> None:
    stream = Stream()
    projector = RunEventSemanticProjector(ProjectorOptions(max_snapshot_chars=8))
    snaps = [
        projector.project(stream.next("model.text.delta", {"delta": part}))[0].data
        for part in ["abcde ", "fghi ", "klm "]
    ]
    assert snaps[0] == {"delta": "abcde ", "snapshot": "abcde ", "outputIndex": 0, "iteration": 0}
    # Past the limit the front is cut down to half the limit: "abcde fghi " keeps "ghi ".
    assert snaps[1]["snapshot"] == "ghi " and snaps[1]["snapshotOffset"] == 7
    assert snaps[2]["snapshot"] == "ghi klm " and snaps[2]["snapshotOffset"] == 7
    for snap in snaps:
        assert len(str(snap["snapshot"])) <= 8


def test_runs_beyond_max_runs_are_forgotten_oldest_first() -> None:
    projector = RunEventSemanticProjector(ProjectorOptions(max_runs=2))
    ids = SequentialIdFactory()
    streams = [Stream(f"r{index}", ids=ids) for index in range(3)]
    for stream in streams:
        projector.project(stream.next("run.started", {}))
    assert [projector.last_sequence(f"r{index}") for index in range(3)] == [0, 1, 1]


def test_redaction_failure_is_fail_closed_and_forgets_the_event() -> None:
    stream = Stream()
    projector = RunEventSemanticProjector()
    deep: Any = "x"
    for _ in range(100):
        deep = [deep]
    event = stream.next("custom.deep", {"value": deep})
    with pytest.raises(RedactionError):
        projector.project(event)
    assert projector.last_sequence("run-1") == 0


def test_reset_forgets_everything() -> None:
    stream = Stream()
    projector = RunEventSemanticProjector()
    event = stream.next("run.started", {})
    projector.project(event)
    projector.reset()
    assert len(projector.project(event)) == 1


def test_options_are_validated() -> None:
    with pytest.raises(SurfaceEventValidationError):
        ProjectorOptions(dedupe_window_size=0)
    with pytest.raises(SurfaceEventValidationError):
        ProjectorOptions(max_snapshot_chars=True)


def test_categories_follow_types() -> None:
    out = RunEventSemanticProjector().project(Stream().next("model.text.delta", {"delta": "x"}))
    assert out[0].category is SurfaceSemanticCategory.TEXT
