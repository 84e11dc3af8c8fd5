"""Release-gate plugin for actoviq-events: item JSON in event data through the default chain."""

from __future__ import annotations

from typing import Any

import harness

from actoviq.core import CanonicalItem, item_to_json
from actoviq.events import (
    EventDispatcher,
    EventEmitter,
    InMemoryEventSink,
    create_root_trace_context,
    default_processors,
    run_event_to_json,
)


async def check(item: CanonicalItem, secret: str) -> Any:
    """Emit the item inside ``tool.completed`` data and return the delivered event JSON."""
    del secret  # the gate asserts its absence in what we return
    sink = InMemoryEventSink()
    async with EventDispatcher(default_processors(), [sink]) as dispatcher:
        emitter = EventEmitter(create_root_trace_context("release-gate"), dispatcher)
        await emitter.emit(
            "tool.completed", {"callId": "call_gate", "name": "gate", "item": item_to_json(item)}
        )
    if dispatcher.failures:
        raise AssertionError(f"event pipeline reported failures: {dispatcher.failures}")
    return [run_event_to_json(event) for event in sink.events]


harness.register_redaction("events", check)
