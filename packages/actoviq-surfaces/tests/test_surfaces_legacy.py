"""Legacy adapters and the shared projector: rows 92-94, 97, 99 and Q25, Q27 of spec 03."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from surfaces_testkit import SECRETS, SIGNATURE, STACK, Stream, legacy_fixture, wire

from actoviq.events import (
    RunEvent,
    SequentialIdFactory,
    TraceContext,
    create_root_trace_context,
    run_event_to_json,
)
from actoviq.surfaces import (
    LEGACY_AGENT_EVENT_TYPES,
    SURFACE_TARGETS,
    LegacyAdapterOptions,
    LegacyAgentEventRunEventAdapter,
    LegacyEventError,
    LegacyEventIdentityCollisionError,
    LegacyRunContextError,
    LegacySurfaceEventPipeline,
    RunEventLegacyCompatAdapter,
    SharedRunEventSurfaceProjector,
    SurfaceSemanticEvent,
    SurfaceTargetError,
    legacy_run_event_payload,
)


def _adapter() -> LegacyAgentEventRunEventAdapter:
    return LegacyAgentEventRunEventAdapter(LegacyAdapterOptions(ids=SequentialIdFactory()))


def test_row_92_interleaved_parent_and_child_sequences() -> None:
    adapter = _adapter()
    parent = adapter.register_root_run("parent")
    child_events = [
        {
            "type": "response.text.delta",
            "runId": "child",
            "parentRunId": "parent",
            "timestamp": 1000 + index,
            "iteration": 1,
            "delta": str(index),
            "snapshot": str(index),
        }
        for index in range(3)
    ]
    parent_events = [
        {
            "type": "request.started",
            "runId": "parent",
            "timestamp": 2000 + index,
            "iteration": index + 1,
        }
        for index in range(3)
    ]
    adapted: list[RunEvent] = []
    for child, parent_event in zip(child_events, parent_events, strict=True):
        for legacy in (child, parent_event):
            event = adapter.adapt(legacy)
            assert event is not None
            adapted.append(event)
    by_run: dict[str, list[int]] = {}
    for event in adapted:
        assert event.schema_version == 1 and event.event_id
        by_run.setdefault(event.run_id, []).append(event.sequence)
    assert by_run == {"child": [1, 2, 3], "parent": [1, 2, 3]}
    assert adapter.get_last_sequence("child") == 3 == adapter.get_last_sequence("parent")
    assert adapter.get_last_sequence("nobody") == 0
    child_context = adapter.get_run_context("child")
    assert child_context is not None
    assert child_context.parent_run_id == "parent"
    assert child_context.trace_id == parent.trace_id
    assert child_context.parent_span_id == parent.span_id
    assert adapter.adapt(child_events[0]) is None  # the same object again
    assert adapted[0].timestamp == "2026-01-01T00:00:01.000Z" or adapted[0].timestamp.endswith("Z")


def test_row_93_adapted_stream_is_redacted_and_sources_untouched() -> None:
    fixture = legacy_fixture()
    before = copy.deepcopy(fixture)
    adapted = _adapter().adapt_many(fixture)
    text = json.dumps([run_event_to_json(event) for event in adapted])
    for secret in SECRETS:
        assert secret not in text, secret
    assert "C:\\\\Users" not in text and "agent.ts" not in text
    assert "[REDACTED]" in text
    assert fixture == before
    assert len(adapted) == len(fixture)


def test_q25_identical_distinct_events_are_both_adapted() -> None:
    adapter = _adapter()
    one = {"type": "response.text.delta", "runId": "r", "timestamp": 5, "delta": "a"}
    twin = dict(one)
    assert adapter.adapt(one) is not None
    assert adapter.adapt(twin) is not None  # same payload and millisecond, another event
    assert adapter.adapt(one) is None  # the same object is a replay
    assert adapter.get_last_sequence("r") == 2


def test_q25_explicit_ids_dedupe_and_collide() -> None:
    adapter = LegacyAgentEventRunEventAdapter(
        LegacyAdapterOptions(identity_key=lambda event: event.get("offset"))
    )
    first = {"type": "workflow.log", "runId": "r", "timestamp": 1, "message": "a", "offset": "7"}
    assert adapter.adapt(first) is not None
    assert adapter.adapt(dict(first)) is None  # same transport identity, same payload
    with pytest.raises(LegacyEventIdentityCollisionError):
        adapter.adapt({**first, "message": "b"})
    embedded = {"type": "workflow.log", "runId": "r", "timestamp": 1, "eventId": "e-1"}
    adapted = adapter.adapt(embedded)
    assert adapted is not None and adapted.event_id == "e-1"
    assert adapter.adapt(dict(embedded)) is None
    mutated = {"type": "workflow.log", "runId": "r", "timestamp": 2, "message": "m"}
    assert adapter.adapt(mutated) is not None
    mutated["message"] = "changed"
    with pytest.raises(LegacyEventIdentityCollisionError):
        adapter.adapt(mutated)


def test_thinking_signature_is_dropped_at_adaptation() -> None:
    event = {
        "type": "response.thinking.delta",
        "runId": "r",
        "timestamp": 1,
        "iteration": 1,
        "index": 0,
        "delta": "d",
        "snapshot": "d",
        "signature": SIGNATURE,
    }
    kind, data = legacy_run_event_payload(event)
    assert kind == "model.reasoning.delta" and "signature" not in data


@pytest.mark.parametrize("legacy_type", LEGACY_AGENT_EVENT_TYPES)
def test_every_legacy_type_is_adapted(legacy_type: str) -> None:
    event: dict[str, Any] = {
        "type": legacy_type,
        "runId": "r",
        "timestamp": "2026-01-01T00:00:00Z",
        "extra": {"password": "pw"},
    }
    adapted = _adapter().adapt(event)
    assert adapted is not None
    assert "pw" not in json.dumps(run_event_to_json(adapted))
    projected = SharedRunEventSurfaceProjector().project(adapted)
    assert len(LEGACY_AGENT_EVENT_TYPES) == 37
    empty_delta = legacy_type in {"response.text.delta", "response.thinking.delta"}
    assert bool(projected.semantics) is not empty_delta  # a delta without text shows nothing
    expected_prefix = (
        "legacy."
        if legacy_type
        in {
            "request.prompt_cache",
            "checkpoint.created",
            "checkpoint.restore.requested",
            "checkpoint.restore.completed",
            "checkpoint.restore.conflicted",
            "sandbox.applied",
            "sandbox.degraded",
            "sandbox.violation",
            "hook.lifecycle",
            "agent.execution",
            "workflow.start",
            "step.start",
            "step.done",
            "workflow.done",
            "workflow.script.start",
            "workflow.phase.start",
            "workflow.agent.start",
            "workflow.agent.done",
            "workflow.log",
            "workflow.script.done",
        }
        else ""
    )
    if expected_prefix:
        assert adapted.type == f"legacy.{legacy_type}"
        assert adapted.data == {"extra": {"password": "[REDACTED]"}}
    else:
        assert not adapted.type.startswith("legacy.")


def test_tool_result_errors_map_to_tool_failed() -> None:
    event = {
        "type": "tool.result",
        "runId": "r",
        "timestamp": 1,
        "iteration": 1,
        "result": {"id": "c", "name": "t", "isError": True, "outputText": "boom"},
    }
    assert legacy_run_event_payload(event)[0] == "tool.failed"


@pytest.mark.parametrize(
    "bad",
    [
        "not a mapping",
        {"runId": "r", "timestamp": 1},
        {"type": " ", "runId": "r", "timestamp": 1},
        {"type": "error", "timestamp": 1},
        {"type": "error", "runId": "r", "timestamp": [1]},
        {"type": "error", "runId": "r", "timestamp": float("nan")},
    ],
)
def test_malformed_legacy_events_are_typed(bad: Any) -> None:
    with pytest.raises(LegacyEventError):
        _adapter().adapt(bad)


def test_run_context_rules() -> None:
    ids = SequentialIdFactory(start=10)
    adapter = LegacyAgentEventRunEventAdapter(LegacyAdapterOptions(ids=ids))
    child = adapter.register_child_run("kid", "mum")  # creates the parent's state
    mum = adapter.get_run_context("mum")
    assert mum is not None and child.trace_id == mum.trace_id
    assert adapter.register_run(child) == child  # idempotent
    with pytest.raises(LegacyRunContextError, match="cannot change after registration"):
        adapter.register_run(TraceContext(run_id="kid", trace_id="a" * 32, span_id="b" * 16))
    with pytest.raises(LegacyRunContextError):
        adapter.register_root_run("x", trace_id="not-hex")
    orphan = TraceContext(
        run_id="o", trace_id="a" * 32, span_id="b" * 16, parent_run_id="p", parent_span_id="c" * 16
    )
    adapter.register_run(orphan)
    with pytest.raises(LegacyRunContextError, match="must inherit"):
        adapter.register_run(TraceContext(run_id="p", trace_id="d" * 32, span_id="c" * 16))


def test_legacy_events_carrying_trace_fields_keep_them() -> None:
    root = create_root_trace_context("carrier")
    adapter = _adapter()
    event = {
        "type": "workflow.log",
        "runId": "carrier",
        "timestamp": 1,
        "traceId": root.trace_id,
        "spanId": root.span_id,
    }
    adapted = adapter.adapt(event)
    assert adapted is not None
    assert (adapted.trace_id, adapted.span_id) == (root.trace_id, root.span_id)


def _shared_run() -> tuple[list[Any], list[SurfaceSemanticEvent]]:
    projector = SharedRunEventSurfaceProjector()
    fans: list[Any] = []
    semantics: list[SurfaceSemanticEvent] = []
    for event in _adapter().adapt_many(legacy_fixture()):
        fan = projector.project(event)
        fans.append(fan)
        semantics.extend(fan.semantics)
    return fans, semantics


def test_row_94_shared_projection_copies_and_coverage() -> None:
    fans, semantics = _shared_run()
    for fan in fans:
        for target in SURFACE_TARGETS:
            copies = fan.for_target(target)
            assert copies == fan.semantics
            for mine, theirs in zip(copies, fan.semantics, strict=True):
                assert mine is not theirs and mine.data is not theirs.data
    categories = {event.category.value for event in semantics}
    assert categories == {
        "run",
        "request",
        "model",
        "text",
        "reasoning",
        "tool",
        "compaction",
        "interruption",
        "error",
        "terminal",
        "usage",
        "extension",
    }
    assert categories - {"extension"} == {
        "run",
        "request",
        "model",
        "text",
        "reasoning",
        "tool",
        "compaction",
        "interruption",
        "error",
        "terminal",
        "usage",
    }
    tool_phases = {e.phase for e in semantics if e.category.value == "tool"}
    assert {"input", "started", "progress", "completed"} <= tool_phases
    scopes = {str(e.data.get("scope")) for e in semantics if e.type.value == "compaction.completed"}
    assert scopes == {"session", "conversation"}
    statuses = {str(e.data.get("status")) for e in semantics if e.type.value == "terminal"}
    assert statuses == {"completed", "failed"}
    assert any(e.type.value == "usage" and e.data["scope"] == "run" for e in semantics)
    assert SIGNATURE not in wire(semantics) and "signature" not in wire(semantics)


def test_row_94_mutating_one_target_leaves_the_others() -> None:
    projector = SharedRunEventSurfaceProjector()
    fan = projector.project(
        Stream().next("tool.started", {"callId": "c", "name": "t", "input": {"q": [1, 2]}})
    )
    fan.cli[0].data["input"]["q"].append(3)  # type: ignore[index, union-attr]
    assert fan.tui[0].data["input"] == {"q": [1, 2]}
    assert fan.semantics[0].data["input"] == {"q": [1, 2]}


def test_row_94_replaying_the_first_event_gives_five_empty_lists() -> None:
    projector = SharedRunEventSurfaceProjector()
    first = _adapter().adapt_many(legacy_fixture())[0]
    assert projector.project(first).semantics
    again = projector.project(first)
    assert (again.semantics, again.cli, again.tui, again.gui, again.bridge) == ((),) * 5


def test_row_97_compat_round_trip_has_zero_omissions() -> None:
    compat = RunEventLegacyCompatAdapter()
    events: list[dict[str, Any]] = []
    for adapted in _adapter().adapt_many(legacy_fixture()):
        report = compat.adapt_with_report(adapted)
        assert report.omitted == (), report.omitted
        events.extend(report.events)
    types = {event["type"] for event in events}
    assert {
        "run.started",
        "request.started",
        "response.text.delta",
        "response.thinking.delta",
        "response.tool_input.delta",
        "response.content",
        "model.fallback",
        "tool.call",
        "tool.progress",
        "tool.result",
        "conversation.compacted",
        "session.compacted",
        "request.interrupted",
        "response.completed",
        "error",
    } <= types
    thinking = [e for e in events if e["type"] == "response.thinking.delta"]
    assert thinking and all("signature" not in e for e in thinking)
    call = next(e for e in events if e["type"] == "tool.call")
    assert call["call"]["input"]["password"] == "[REDACTED]"
    error = next(e for e in events if e["type"] == "error")
    assert "stack" not in error["error"] and "hunter2" not in error["error"]["message"]
    assert "[REDACTED]" in error["error"]["message"]
    assert error["error"]["code"] == "UPSTREAM"
    assert STACK not in json.dumps(events)


def test_q27_runtime_run_started_is_mapped_with_the_requested_model() -> None:
    stream = Stream()
    compat = RunEventLegacyCompatAdapter()
    assert compat.adapt_with_report(stream.next("run.started", {"agentId": "a"})).events == ()
    report = compat.adapt_with_report(
        stream.next("model.requested", {"turn": 1, "model": {"provider": "p", "model": "m-1"}})
    )
    assert report.omitted == ()
    assert [e["type"] for e in report.events] == ["run.started", "request.started"]
    assert report.events[0]["model"] == "m-1" and report.events[0]["input"] == ""


def test_q27_a_run_without_model_request_reports_the_omission() -> None:
    stream = Stream()
    compat = RunEventLegacyCompatAdapter()
    compat.adapt(stream.next("run.started", {"agentId": "a"}))
    report = compat.adapt_with_report(stream.next("run.cancelled", {"reason": "queued"}))
    assert [o.semantic_type for o in report.omitted] == ["run.started", "interruption.cancelled"]


def test_compat_runtime_tool_events() -> None:
    stream = Stream()
    compat = RunEventLegacyCompatAdapter()
    started = compat.adapt(stream.next("tool.started", {"callId": "c", "name": "t"}))
    assert started[0]["call"]["provider"] == "local"
    failed = compat.adapt(
        stream.next("tool.failed", {"callId": "c", "name": "t", "failure": {"message": "boom"}})
    )
    assert failed[0]["result"]["isError"] is True and failed[0]["result"]["outputText"] == "boom"


def test_row_99_pipeline_projects_for_each_target() -> None:
    fixture = legacy_fixture()
    for target in ("tui", "gui", "bridge"):
        pipeline = LegacySurfaceEventPipeline(
            legacy=LegacyAdapterOptions(ids=SequentialIdFactory())
        )
        out = [e for event in fixture for e in pipeline.project_for(event, target)]
        assert out and out[0].type.value == "run.started"
        assert pipeline.project_for(fixture[0], target) == ()
        pipeline.reset()
        assert pipeline.project_for(fixture[0], target)
    with pytest.raises(SurfaceTargetError):
        LegacySurfaceEventPipeline().project_for(fixture[0], "web")  # type: ignore[arg-type]
