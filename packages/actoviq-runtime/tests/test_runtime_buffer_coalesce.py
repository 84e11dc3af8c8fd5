"""Lazy coalescing in the RunHandle buffer: text, envelopes, limits and interleaved consumers."""

from __future__ import annotations

import random

from runtime_testkit import run_event

from actoviq.events import RunEvent
from actoviq.runtime.handle import _COALESCE_LIMIT, EventBuffer  # pyright: ignore[reportPrivateUsage]


def _delta(text: str, index: int = 0) -> RunEvent:
    return run_event("model.text.delta", {"delta": text, "outputIndex": index})


async def test_many_deltas_become_few_events_capped_at_the_limit() -> None:
    buffer = EventBuffer(8)
    last = None
    for _ in range(_COALESCE_LIMIT + 10):
        last = _delta("x")
        await buffer.put(last)
    buffer.close()
    events: list[RunEvent] = []
    while (event := await buffer.get()) is not None:
        events.append(event)
    texts = [event.data["delta"] for event in events]  # type: ignore[index]
    assert texts == ["x" * _COALESCE_LIMIT, "x" * 10]
    assert last is not None and events[-1].event_id == last.event_id


async def test_consumer_interleaving_keeps_every_character_in_order() -> None:
    rng = random.Random(7)
    buffer = EventBuffer(4096)  # roomy: nothing is dropped, only coalesced
    sent: list[str] = []
    received: list[str] = []
    sequences: list[int] = []
    for index in range(2000):
        kind = rng.random()
        if kind < 0.1:
            event = run_event("tool.started", {"n": index})
        elif kind < 0.2:
            event = _delta(f"<{index}>", index=1)
        else:
            event = _delta(f"<{index}>")
        if event.type == "model.text.delta":
            sent.append(event.data["delta"])  # type: ignore[index]
        await buffer.put(event)
        if rng.random() < 0.3 and len(buffer):
            got = await buffer.get()
            assert got is not None
            sequences.append(got.sequence)
            if got.type == "model.text.delta":
                received.append(got.data["delta"])  # type: ignore[index]
    buffer.close()
    while (got := await buffer.get()) is not None:
        sequences.append(got.sequence)
        if got.type == "model.text.delta":
            received.append(got.data["delta"])  # type: ignore[index]
    assert buffer.dropped == 0
    assert "".join(received) == "".join(sent)
    assert sequences == sorted(sequences)


async def test_an_opaque_delta_is_never_merged() -> None:
    buffer = EventBuffer(8)
    await buffer.put(_delta("a"))
    await buffer.put(_delta("b"))
    await buffer.put(run_event("model.reasoning.delta", {"delta": "c", "opaque": {"k": 1}}))
    await buffer.put(run_event("model.reasoning.delta", {"delta": "d"}))
    buffer.close()
    events: list[RunEvent] = []
    while (event := await buffer.get()) is not None:
        events.append(event)
    assert [event.data for event in events] == [
        {"delta": "ab", "outputIndex": 0},
        {"delta": "c", "opaque": {"k": 1}},
        {"delta": "d"},
    ]
