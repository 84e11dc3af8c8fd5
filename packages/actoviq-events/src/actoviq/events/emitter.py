"""Stamping events: ``RunEventSequencer`` and ``EventEmitter`` (spec 03 §5.1, §8.3 S10).

Example:
    >>> from actoviq.events import SequentialIdFactory, ManualClock, create_root_trace_context
    >>> ids = SequentialIdFactory()
    >>> sequencer = RunEventSequencer(
    ...     create_root_trace_context("run-1", ids=ids), ids=ids, clock=ManualClock()
    ... )
    >>> event = sequencer.next("run.started", {"agentId": "a"})
    >>> (event.sequence, event.timestamp)
    (1, '2026-01-01T00:00:00.000Z')
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Generator, Mapping
from contextlib import contextmanager, suppress
from typing import Any, cast

from actoviq.core import JsonValue, to_iso
from actoviq.events.context import (
    Clock,
    IdFactory,
    RandomIdFactory,
    SystemClock,
    TraceContext,
    use_trace_context,
)
from actoviq.events.dispatcher import EventDispatcher
from actoviq.events.envelope import RunEvent, build_run_event_unchecked, stamp_run_event
from actoviq.events.errors import EventValidationError

__all__ = ["EventData", "EventEmitter", "RunEventSequencer"]

EventData = JsonValue | Mapping[str, object]
"""What callers may pass as ``data``: a JSON value or a payload ``TypedDict``."""

_MAX_SAFE_INT = 2**53 - 1


class RunEventSequencer:
    """Stamps events of one run: schema version, fresh event id, next sequence, trace fields, time.

    Args:
        context: the run's trace context.
        last_committed_sequence: the last sequence already emitted (resume continues after it).
        ids: the id factory (default random).
        clock: the time source (default the system clock).

    Raises:
        EventValidationError: ``last_committed_sequence`` is not a non-negative safe integer.
    """

    __slots__ = ("_clock", "_context", "_event_id", "_ids", "_now_iso", "_sequence")

    def __init__(
        self,
        context: TraceContext,
        last_committed_sequence: int = 0,
        *,
        ids: IdFactory | None = None,
        clock: Clock | None = None,
    ) -> None:
        if (
            type(last_committed_sequence) is not int
            or not 0 <= last_committed_sequence <= _MAX_SAFE_INT
        ):
            raise EventValidationError(
                "last_committed_sequence must be a non-negative safe integer, "
                f"got {last_committed_sequence!r}."
            )
        self._context = context
        self._sequence = last_committed_sequence
        self._ids = ids if ids is not None else RandomIdFactory()
        self._clock = clock if clock is not None else SystemClock()
        self._event_id = self._ids.event_id
        # The system clock can format "now" without a datetime; a subclass overriding now() is
        # honoured (its now() is called and formatted with to_iso).
        clock_ = self._clock
        self._now_iso = (
            clock_.now_iso
            if isinstance(clock_, SystemClock)
            and type(clock_).now is SystemClock.now
            and type(clock_).now_iso is SystemClock.now_iso
            else None
        )

    @property
    def context(self) -> TraceContext:
        """The run's trace context."""
        return self._context

    @property
    def last_sequence(self) -> int:
        """The sequence of the last event stamped (or the committed one passed in)."""
        return self._sequence

    def skip(self) -> int:
        """Count one event that is not built (nobody would receive it); return its sequence.

        The next stamped event follows it, as if it had been stamped and dropped.
        """
        self._sequence += 1
        return self._sequence

    def next(self, type: str, data: EventData = None, *, timestamp: str | None = None) -> RunEvent:
        """Stamp the next event of the run.

        Raises:
            EventValidationError: ``type`` is blank ("Run event type must not be empty.").
        """
        if type.__class__ is not str or not type or type.isspace():
            raise EventValidationError("Run event type must not be empty.")
        event_id = self._event_id()
        if timestamp is None:
            now_iso = self._now_iso
            timestamp = now_iso() if now_iso is not None else to_iso(self._clock.now())
        context = self._context
        sequence = self._sequence + 1
        # The trace fields come from the (validated, frozen) TraceContext, the sequence is ours
        # and the type was checked above: only the id factory's and clock's output need a check.
        build = (
            build_run_event_unchecked
            if event_id.__class__ is str and event_id and timestamp.__class__ is str and timestamp
            else stamp_run_event  # raises the envelope validator's error
        )
        event = build(
            event_id,
            sequence,
            context.run_id,
            context.parent_run_id,
            context.trace_id,
            context.span_id,
            context.parent_span_id,
            type,
            timestamp,
            _as_json(data),
        )
        self._sequence = sequence
        return event


def _as_json(data: EventData) -> JsonValue:
    value: Any = data  # a JSON value or a mapping (payload TypedDicts are plain dicts)
    if value.__class__ is not dict and isinstance(value, Mapping):
        return dict(cast(Mapping[str, JsonValue], value))
    return value


class EventEmitter:
    """One run's event source: stamps with a :class:`RunEventSequencer` and dispatches.

    Emission is serialised by a lock, so concurrent tasks of a run (parallel tools) still deliver
    the run's events to the sinks in strictly increasing sequence order.

    Example:
        >>> # emitter = EventEmitter(context, dispatcher)
        >>> # await emitter.emit("run.started", RunStartedData(agentId="a"))
    """

    __slots__ = ("_busy", "_dispatcher", "_sequencer", "_waiters")

    def __init__(
        self,
        context: TraceContext,
        dispatcher: EventDispatcher,
        *,
        last_committed_sequence: int = 0,
        ids: IdFactory | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._sequencer = RunEventSequencer(context, last_committed_sequence, ids=ids, clock=clock)
        self._dispatcher = dispatcher
        # A FIFO mutex: uncontended, taking it costs one attribute write and no coroutine.
        self._busy = False
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def context(self) -> TraceContext:
        """The run's trace context."""
        return self._sequencer.context

    @property
    def sequencer(self) -> RunEventSequencer:
        """The underlying sequencer."""
        return self._sequencer

    @property
    def dispatcher(self) -> EventDispatcher:
        """Where events go."""
        return self._dispatcher

    @property
    def last_sequence(self) -> int:
        """The last sequence stamped (persist it as ``lastEventSequence``)."""
        return self._sequencer.last_sequence

    async def emit(self, type: str, data: EventData = None) -> RunEvent | None:
        """Stamp and dispatch one event; return what the sinks received (None if dropped).

        Concurrent calls are served one at a time, first come first served.
        """
        if self._busy:
            await self._wait_turn()
        else:
            self._busy = True
        try:
            return await self._dispatcher.dispatch(self._sequencer.next(type, data))
        finally:
            self._pass_turn()

    async def _wait_turn(self) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._pass_turn()  # handed the turn, but leaving (cancelled): hand it on
            else:
                with suppress(ValueError):  # already skipped by _pass_turn
                    self._waiters.remove(waiter)
            raise

    def _pass_turn(self) -> None:
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the turn moves to this waiter; _busy stays True
                return
        self._busy = False

    @contextmanager
    def activate(self) -> Generator[TraceContext]:
        """Make this run's trace context current (``contextvars``) for the block."""
        with use_trace_context(self._sequencer.context) as context:
            yield context
