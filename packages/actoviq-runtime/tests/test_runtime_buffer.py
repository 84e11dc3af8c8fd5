"""The RunHandle event buffer: coalescing, the drop-deltas policy with its marker, blocking."""

from __future__ import annotations

import asyncio

from runtime_testkit import run_event

from actoviq.events import RunEvent
from actoviq.runtime import DROPPED_EVENT_TYPE
from actoviq.runtime.handle import EventBuffer


async def _drain(buffer: EventBuffer) -> list[RunEvent]:
    buffer.close()
    events: list[RunEvent] = []
    while (event := await buffer.get()) is not None:
        events.append(event)
    return events


async def test_adjacent_deltas_coalesce_with_the_incoming_envelope() -> None:
    buffer = EventBuffer(8)
    first = run_event("model.text.delta", {"delta": "a", "outputIndex": 0})
    second = run_event("model.text.delta", {"delta": "b", "outputIndex": 0})
    await buffer.put(first)
    await buffer.put(second)
    await buffer.put(run_event("model.reasoning.delta", {"delta": "x"}))
    await buffer.put(run_event("model.reasoning.delta", {"delta": "y"}))
    events = await _drain(buffer)
    assert [e.data for e in events] == [
        {"delta": "ab", "outputIndex": 0},
        {"delta": "xy"},
    ]
    assert events[0].sequence == second.sequence and events[0].event_id == second.event_id


async def test_deltas_with_other_output_index_do_not_coalesce() -> None:
    buffer = EventBuffer(8)
    await buffer.put(run_event("model.text.delta", {"delta": "a", "outputIndex": 0}))
    await buffer.put(run_event("model.text.delta", {"delta": "b", "outputIndex": 1}))
    assert len(await _drain(buffer)) == 2


async def test_full_buffer_drops_only_deltas_and_marks_the_gap() -> None:
    buffer = EventBuffer(3)
    await buffer.put(run_event("run.started", {}))
    await buffer.put(run_event("model.requested", {}))
    await buffer.put(run_event("model.text.delta", {"delta": "kept", "outputIndex": 0}))
    await buffer.put(run_event("tool.started", {}))  # not droppable: goes over capacity
    dropped = [
        run_event("model.text.delta", {"delta": f"d{i}", "outputIndex": 1}) for i in range(5)
    ]
    for event in dropped:
        await buffer.put(event)
    await buffer.put(run_event("run.completed", {}))
    events = await _drain(buffer)
    types = [e.type for e in events]
    assert types == [
        "run.started",
        "model.requested",
        "model.text.delta",
        "tool.started",
        DROPPED_EVENT_TYPE,
        "run.completed",
    ]
    marker = events[4]
    assert marker.data == {
        "count": 5,
        "firstSequence": dropped[0].sequence,
        "lastSequence": dropped[-1].sequence,
    }
    assert buffer.dropped == 5


async def test_block_policy_applies_backpressure() -> None:
    buffer = EventBuffer(2, "block")
    await buffer.put(run_event("a"))
    await buffer.put(run_event("b"))
    producer = asyncio.create_task(buffer.put(run_event("c")))
    await asyncio.sleep(0)
    assert not producer.done()
    first = await buffer.get()
    assert first is not None and first.type == "a"
    await producer
    assert [e.type for e in await _drain(buffer)] == ["b", "c"]


async def test_consumer_waits_for_events_and_stops_after_close() -> None:
    buffer = EventBuffer(4)
    consumer = asyncio.create_task(buffer.get())
    await asyncio.sleep(0)
    await buffer.put(run_event("run.started"))
    got = await consumer
    assert got is not None and got.type == "run.started"
    buffer.close()
    assert await buffer.get() is None
