"""SurfaceSemanticEvent wire format and its published JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from surfaces_testkit import Stream, legacy_fixture

from actoviq.core import converter
from actoviq.events import SequentialIdFactory
from actoviq.surfaces import (
    SEMANTIC_VERSION,
    LegacyAdapterOptions,
    LegacySurfaceEventPipeline,
    SurfaceEventValidationError,
    SurfaceSemanticCategory,
    SurfaceSemanticEvent,
    SurfaceSemanticType,
    SurfaceTargetError,
    check_target,
    surface_event_from_json,
    surface_event_to_json,
    surface_semantic_event_json_schema,
)

PUBLISHED = (
    Path(__file__).resolve().parents[3] / "docs" / "schemas" / "surface-semantic-event.schema.json"
)


def _event(**overrides: Any) -> SurfaceSemanticEvent:
    values: dict[str, Any] = {
        "source_event_id": "e1",
        "source_type": "model.text.delta",
        "projection_index": 0,
        "sequence": 1,
        "run_id": "r1",
        "trace_id": "0" * 31 + "1",
        "span_id": "0" * 15 + "1",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "type": SurfaceSemanticType.TEXT_DELTA,
        "category": SurfaceSemanticCategory.TEXT,
        "phase": "delta",
        "data": {"delta": "hi"},
    }
    values.update(overrides)
    return SurfaceSemanticEvent(**values)


def test_wire_is_camel_case_and_round_trips() -> None:
    event = _event(parent_run_id="p", parent_span_id="2" * 16)
    wire = surface_event_to_json(event)
    assert wire["semanticVersion"] == SEMANTIC_VERSION
    assert wire["semanticId"] == "e1:0"
    assert wire["type"] == "text.delta" and wire["category"] == "text"
    assert list(wire)[:3] == ["semanticVersion", "semanticId", "sourceEventId"]
    assert converter.unstructure(event) == wire  # the one core converter
    assert surface_event_from_json(json.dumps(wire)) == event
    assert "parentRunId" not in surface_event_to_json(_event())


@pytest.mark.parametrize(
    "mutation",
    [
        {"semanticVersion": 2},
        {"semanticId": "e1:1"},
        {"type": "text.bogus"},
        {"category": "bogus"},
        {"projectionIndex": -1},
        {"sequence": 0},
        {"extra": 1},
        {"data": []},
        {"runId": ""},
    ],
)
def test_invalid_wire_is_refused_typed(mutation: dict[str, Any]) -> None:
    wire = {**surface_event_to_json(_event()), **mutation}
    with pytest.raises(SurfaceEventValidationError):
        surface_event_from_json(wire)


def test_missing_fields_and_non_objects_are_refused() -> None:
    wire = dict(surface_event_to_json(_event()))
    del wire["phase"]
    with pytest.raises(SurfaceEventValidationError, match="phase"):
        surface_event_from_json(wire)
    with pytest.raises(SurfaceEventValidationError):
        surface_event_from_json([1])


def test_semantic_id_is_derived_never_passed() -> None:
    assert _event(projection_index=3).semantic_id == "e1:3"
    with pytest.raises(TypeError):
        _event(semantic_id="x:0")


def test_targets_are_checked() -> None:
    assert check_target("gui") == "gui"
    with pytest.raises(SurfaceTargetError) as error:
        check_target("web")
    assert error.value.code == "SURFACE_TARGET_UNKNOWN"


def _validator() -> Any:
    schema: Any = surface_semantic_event_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_everything_we_project_matches_the_schema() -> None:
    validator = _validator()
    pipeline = LegacySurfaceEventPipeline(legacy=LegacyAdapterOptions(ids=SequentialIdFactory()))
    count = 0
    for legacy in legacy_fixture():
        for semantic in pipeline.project(legacy).semantics:
            validator.validate(surface_event_to_json(semantic))
            count += 1
    stream = Stream(ids=SequentialIdFactory(5000)).child("kid")
    for semantic in pipeline.projector.project(stream.next("run.started", {})).semantics:
        validator.validate(surface_event_to_json(semantic))
        count += 1
    assert count > 25
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**surface_event_to_json(_event()), "type": "nope"})


def test_published_schema_is_current() -> None:
    published = json.loads(PUBLISHED.read_text("utf-8"))
    assert published == surface_semantic_event_json_schema(), "run `make docs`"


@pytest.mark.parametrize("data", [{"x": float("nan")}, {"x": {1, 2}}, {"x": b"raw"}])
def test_wire_data_must_be_strict_json(data: dict[str, Any]) -> None:
    wire = {**surface_event_to_json(_event()), "data": data}
    with pytest.raises(SurfaceEventValidationError):
        surface_event_from_json(wire)


def test_constructor_refuses_unknown_types_typed() -> None:
    with pytest.raises(SurfaceEventValidationError):
        _event(type="text.bogus")
    with pytest.raises(SurfaceEventValidationError):
        _event(category=3)
    assert _event(type="tool.started", category="tool").type is SurfaceSemanticType.TOOL_STARTED
