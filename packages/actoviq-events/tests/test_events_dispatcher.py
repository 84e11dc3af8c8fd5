from __future__ import annotations

import asyncio
import re
from typing import Any

import attrs
import pytest

from actoviq.events import (
    DeliveryFailure,
    EventDispatcher,
    EventDispatcherClosedError,
    EventEmitter,
    EventOrderError,
    EventSinkTimeoutError,
    EventValidationError,
    InMemoryEventSink,
    ManualClock,
    RedactionError,
    RedactionPolicy,
    RedactionProcessor,
    Redactor,
    RunEvent,
    SequentialIdFactory,
    create_root_trace_context,
    default_processors,
)


class EventFactory:
    """Builds envelopes with increasing sequences per run."""

    def __init__(self) -> None:
        self._sequences: dict[str, int] = {}
        self._ids = 0

    def __call__(
        self, type: str = "run.started", data: Any = None, *, run_id: str = "r1"
    ) -> RunEvent:
        self._ids += 1
        sequence = self._sequences.get(run_id, 0) + 1
        self._sequences[run_id] = sequence
        return RunEvent(
            event_id=f"e{self._ids}",
            sequence=sequence,
            run_id=run_id,
            trace_id="a" * 32,
            span_id="b" * 16,
            type=type,
            timestamp="2026-01-01T00:00:00.000Z",
            data=data if data is not None else {"agentId": "x"},
        )


@pytest.fixture
def make_event() -> EventFactory:
    return EventFactory()


class DropSecret:
    id = "drop-secret"

    def process(self, event: RunEvent) -> RunEvent | None:
        if event.type == "secret":
            return None
        return event.with_data({"redacted": True})


class AsyncMark:
    def __init__(self, id: str, mark: str) -> None:
        self.id = id
        self.mark = mark

    async def process(self, event: RunEvent) -> RunEvent:
        await asyncio.sleep(0)
        return event.with_data({self.mark: True})


class Failing:
    def __init__(self, id: str = "failing", error: Exception | None = None) -> None:
        self.id = id
        self.error = error or RuntimeError("processor broke with Bearer sk-test-CANARYSECRET1")
        self.calls = 0
        self.closed = False

    def process(self, event: RunEvent) -> RunEvent:
        self.calls += 1
        raise self.error

    async def write(self, event: RunEvent) -> None:
        self.calls += 1
        raise self.error

    async def aclose(self) -> None:
        self.closed = True
        raise self.error


class Hanging:
    id = "hanging"

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.closed = False

    async def write(self, event: RunEvent) -> None:
        self.started.set()
        await self.release.wait()

    async def aclose(self) -> None:
        self.closed = True


class SyncSink:
    id = "sync"

    def __init__(self) -> None:
        self.seen: list[RunEvent] = []

    def write(self, event: RunEvent) -> None:
        self.seen.append(event)

    async def aclose(self) -> None:
        return None


async def test_processor_drops_and_rewrites_and_sink_dedupes(make_event: EventFactory) -> None:
    memory = InMemoryEventSink()
    counter = SyncSink()
    async with EventDispatcher([DropSecret()], [counter, memory]) as dispatcher:
        event = make_event()
        first = await dispatcher.dispatch(event)
        second = await dispatcher.dispatch(event)
        dropped = await dispatcher.dispatch(make_event("secret"))
    assert first == second
    assert first is not None
    assert first.data == {"redacted": True}
    assert dropped is None
    assert len(counter.seen) == 2  # write called twice
    assert len(memory.events) == 1  # stored once
    assert memory.events[0].data == {"redacted": True}


async def test_isolated_sink_failure_is_reported_and_later_sinks_still_receive(
    make_event: EventFactory,
) -> None:
    reported: list[DeliveryFailure] = []
    failing = Failing()
    memory = InMemoryEventSink()
    dispatcher = EventDispatcher([], [failing, memory], on_failure=reported.append)
    result = await dispatcher.dispatch(make_event())
    assert result is not None
    assert len(memory.events) == 1
    assert len(reported) == 1
    failure = reported[0]
    assert failure.stage == "sink"
    assert failure.component_id == "failing"
    assert failure.event_id == result.event_id
    assert failure.error_type == "RuntimeError"
    assert "sk-test-CANARY" not in failure.message
    assert "sk-test-CANARY" not in repr(failure)
    assert dispatcher.failures == (failure,)
    assert dispatcher.failure_count == 1
    with pytest.raises(ExceptionGroup, match=re.escape("One or more event sinks failed to close.")):
        await dispatcher.aclose()
    assert failing.closed
    assert dispatcher.failures[-1].stage == "close"


async def test_hanging_sink_times_out_is_reported_and_does_not_block_others(
    make_event: EventFactory,
) -> None:
    hanging = Hanging()
    memory = InMemoryEventSink()
    async with EventDispatcher([], [hanging, memory], sink_timeout=0.05) as dispatcher:
        await dispatcher.dispatch(make_event())
        await dispatcher.dispatch(make_event())
    assert len(memory.events) == 2
    assert [failure.timed_out for failure in dispatcher.failures] == [True, True]
    assert dispatcher.failures[0].code == EventSinkTimeoutError.default_code
    assert hanging.closed


async def test_slow_sink_applies_backpressure(make_event: EventFactory) -> None:
    hanging = Hanging()
    dispatcher = EventDispatcher([], [hanging], sink_timeout=None)
    task = asyncio.create_task(dispatcher.dispatch(make_event()))
    await hanging.started.wait()
    assert not task.done()
    hanging.release.set()
    assert await task is not None
    await dispatcher.aclose()


async def test_isolated_processor_failure_keeps_event_and_applies_next(
    make_event: EventFactory,
) -> None:
    reported: list[DeliveryFailure] = []
    memory = InMemoryEventSink()
    dispatcher = EventDispatcher(
        [Failing(), AsyncMark("observe", "observed")], [memory], on_failure=reported.append
    )
    result = await dispatcher.dispatch(make_event())
    assert result is not None
    assert result.data == {"observed": True}
    assert [failure.stage for failure in reported] == ["processor"]
    assert not reported[0].dropped
    await dispatcher.aclose()


async def test_redaction_failure_is_fail_closed(make_event: EventFactory) -> None:
    reported: list[DeliveryFailure] = []
    memory = InMemoryEventSink()
    redaction = RedactionProcessor(Redactor(RedactionPolicy(max_depth=2)))
    dispatcher = EventDispatcher([redaction], [memory], on_failure=reported.append)
    deep = {"a": {"b": {"c": {"apiKey": "sk-test-CANARYDEEP"}}}}
    assert await dispatcher.dispatch(make_event(data=deep)) is None
    assert memory.events == ()
    assert len(reported) == 1
    assert reported[0].dropped
    assert reported[0].error_type == "RedactionError"
    await dispatcher.aclose()


async def test_any_fail_closed_processor_drops_on_error(make_event: EventFactory) -> None:
    @attrs.define
    class Strict:
        id: str = "strict"
        fail_closed: bool = True

        def process(self, event: RunEvent) -> RunEvent:
            raise ValueError("no")

    memory = InMemoryEventSink()
    dispatcher = EventDispatcher([Strict()], [memory])
    assert await dispatcher.dispatch(make_event()) is None
    assert memory.events == ()
    assert dispatcher.failures[0].dropped


async def test_processor_returning_garbage_is_reported(make_event: EventFactory) -> None:
    class Garbage:
        id = "garbage"

        def process(self, event: RunEvent) -> Any:
            return {"not": "an event"}

    dispatcher = EventDispatcher([Garbage()], [])
    event = make_event()
    assert await dispatcher.dispatch(event) == event
    assert dispatcher.failures[0].error_type == "EventValidationError"
    raising = EventDispatcher([Garbage()], [], failure_mode="raise")
    with pytest.raises(EventValidationError):
        await raising.dispatch(event)


async def test_raise_mode_propagates(make_event: EventFactory) -> None:
    dispatcher = EventDispatcher([], [Failing()], failure_mode="raise")
    with pytest.raises(RuntimeError, match="processor broke"):
        await dispatcher.dispatch(make_event())
    redacting = EventDispatcher(
        [RedactionProcessor(Redactor(RedactionPolicy(max_depth=1)))], [], failure_mode="raise"
    )
    with pytest.raises(RedactionError):
        await redacting.dispatch(make_event(data={"a": {"b": 1}}))
    hanging = EventDispatcher([], [Hanging()], failure_mode="raise", sink_timeout=0.01)
    with pytest.raises(EventSinkTimeoutError):
        await hanging.dispatch(make_event())


async def test_isolate_overrides_raise_mode_for_one_event(make_event: EventFactory) -> None:
    after = InMemoryEventSink()
    dispatcher = EventDispatcher([], [Failing(), after], failure_mode="raise")
    event = make_event()
    assert await dispatcher.dispatch(event, isolate=True) == event
    assert [e.event_id for e in after.events] == [event.event_id]
    assert [f.stage for f in dispatcher.failures] == ["sink"]
    with pytest.raises(RuntimeError, match="processor broke"):
        await dispatcher.dispatch(make_event())


async def test_closed_dispatcher_refuses_and_close_is_idempotent(make_event: EventFactory) -> None:
    dispatcher = EventDispatcher(default_processors(), [InMemoryEventSink()])
    await dispatcher.aclose()
    await dispatcher.aclose()
    assert dispatcher.closed
    with pytest.raises(EventDispatcherClosedError, match=re.escape("EventDispatcher is closed.")):
        await dispatcher.dispatch(make_event())


def test_ids_must_be_non_blank_and_unique() -> None:
    with pytest.raises(EventValidationError, match=re.escape("Event sink id must not be empty.")):
        EventDispatcher([], [InMemoryEventSink(" ")])
    with pytest.raises(EventValidationError, match=re.escape('Duplicate event processor id "p".')):
        EventDispatcher([AsyncMark("p", "a"), AsyncMark("p", "b")])
    with pytest.raises(EventValidationError):
        EventDispatcher(sink_timeout=0)
    with pytest.raises(EventValidationError):
        EventDispatcher(failure_mode="explode")  # type: ignore[arg-type]


async def test_memory_sink_checks_order_per_run(make_event: EventFactory) -> None:
    sink = InMemoryEventSink()
    first = make_event()
    second = make_event()
    other = make_event(run_id="r2")
    await sink.write(second)
    await sink.write(other)
    with pytest.raises(
        EventOrderError, match=re.escape("Run r1 event sequence 1 is not greater than 2.")
    ):
        await sink.write(first)
    assert sink.last_sequence("r1") == 2
    assert sink.events_for_run("r2") == (other,)
    assert sink.types() == ["run.started", "run.started"]
    assert [entry["eventId"] for entry in sink.to_json()] == [second.event_id, other.event_id]
    await sink.aclose()
    with pytest.raises(EventDispatcherClosedError):
        await sink.write(make_event())


async def test_memory_sink_stores_deep_copies_and_bounds(make_event: EventFactory) -> None:
    payload: dict[str, Any] = {"nested": {"value": 1}}
    sink = InMemoryEventSink(max_events=2)
    await sink.write(make_event(data=payload))
    payload["nested"]["value"] = 2
    assert sink.events[0].data == {"nested": {"value": 1}}
    await sink.write(make_event())
    await sink.write(make_event())
    assert len(sink.events) == 2
    assert sink.dropped == 1
    sink.clear()
    assert sink.events == ()
    with pytest.raises(EventValidationError):
        InMemoryEventSink(max_events=0)


async def test_emitter_serialises_concurrent_emits_in_sequence_order() -> None:
    class Slow:
        id = "slow"

        async def process(self, event: RunEvent) -> RunEvent:
            # Earlier events yield more loop turns, so an unserialised emitter would reorder
            # them (loop turns, not timers: the outcome does not depend on the clock).
            for _ in range(10 - event.sequence):
                await asyncio.sleep(0)
            return event

    ids = SequentialIdFactory()
    memory = InMemoryEventSink()
    async with EventDispatcher([Slow(), *default_processors()], [memory]) as dispatcher:
        emitter = EventEmitter(
            create_root_trace_context("run", ids=ids), dispatcher, ids=ids, clock=ManualClock()
        )
        async with asyncio.TaskGroup() as group:
            for index in range(8):
                group.create_task(emitter.emit("tool.started", {"callId": f"c{index}"}))
    assert [event.sequence for event in memory.events] == list(range(1, 9))
    assert emitter.last_sequence == 8
    with emitter.activate() as context:
        assert context is emitter.context


async def test_bounded_memory_sink_forgets_old_ids_but_keeps_ordering(
    make_event: EventFactory,
) -> None:
    sink = InMemoryEventSink(max_events=1)
    first = make_event()
    await sink.write(first)
    await sink.write(first)  # remembered: silently ignored
    for _ in range(8192):
        await sink.write(make_event())
    assert len(sink.events) == 1
    # The id window has moved past `first`, so it is no longer a duplicate: ordering catches it.
    with pytest.raises(EventOrderError):
        await sink.write(first)
