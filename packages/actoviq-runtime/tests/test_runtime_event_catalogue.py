"""Typed events (issue 14 §4): every emitted event is its catalogue class, its data matches the
published per-type schema, and the wire format is exactly what it was."""

from __future__ import annotations

import ast
import copy
import inspect
import pickle
from typing import Any, assert_type

import attrs
import jsonschema
import pytest
from runtime_testkit import RecordingCheckpointStore, scripted_runtime

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.events import (
    EVENT_CLASSES,
    EVENT_PAYLOADS,
    EVENT_TYPES,
    InMemoryEventSink,
    ModelTextDeltaEvent,
    RunEvent,
    RunInterruptedEvent,
    RuntimeEvent,
    ToolFailedEvent,
    catalogue,
    run_event_from_json,
    run_event_json_schema,
    run_event_to_json,
)
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import InterruptionDecision, ToolRetry, tool


@tool(effect="read")
def lookup(term: str) -> str:
    """Look a term up."""
    if term == "bad":
        raise ToolRetry("try another term")
    return term.upper()


@tool(effect="side-effect", requires_approval=True)
def send(to: str) -> str:
    """Send."""
    return f"sent to {to}"


AGENT = AgentSpec(id="a", name="A", instructions="x", model="scripted:m", tools=("lookup", "send"))


def calls(*entries: tuple[str, str, dict[str, Any]]) -> ScriptedTurn:
    return ScriptedTurn(
        tool_calls=[ToolCallItem(id=i, name=n, input=a) for i, n, a in entries],
        text="Looking.",
        stream_deltas=["Look", "ing."],
    )


async def collect_events() -> list[RunEvent]:
    sink = InMemoryEventSink()
    provider = ScriptedProvider(
        [
            calls(("c1", "lookup", {"term": "cas"}), ("c2", "lookup", {"term": "bad"})),
            calls(("c3", "send", {"to": "ops"})),
            ScriptedTurn(text="Done.", stream_deltas=["Do", "ne."]),
        ]
    )
    store = RecordingCheckpointStore()
    async with scripted_runtime(
        provider, tools=[lookup, send], event_sinks=[sink], checkpoint_store=store
    ) as runtime:
        async with runtime.stream(AGENT, "go", run_id="cat-1") as handle:
            seen = [event async for event in handle]
            first = await handle.result()
        assert first.status == "interrupted"
        decision = InterruptionDecision.approve(first.interruptions[0].id)
        async with runtime.resume(first.state, [decision]) as handle:
            seen += [event async for event in handle]
            assert (await handle.result()).output == "Done."
    assert [e.event_id for e in sink.events] == [e.event_id for e in seen]
    return seen


async def test_every_emitted_event_is_its_catalogue_class_and_matches_the_schema() -> None:
    events = await collect_events()
    validator: Any = jsonschema.Draft202012Validator(run_event_json_schema())
    kinds: set[str] = set()
    for event in events:
        kinds.add(event.type)
        assert event.type in EVENT_CLASSES, event.type
        assert type(event) is EVENT_CLASSES[event.type]
        errors = [e.message for e in validator.iter_errors(run_event_to_json(event))]
        assert errors == [], (event.type, errors)
    for expected in (
        "run.started",
        "model.text.delta",
        "tool.started",
        "tool.completed",
        "tool.failed",
        "run.interrupted",
        "run.resumed",
        "run.completed",
    ):
        assert expected in kinds


def test_the_schema_refuses_a_payload_of_the_wrong_shape() -> None:
    validator: Any = jsonschema.Draft202012Validator(run_event_json_schema())
    envelope: dict[str, Any] = {
        "schemaVersion": 1,
        "eventId": "e",
        "sequence": 1,
        "runId": "r",
        "traceId": "0" * 32,
        "spanId": "1" * 16,
        "type": "model.text.delta",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "data": {"delta": 5},
    }
    assert list(validator.iter_errors(envelope))
    envelope["data"] = {"delta": "ok", "somethingNew": 1}  # additive fields are allowed
    assert not list(validator.iter_errors(envelope))
    envelope["type"] = "host.custom"  # unknown types keep any data
    envelope["data"] = [1, 2]
    assert not list(validator.iter_errors(envelope))


async def test_match_narrows_data_without_casts() -> None:
    events = await collect_events()
    texts: list[str] = []
    failures: list[str] = []
    waiting: list[str] = []
    for event in events:
        match event:
            case ModelTextDeltaEvent():
                assert_type(event.data["delta"], str)
                texts.append(event.data["delta"])
            case ToolFailedEvent():
                failures.append(event.data["failure"]["kind"])
            case RunInterruptedEvent():
                waiting.extend(entry["id"] for entry in event.data.get("interruptions", []))
            case _:
                pass
    assert "".join(texts).startswith("Looking.")
    assert failures == ["retry"]
    assert len(waiting) == 1


def describe(event: RuntimeEvent) -> str:
    """The discriminated union narrows on ``type`` too."""
    if event.type == "tool.started":
        return f"{event.data['name']} ({event.data['effect']})"
    if event.type == "run.completed":
        return event.data["status"]
    return event.type


def test_wire_format_and_class_survive_json_evolve_copy_and_pickle() -> None:
    event = RunEvent(
        event_id="e1",
        sequence=3,
        run_id="r",
        trace_id="0" * 32,
        span_id="1" * 16,
        type="tool.started",
        timestamp="2026-01-01T00:00:00.000Z",
        data={"callId": "c", "name": "lookup", "effect": "read"},
    )
    assert type(event).__name__ == "ToolStartedEvent"
    wire = run_event_to_json(event)
    assert wire == {
        "schemaVersion": 1,
        "eventId": "e1",
        "sequence": 3,
        "runId": "r",
        "traceId": "0" * 32,
        "spanId": "1" * 16,
        "type": "tool.started",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "data": {"callId": "c", "name": "lookup", "effect": "read"},
    }
    loaded = run_event_from_json(wire)
    assert loaded == event
    assert type(loaded) is type(event)
    assert describe(loaded) == "lookup (read)"  # type: ignore[arg-type]
    for clone in (copy.copy(event), copy.deepcopy(event), pickle.loads(pickle.dumps(event))):
        assert clone == event
        assert type(clone) is type(event)
    changed = attrs.evolve(event, type="host.custom", data=[1])
    assert type(changed) is RunEvent
    assert attrs.evolve(changed, type="run.completed", data={}).__class__.__name__ == (
        "RunCompletedEvent"
    )
    assert event.with_data({"x": 1}).__class__ is type(event)


def test_every_class_declares_the_payload_the_schema_uses() -> None:
    tree = ast.parse(inspect.getsource(catalogue))
    declared: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("Event"):
            for statement in ast.walk(node):
                if (
                    isinstance(statement, ast.AnnAssign)
                    and isinstance(statement.target, ast.Name)
                    and statement.target.id == "data"
                    and isinstance(statement.annotation, ast.Name)
                ):
                    declared[node.name] = statement.annotation.id
    for name, cls in EVENT_CLASSES.items():
        assert declared[cls.__name__] == EVENT_PAYLOADS[name].__name__, name
        assert name in EVENT_TYPES


def test_a_subclass_without_empty_slots_cannot_be_registered() -> None:
    from actoviq.events import EventValidationError, register_event_class

    class Loose(RunEvent):  # no __slots__ = ()
        pass

    with pytest.raises(EventValidationError):
        register_event_class("loose.event", Loose)
