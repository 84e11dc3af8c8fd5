"""Release-gate plugin for actoviq-surfaces: item JSON in event data through every target."""

from __future__ import annotations

from typing import Any

import harness

from actoviq.core import CanonicalItem, item_to_json
from actoviq.events import RunEventSequencer, create_root_trace_context
from actoviq.surfaces import (
    SURFACE_TARGETS,
    LegacySurfaceEventPipeline,
    SharedRunEventSurfaceProjector,
    surface_event_to_json,
)


async def check(item: CanonicalItem, secret: str) -> Any:
    """Project the item as tool input/output and as a legacy tool call; return every target."""
    del secret  # the gate asserts its absence in what we return
    item_json = item_to_json(item)
    sequencer = RunEventSequencer(create_root_trace_context("release-gate"))
    shared = SharedRunEventSurfaceProjector()
    delivered: list[Any] = []
    for kind, data in (
        ("tool.started", {"callId": "call_gate", "name": "gate", "input": {"item": item_json}}),
        ("tool.completed", {"callId": "call_gate", "name": "gate", "output": item_json}),
    ):
        fan = shared.project(sequencer.next(kind, data))
        delivered.extend(
            surface_event_to_json(e) for t in SURFACE_TARGETS for e in fan.for_target(t)
        )
    pipeline = LegacySurfaceEventPipeline()
    legacy = {
        "type": "tool.call",
        "runId": "release-gate-legacy",
        "timestamp": 0,
        "iteration": 1,
        "call": {"id": "call_gate", "name": "gate", "input": {"item": item_json}},
    }
    for target in SURFACE_TARGETS:
        pipeline.reset()
        delivered.extend(surface_event_to_json(e) for e in pipeline.project_for(legacy, target))
    return delivered


harness.register_redaction("surfaces", check)
