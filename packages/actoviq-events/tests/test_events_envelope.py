from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from actoviq.core import dumps_compact
from actoviq.events import (
    EVENT_TYPES,
    SCHEMA_VERSION,
    EventSchemaVersionError,
    EventValidationError,
    ManualClock,
    RandomIdFactory,
    RunEvent,
    RunEventSequencer,
    RunStartedData,
    SequentialIdFactory,
    TraceContext,
    create_child_trace_context,
    create_root_trace_context,
    current_trace_context,
    error_data,
    is_terminal_event_type,
    register_event_type,
    run_event_from_json,
    run_event_to_json,
    run_events_from_json,
    run_events_to_json,
    use_trace_context,
)

GOLDEN = Path(__file__).parent / "data" / "golden_run_events.json"


def _event(**overrides: Any) -> RunEvent:
    fields: dict[str, Any] = {
        "event_id": "e1",
        "sequence": 1,
        "run_id": "r1",
        "trace_id": "a" * 32,
        "span_id": "b" * 16,
        "type": "run.started",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "data": {"agentId": "x"},
    }
    fields.update(overrides)
    return RunEvent(**fields)


def test_wire_format_is_camel_case_and_omits_absent_parents() -> None:
    wire = run_event_to_json(_event())
    assert list(wire) == [
        "schemaVersion",
        "eventId",
        "sequence",
        "runId",
        "traceId",
        "spanId",
        "type",
        "timestamp",
        "data",
    ]
    child = run_event_to_json(_event(parent_run_id="root", parent_span_id="c" * 16))
    assert child["parentRunId"] == "root"
    assert child["parentSpanId"] == "c" * 16


def test_round_trip_through_json_text() -> None:
    event = _event(parent_run_id="root", parent_span_id="c" * 16, data=[1, None, {"a": True}])
    text = dumps_compact(run_event_to_json(event))
    assert run_event_from_json(text) == event
    assert run_events_from_json(run_events_to_json([event, event])) == [event, event]


def test_null_data_is_present_on_the_wire() -> None:
    wire = run_event_to_json(_event(data=None))
    assert "data" in wire
    assert wire["data"] is None


def test_repr_never_shows_data() -> None:
    assert "sk-secret" not in repr(_event(data={"apiKey": "sk-secret"}))


def test_unknown_schema_version_is_refused() -> None:
    wire = run_event_to_json(_event())
    wire["schemaVersion"] = 2
    with pytest.raises(EventSchemaVersionError):
        run_event_from_json(wire)
    del wire["schemaVersion"]
    with pytest.raises(EventSchemaVersionError):
        run_event_from_json(wire)


def test_invalid_envelopes_raise_typed_errors() -> None:
    with pytest.raises(EventValidationError):
        _event(sequence=0)
    with pytest.raises(EventValidationError):
        _event(run_id="")
    wire = run_event_to_json(_event())
    wire["extra"] = 1
    with pytest.raises(EventValidationError):
        run_event_from_json(wire)
    with pytest.raises(EventValidationError):
        run_event_from_json([1])
    bad_data = run_event_to_json(_event())
    bad_data["data"] = cast(Any, {"x": float("nan")})
    with pytest.raises(TypeError):  # JsonValueError
        run_event_from_json(bad_data)


@pytest.mark.oracle
def test_golden_run_event_envelopes_load_and_dump_identically() -> None:
    golden = json.loads(GOLDEN.read_text("utf-8"))
    count = 0
    for scenario in golden["scenarios"]:
        for leg in scenario["legs"]:
            for wire in leg["events"]:
                event = run_event_from_json(wire)
                assert run_event_to_json(event) == wire
                assert event.type in EVENT_TYPES
                count += 1
    assert count > 40


def test_sequencer_continues_after_committed_sequence_for_a_child_run() -> None:
    ids = SequentialIdFactory()
    root = create_root_trace_context("root", ids=ids)
    child = create_child_trace_context("child", parent=root, ids=ids)
    sequencer = RunEventSequencer(child, 4, ids=ids, clock=ManualClock())
    first = sequencer.next("run.started", RunStartedData(agentId="a"))
    second = sequencer.next("model.requested", {"turn": 1, "model": "m"})
    assert (first.sequence, second.sequence) == (5, 6)
    assert sequencer.last_sequence == 6
    for event in (first, second):
        assert event.schema_version == SCHEMA_VERSION
        assert event.run_id == "child"
        assert event.parent_run_id == "root"
        assert event.trace_id == root.trace_id
        assert event.parent_span_id == root.span_id
        assert event.span_id == child.span_id
    assert first.event_id != second.event_id
    assert first.timestamp == "2026-01-01T00:00:00.000Z"
    assert second.timestamp == "2026-01-01T00:00:00.001Z"
    assert first.data == {"agentId": "a"}


def test_sequencer_rejects_blank_types_and_bad_committed_sequences() -> None:
    context = create_root_trace_context("r")
    with pytest.raises(EventValidationError, match=re.escape("Run event type must not be empty.")):
        RunEventSequencer(context).next("  ")
    for bad in (-1, 2**53, cast(Any, 1.5), cast(Any, True)):
        with pytest.raises(EventValidationError):
            RunEventSequencer(context, bad)


def test_random_ids_have_otel_shapes() -> None:
    ids = RandomIdFactory()
    context = create_root_trace_context("r", ids=ids)
    assert len(context.trace_id) == 32
    assert len(context.span_id) == 16
    assert len(ids.event_id()) == 36
    assert ids.trace_id() != ids.trace_id()


def test_trace_context_validates_ids() -> None:
    with pytest.raises(EventValidationError):
        TraceContext(run_id="r", trace_id="0" * 32, span_id="1" * 16)
    with pytest.raises(EventValidationError):
        TraceContext(run_id="r", trace_id="A" * 32, span_id="1" * 16)
    with pytest.raises(EventValidationError):
        TraceContext(run_id=" ", trace_id="a" * 32, span_id="1" * 16)


async def test_contextvars_carry_the_parent_into_child_tasks() -> None:
    import asyncio

    ids = SequentialIdFactory()
    root = create_root_trace_context("root", ids=ids)
    assert current_trace_context() is None
    with pytest.raises(EventValidationError):
        create_child_trace_context("orphan", ids=ids)

    async def child_task() -> TraceContext:
        return create_child_trace_context("child", ids=ids)

    with use_trace_context(root):
        async with asyncio.TaskGroup() as group:
            task = group.create_task(child_task())
    assert current_trace_context() is None
    child = task.result()
    assert child.parent_run_id == "root"
    assert child.parent_span_id == root.span_id


def test_manual_clock_is_deterministic() -> None:
    clock = ManualClock(datetime(2026, 5, 1, tzinfo=UTC), step=timedelta(seconds=1))
    assert clock.now() == datetime(2026, 5, 1, tzinfo=UTC)
    clock.advance(timedelta(seconds=9))
    assert clock.now() == datetime(2026, 5, 1, 0, 0, 10, tzinfo=UTC)
    with pytest.raises(EventValidationError):
        ManualClock(datetime(2026, 5, 1))


def test_registry_knows_terminals_and_accepts_extensions() -> None:
    assert is_terminal_event_type("run.failed")
    assert not is_terminal_event_type("tool.started")
    assert EVENT_TYPES["model.text.delta"].stream_only
    info = register_event_type("child.finished", terminal=True)
    assert register_event_type("child.finished", terminal=True) == info
    assert is_terminal_event_type("child.finished")
    with pytest.raises(EventValidationError):
        register_event_type("child.finished")
    with pytest.raises(EventValidationError):
        register_event_type(" ")


def test_error_data_is_json_safe_and_has_no_traceback() -> None:
    try:
        raise ValueError("boom")
    except ValueError as error:
        data = error_data(error)
    assert data == {"name": "ValueError", "message": "boom"}
    assert "Traceback" not in json.dumps(data)
