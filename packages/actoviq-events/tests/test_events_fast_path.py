"""The fast event path: stepping sinks/processors, data ownership, the emit mutex, stamping."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from actoviq.core import to_iso
from actoviq.events import (
    EventDispatcher,
    EventEmitter,
    EventOrderError,
    EventSinkTimeoutError,
    EventValidationError,
    InMemoryEventSink,
    ManualClock,
    RandomIdFactory,
    RunEvent,
    RunEventSequencer,
    SequentialIdFactory,
    SystemClock,
    TraceContext,
    create_root_trace_context,
    default_processors,
)
from actoviq.events.envelope import stamp_run_event


def _context() -> TraceContext:
    return create_root_trace_context("run-1", ids=SequentialIdFactory())


def _event(sequence: int = 1, data: Any = None, *, run_id: str = "run-1") -> RunEvent:
    return RunEvent(
        event_id=f"e-{run_id}-{sequence}",
        sequence=sequence,
        run_id=run_id,
        trace_id="a" * 32,
        span_id="b" * 16,
        type="tool.started",
        timestamp="2026-01-01T00:00:00.000Z",
        data=data if data is not None else {"callId": "c"},
    )


class StepSink:
    """An async sink that suspends ``steps`` times before storing, optionally blocking first."""

    def __init__(self, id: str = "step", steps: int = 0) -> None:
        self.id = id
        self.steps = steps
        self.seen: list[RunEvent] = []
        self.gate: asyncio.Event | None = None
        self.cancelled = 0
        self.after_write: Callable[[], None] | None = None

    async def write(self, event: RunEvent) -> None:
        try:
            if self.gate is not None:
                await self.gate.wait()
            for _ in range(self.steps):
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        self.seen.append(event)
        if self.after_write is not None:
            self.after_write()

    async def aclose(self) -> None:
        return None


class AwaitableSink:
    """``write`` returns a plain future (not a coroutine)."""

    id = "future"

    def __init__(self, resolve: bool) -> None:
        self.resolve = resolve
        self.futures: list[asyncio.Future[None]] = []

    def write(self, event: RunEvent) -> Awaitable[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.resolve:
            future.set_result(None)
        self.futures.append(future)
        return future

    async def aclose(self) -> None:
        return None


async def test_sinks_that_suspend_are_finished_and_bounded() -> None:
    quick = StepSink("quick", steps=0)
    stepping = StepSink("stepping", steps=3)
    memory = InMemoryEventSink()
    async with EventDispatcher([], [quick, stepping, memory], sink_timeout=5) as dispatcher:
        assert await dispatcher.dispatch(_event(1)) is not None
        assert await dispatcher.dispatch(_event(2)) is not None
    assert [event.sequence for event in quick.seen] == [1, 2]
    assert [event.sequence for event in stepping.seen] == [1, 2]
    assert [event.sequence for event in memory.events] == [1, 2]
    assert dispatcher.failures == ()


async def test_plain_awaitables_are_awaited_under_the_timeout() -> None:
    resolved = AwaitableSink(resolve=True)
    async with EventDispatcher([], [resolved]) as dispatcher:
        await dispatcher.dispatch(_event(1))
    assert dispatcher.failures == ()
    pending = AwaitableSink(resolve=False)
    memory = InMemoryEventSink()
    async with EventDispatcher([], [pending, memory], sink_timeout=0.01) as dispatcher:
        await dispatcher.dispatch(_event(1))
    assert [failure.timed_out for failure in dispatcher.failures] == [True]
    assert dispatcher.failures[0].error_type == EventSinkTimeoutError.__name__
    assert pending.futures[0].cancelled()
    assert len(memory.events) == 1


async def test_a_suspended_sink_that_hangs_is_cancelled_by_its_timeout() -> None:
    hanging = StepSink("hanging")
    hanging.gate = asyncio.Event()  # never set
    memory = InMemoryEventSink()
    async with EventDispatcher([], [hanging, memory], sink_timeout=0.01) as dispatcher:
        await dispatcher.dispatch(_event(1))
    assert hanging.cancelled == 1  # the timeout's cancellation reached the sink coroutine
    assert hanging.seen == []
    assert [failure.component_id for failure in dispatcher.failures] == ["hanging"]
    assert len(memory.events) == 1


async def test_cancelling_dispatch_cancels_the_suspended_sink() -> None:
    blocked = StepSink("blocked")
    blocked.gate = asyncio.Event()
    dispatcher = EventDispatcher([], [blocked], sink_timeout=None)
    task = asyncio.create_task(dispatcher.dispatch(_event(1)))
    for _ in range(3):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert blocked.cancelled == 1
    await dispatcher.aclose()


async def test_async_processors_that_suspend_or_fail_after_suspending() -> None:
    class Suspending:
        id = "suspending"

        async def process(self, event: RunEvent) -> RunEvent:
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            return event.with_data({"processed": True})

    class LateFailure:
        id = "late-failure"

        async def process(self, event: RunEvent) -> RunEvent:
            await asyncio.sleep(0)
            raise RuntimeError("late")

    memory = InMemoryEventSink()
    async with EventDispatcher([Suspending(), LateFailure()], [memory]) as dispatcher:
        result = await dispatcher.dispatch(_event(1))
    assert result is not None and result.data == {"processed": True}
    assert memory.events[0].data == {"processed": True}
    assert [failure.component_id for failure in dispatcher.failures] == ["late-failure"]


async def test_redacted_data_is_stored_without_a_copy_and_caller_payloads_stay_free() -> None:
    memory = InMemoryEventSink()
    payload: dict[str, Any] = {"callId": "c1", "headers": {"apiKey": "k", "accept": "json"}}
    async with EventDispatcher(default_processors(), [memory]) as dispatcher:
        emitter = EventEmitter(
            _context(), dispatcher, ids=SequentialIdFactory(), clock=ManualClock()
        )
        delivered = await emitter.emit("tool.started", payload)
    assert delivered is not None
    assert memory.events[0] is delivered  # write_owned: stored as delivered
    payload["headers"]["accept"] = "xml"
    payload["callId"] = "changed"
    assert memory.events[0].data == {
        "callId": "c1",
        "headers": {"apiKey": "[REDACTED]", "accept": "json"},
    }


async def test_data_not_produced_by_a_cloning_processor_is_copied() -> None:
    shared: dict[str, Any] = {"inner": {"value": 1}}

    class Enrich:
        """Replaces data after redaction with a structure holding a caller-owned dict."""

        id = "enrich"

        def process(self, event: RunEvent) -> RunEvent:
            return event.with_data({"shared": shared})

    memory = InMemoryEventSink()
    plain = InMemoryEventSink("plain")
    async with EventDispatcher([*default_processors(), Enrich()], [memory]) as dispatcher:
        delivered = await dispatcher.dispatch(_event(1))
    payload: dict[str, Any] = {"inner": {"value": 1}}
    async with EventDispatcher([], [plain]) as dispatcher:
        await dispatcher.dispatch(_event(1, payload))
    assert delivered is not None and memory.events[0] is not delivered
    shared["inner"]["value"] = 2
    payload["inner"]["value"] = 2
    assert memory.events[0].data == {"shared": {"inner": {"value": 1}}}
    assert plain.events[0].data == {"inner": {"value": 1}}


async def test_write_owned_keeps_the_memory_sink_checks() -> None:
    sink = InMemoryEventSink()
    sink.write_owned(_event(2))
    sink.write_owned(_event(2))  # duplicate id: ignored
    with pytest.raises(EventOrderError):
        sink.write_owned(_event_with_id("other", 1))
    assert len(sink.events) == 1


def _event_with_id(event_id: str, sequence: int) -> RunEvent:
    return stamp_run_event(
        event_id,
        sequence,
        "run-1",
        None,
        "a" * 32,
        "b" * 16,
        None,
        "tool.started",
        "2026-01-01T00:00:00.000Z",
        None,
    )


async def test_bounded_memory_sink_bounds_its_run_table() -> None:
    sink = InMemoryEventSink(max_events=1)  # window: 8192 ids and 8192 runs
    await sink.write(_event(5, run_id="old"))
    await sink.write(_event(5, run_id="recent"))
    for index in range(8191):
        await sink.write(_event(1, run_id=f"run-{index}"))
    # "recent" was written within the window: still checked. "old" fell out of it.
    with pytest.raises(EventOrderError):
        await sink.write(_stale("recent"))
    await sink.write(_stale("old"))
    assert sink.last_sequence("old") == 1
    unbounded = InMemoryEventSink()
    await unbounded.write(_event(5, run_id="old"))
    for index in range(10):
        await unbounded.write(_event(1, run_id=f"run-{index}"))
    with pytest.raises(EventOrderError):
        await unbounded.write(_stale("old"))


def _stale(run_id: str) -> RunEvent:
    return RunEvent(
        event_id=f"stale-{run_id}",
        sequence=1,
        run_id=run_id,
        trace_id="a" * 32,
        span_id="b" * 16,
        type="tool.started",
        timestamp="2026-01-01T00:00:00.000Z",
        data=None,
    )


async def test_emit_mutex_survives_cancelled_waiters() -> None:
    gate_sink = StepSink("gate")
    gate_sink.gate = asyncio.Event()
    memory = InMemoryEventSink()
    async with EventDispatcher([], [gate_sink, memory], sink_timeout=None) as dispatcher:
        emitter = EventEmitter(
            _context(), dispatcher, ids=SequentialIdFactory(), clock=ManualClock()
        )
        first = asyncio.create_task(emitter.emit("tool.started", {"n": 1}))
        await asyncio.sleep(0)
        waiting = asyncio.create_task(emitter.emit("tool.started", {"n": 2}))
        last = asyncio.create_task(emitter.emit("tool.started", {"n": 3}))
        await asyncio.sleep(0)
        waiting.cancel()  # cancelled while waiting for its turn
        await asyncio.sleep(0)
        gate_sink.gate.set()
        async with asyncio.timeout(10):  # a lost turn would deadlock: fail instead of hanging
            assert (await first) is not None
            assert (await last) is not None
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert (await emitter.emit("tool.started", {"n": 4})) is not None
    assert [event.data for event in memory.events] == [{"n": 1}, {"n": 3}, {"n": 4}]
    assert [event.sequence for event in memory.events] == [1, 2, 3]


async def test_emit_mutex_hands_on_a_turn_given_to_a_cancelled_task() -> None:
    sink = StepSink("gate")
    sink.gate = asyncio.Event()
    memory = InMemoryEventSink()
    tasks: list[asyncio.Task[RunEvent | None]] = []

    def cancel_second_soon() -> None:
        # Runs inside the first emit, before it hands its turn to the second: the second task
        # is cancelled after being handed the turn but before it resumes.
        sink.after_write = None
        asyncio.get_running_loop().call_soon(tasks[1].cancel)

    sink.after_write = cancel_second_soon
    async with EventDispatcher([], [sink, memory], sink_timeout=None) as dispatcher:
        emitter = EventEmitter(
            _context(), dispatcher, ids=SequentialIdFactory(), clock=ManualClock()
        )
        for number in (1, 2, 3):
            tasks.append(asyncio.create_task(emitter.emit("tool.started", {"n": number})))
            await asyncio.sleep(0)
        sink.gate.set()
        async with asyncio.timeout(10):  # a lost turn would deadlock: fail instead of hanging
            results = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(results[1], asyncio.CancelledError)
    assert [event.data for event in memory.events] == [{"n": 1}, {"n": 3}]
    assert emitter.last_sequence == 2


async def test_emit_releases_the_turn_when_stamping_fails() -> None:
    memory = InMemoryEventSink()
    async with EventDispatcher([], [memory]) as dispatcher:
        emitter = EventEmitter(
            _context(), dispatcher, ids=SequentialIdFactory(), clock=ManualClock()
        )
        with pytest.raises(
            EventValidationError, match=re.escape("Run event type must not be empty.")
        ):
            await emitter.emit("  ")
        assert (await emitter.emit("run.started")) is not None
    assert memory.last_sequence("run-1") == 1


def test_stamp_run_event_matches_the_constructor_and_validates() -> None:
    stamped = _event_with_id("e1", 3)
    built = RunEvent(
        event_id="e1",
        sequence=3,
        run_id="run-1",
        trace_id="a" * 32,
        span_id="b" * 16,
        type="tool.started",
        timestamp="2026-01-01T00:00:00.000Z",
        data=None,
    )
    assert stamped == built
    with pytest.raises(EventValidationError, match="event_id"):
        _event_with_id("", 1)
    with pytest.raises(EventValidationError, match="sequence"):
        _event_with_id("e", 0)

    class BadIds(SequentialIdFactory):
        def event_id(self) -> str:
            return 7  # type: ignore[return-value]

    sequencer = RunEventSequencer(_context(), ids=BadIds(), clock=ManualClock())
    with pytest.raises(EventValidationError, match="event_id"):
        sequencer.next("run.started")
    good = RunEventSequencer(_context(), ids=SequentialIdFactory(), clock=ManualClock())
    with pytest.raises(EventValidationError, match="timestamp"):
        good.next("run.started", timestamp="")
    assert sequencer.last_sequence == 0
    assert good.last_sequence == 0
    assert good.next("run.started", timestamp="2026-02-03T04:05:06.007Z").sequence == 1


def test_random_event_ids_are_canonical_uuid4() -> None:
    ids = RandomIdFactory()
    values = {ids.event_id() for _ in range(200)}
    assert len(values) == 200
    for value in values:
        parsed = uuid.UUID(value)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == value


def test_system_clock_iso_matches_to_iso_and_subclasses_are_honoured() -> None:
    clock = SystemClock()
    before = to_iso(datetime.now(UTC))
    text = clock.now_iso()
    after = to_iso(datetime.now(UTC))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", text)
    assert before <= text <= after

    class Frozen(SystemClock):
        def now(self) -> datetime:
            return datetime(2030, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)

    sequencer = RunEventSequencer(_context(), ids=SequentialIdFactory(), clock=Frozen())
    assert sequencer.next("run.started").timestamp == "2030-05-06T07:08:09.123Z"
    plain = RunEventSequencer(_context(), ids=SequentialIdFactory(), clock=clock)
    assert before <= plain.next("run.started").timestamp


def test_child_contexts_from_the_random_factory_equal_validated_ones() -> None:
    from actoviq.events import TraceContext, create_child_trace_context, create_root_trace_context

    ids = RandomIdFactory()
    root = create_root_trace_context("root", ids=ids)
    child = create_child_trace_context("child", parent=root, ids=ids)
    rebuilt = TraceContext(
        run_id="child",
        trace_id=root.trace_id,
        span_id=child.span_id,
        parent_span_id=root.span_id,
        parent_run_id="root",
    )
    assert child == rebuilt and hash(child) == hash(rebuilt)
    assert re.fullmatch(r"[0-9a-f]{16}", child.span_id) and child.span_id != root.span_id
    with pytest.raises(EventValidationError, match="run_id"):
        create_child_trace_context(" ", parent=root, ids=ids)
