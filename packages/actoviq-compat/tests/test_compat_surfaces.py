"""The legacy event adapters through ``actoviq.compat`` (spec 04 §5.2 item 5, spec 03 §6.5)."""

from __future__ import annotations

from typing import Any, cast

from actoviq.compat import (
    LegacyAgentEventRunEventAdapter,
    LegacySurfaceEventPipeline,
    RunEventLegacyCompatAdapter,
    get_compat_diagnostics,
)
from actoviq.events import RunEvent
from actoviq.surfaces import LegacyAgentEventRunEventAdapter as SurfacesLegacyAdapter


def _legacy(event_type: str, timestamp: int, **fields: Any) -> dict[str, Any]:
    return {"type": event_type, "runId": "run-1", "timestamp": timestamp, **fields}


def test_legacy_events_map_to_run_events_with_one_sequence_and_no_signature() -> None:
    adapter = LegacyAgentEventRunEventAdapter()
    assert isinstance(adapter, SurfacesLegacyAdapter)  # the one mapping, not a second
    events = [
        _legacy("request.started", 1, iteration=1),
        _legacy("response.text.delta", 2, iteration=1, delta="he", snapshot="he"),
        _legacy(
            "response.thinking.delta",
            3,
            iteration=1,
            index=0,
            delta="hm",
            snapshot="hm",
            signature="sig-secret-0123456789",
        ),
        _legacy(
            "response.tool_input.delta",
            4,
            iteration=1,
            index=1,
            toolUseId="t1",
            toolName="lookup",
            delta='{"q"',
            snapshot='{"q"',
        ),
    ]
    adapted = [adapter.adapt(event) for event in events]
    assert all(event is not None for event in adapted)
    run_events = [event for event in adapted if event is not None]
    assert [event.type for event in run_events] == [
        "model.requested",
        "model.text.delta",
        "model.reasoning.delta",
        "model.tool_call.delta",
    ]
    assert [event.sequence for event in run_events] == sorted(
        {event.sequence for event in run_events}
    )
    assert "sig-secret" not in repr([event.data for event in run_events])
    assert cast(dict[str, Any], run_events[3].data)["callId"] == "t1"
    assert adapter.adapt(events[0]) is None  # a replay of the same event is dropped
    assert {d.symbol: d.count for d in get_compat_diagnostics()} == {
        "LegacyAgentEventRunEventAdapter": 1
    }


def test_run_events_map_back_and_the_pipeline_projects_legacy_events() -> None:
    forward = LegacyAgentEventRunEventAdapter()
    started = forward.adapt(_legacy("run.started", 1, model="m", input="hi"))
    assert isinstance(started, RunEvent)
    back = RunEventLegacyCompatAdapter().adapt(started)
    assert [event["type"] for event in back] == ["run.started"]
    assert (back[0]["model"], back[0]["input"]) == ("m", "hi")
    pipeline = LegacySurfaceEventPipeline()
    projection = pipeline.project(_legacy("run.started", 1, model="m", input="hi"))
    assert projection.semantics and projection.cli
    assert sorted(d.symbol for d in get_compat_diagnostics()) == [
        "LegacyAgentEventRunEventAdapter",
        "LegacySurfaceEventPipeline",
        "RunEventLegacyCompatAdapter",
    ]
