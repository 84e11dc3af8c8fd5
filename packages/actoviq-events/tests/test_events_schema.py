from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from actoviq.events import RunEventSequencer, create_root_trace_context, run_event_to_json
from actoviq.events.schema import run_event_json_schema

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = Path(__file__).resolve().parent / "data" / "golden_run_events.json"
PUBLISHED = ROOT / "docs" / "schemas" / "run-event.schema.json"


def _validator() -> Any:
    schema: Any = run_event_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.oracle
def test_golden_envelopes_match_the_schema() -> None:
    validator = _validator()
    count = 0
    for scenario in json.loads(GOLDEN.read_text("utf-8"))["scenarios"]:
        for leg in scenario["legs"]:
            for event in leg["events"]:
                validator.validate(event)
                count += 1
    assert count > 20


def test_events_we_stamp_match_the_schema() -> None:
    sequencer = RunEventSequencer(create_root_trace_context("run-1"))
    validator = _validator()
    for kind, data in [("run.started", {"agentId": "a"}), ("model.text.delta", {"delta": "x"})]:
        validator.validate(run_event_to_json(sequencer.next(kind, data)))


@pytest.mark.parametrize(
    "mutation",
    [{"schemaVersion": 2}, {"sequence": 0}, {"type": "Run Started"}, {"extra": 1}],
)
def test_bad_envelopes_fail_the_schema(mutation: dict[str, Any]) -> None:
    sequencer = RunEventSequencer(create_root_trace_context("run-1"))
    event = {**run_event_to_json(sequencer.next("run.started", {})), **mutation}
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate(event)


def test_published_schema_is_current() -> None:
    expected = json.dumps(run_event_json_schema(), indent=2, ensure_ascii=False, sort_keys=True)
    assert PUBLISHED.read_text("utf-8") == expected + "\n", "run `make docs`"
