"""``AgentRunStream``: legacy ``AgentEvent`` s through a bounded buffer (spec 04 §5.1, §5.2 item 3).

The run is produced by the one ``AgentRuntime`` (its ``RunHandle``); the façade translates each
``RunEvent`` into legacy events and pushes them here. The consumer iterates with ``async for``
and awaits :attr:`AgentRunStream.result`.

Buffer rules:

* ``max_buffered_events`` (default 256, at least 2) counts every queued event, and one slot is
  reserved for the terminal event (``response.completed`` or ``error``), which always fits.
* Adjacent ``response.text.delta``, ``response.thinking.delta`` and ``response.tool_input.delta``
  events of the same run, iteration and index (and tool call) are coalesced while they wait:
  ``delta`` is concatenated, ``snapshot`` and ``timestamp`` are the newest (``coalesce_deltas``).
* When the buffer is full, ``overflow`` decides: ``"throw"`` (default) fails the stream with
  :class:`~actoviq.compat.errors.AgentRunStreamOverflowError` and cancels the run;
  ``"drop-oldest"`` / ``"drop-newest"`` drop a non-terminal event (counted in
  :attr:`AgentRunStream.dropped_event_count`); ``"block"`` (ours) makes the run wait for the
  consumer, back-pressuring the runtime.
* Once :attr:`~AgentRunStream.result` is awaited while nobody iterates, a full buffer drops its
  oldest events instead (nobody is reading: waiting for the result must never fail or stall).

Stopping the iteration early (``break``, an exception, ``aclose()``, leaving ``async with``)
cancels the run with "AgentRunStream consumer stopped before completion."; an external
``signal`` cancels it too. A failed run yields an ``error`` event, then the iterator raises the
run's error (the same one ``result`` raises).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Generator,
)
from types import TracebackType
from typing import Any, Final, Literal, Self, cast

from actoviq.compat.errors import AgentRunStreamOverflowError, CompatConfigurationError
from actoviq.compat.events import AgentEvent
from actoviq.compat.results import AgentRunResult
from actoviq.core import ActoviqError, iso_now
from actoviq.providers import StreamConsumedError

__all__ = [
    "CONSUMER_STOPPED",
    "DEFAULT_MAX_BUFFERED_EVENTS",
    "AgentRunStream",
    "OverflowStrategy",
    "StreamProducer",
    "check_buffer_options",
]

OverflowStrategy = Literal["throw", "drop-oldest", "drop-newest", "block"]
"""What a full :class:`AgentRunStream` buffer does with one more event (see the module doc)."""
DEFAULT_MAX_BUFFERED_EVENTS: Final = 256
"""The default buffer size of :class:`AgentRunStream`, the terminal event's slot included."""
CONSUMER_STOPPED: Final = "AgentRunStream consumer stopped before completion."
"""The cancellation reason when the consumer stops iterating before the terminal event."""
_STRATEGIES: Final = frozenset({"throw", "drop-oldest", "drop-newest", "block"})
_DELTAS: Final = frozenset(
    {"response.text.delta", "response.thinking.delta", "response.tool_input.delta"}
)
_TERMINALS: Final = frozenset({"response.completed", "error"})

Push = Callable[[AgentEvent], Awaitable[None]]
StreamProducer = Callable[[Push], Awaitable[AgentRunResult]]
"""Drives the run and pushes its legacy events; returns the result or raises the run's error."""


def _stream_key(event: dict[str, Any]) -> tuple[object, ...]:
    return (
        event.get("type"),
        event.get("runId"),
        event.get("iteration"),
        event.get("index"),
        event.get("toolUseId"),
    )


def _error_event(run_id: str, error: BaseException) -> AgentEvent:
    body: dict[str, Any] = {"message": str(error) or type(error).__name__}
    if isinstance(error, ActoviqError):
        body = {"message": error.message, "code": error.code}
    return cast(
        AgentEvent, {"type": "error", "runId": run_id, "timestamp": iso_now(), "error": body}
    )


def check_buffer_options(max_buffered_events: object, overflow: object) -> None:
    """Validate the buffer options.

    Raises:
        CompatConfigurationError: ``max_buffered_events`` < 2 or an unknown ``overflow``.
    """
    if type(max_buffered_events) is not int or max_buffered_events < 2:
        raise CompatConfigurationError(
            "maxBufferedEvents must be an integer >= 2 (one slot is kept for the terminal "
            f"event); got {max_buffered_events!r}."
        )
    if overflow not in _STRATEGIES:
        raise CompatConfigurationError(
            f"overflow must be one of {', '.join(sorted(_STRATEGIES))}; got {overflow!r}."
        )


class _ResultAwaitable:
    """``await stream.result``: the stream's outcome, awaitable any number of times."""

    __slots__ = ("_stream",)

    def __init__(self, stream: AgentRunStream) -> None:
        self._stream = stream

    def __await__(self) -> Generator[Any, None, AgentRunResult]:
        return self._stream.wait_result().__await__()

    def __call__(self) -> Coroutine[Any, Any, AgentRunResult]:
        """``await stream.result()`` works too (the runtime's ``RunHandle.result()`` shape)."""
        return self._stream.wait_result()


class AgentRunStream:
    """One streamed run: ``async for event in stream`` and ``await stream.result``.

    Created by ``AgentClient.stream`` (the run has started when you get it). One consumer.

    Args:
        run_id: the run's id.
        producer: drives the run and pushes legacy events (the façade's translation).
        cancel_run: cancels the run with a reason.
        max_buffered_events: the buffer size, terminal slot included (>= 2).
        overflow: ``"throw"``, ``"drop-oldest"``, ``"drop-newest"`` or ``"block"``.
        coalesce_deltas: merge adjacent deltas of one stream while they wait.

    Raises:
        CompatConfigurationError: ``max_buffered_events`` < 2 or an unknown ``overflow``.
    """

    def __init__(
        self,
        run_id: str,
        producer: StreamProducer,
        cancel_run: Callable[[str], None],
        *,
        max_buffered_events: int = DEFAULT_MAX_BUFFERED_EVENTS,
        overflow: OverflowStrategy = "throw",
        coalesce_deltas: bool = True,
    ) -> None:
        check_buffer_options(max_buffered_events, overflow)
        self.run_id = run_id
        self.max_buffered_events = max_buffered_events
        self.overflow: OverflowStrategy = overflow
        self.coalesce_deltas = coalesce_deltas
        self._cancel_run = cancel_run
        self._queue: deque[AgentEvent] = deque()
        self._terminal: AgentEvent | None = None
        self._terminal_delivered = False
        self._closed = False
        self._consumer_waiter: asyncio.Future[None] | None = None
        self._producer_waiter: asyncio.Future[None] | None = None
        self._iterating = False
        self._relieved = False
        self._cancelled = False
        self._cancel_reason: str | None = None
        self._dropped = 0
        self._task: asyncio.Task[AgentRunResult] = asyncio.get_running_loop().create_task(
            self._produce(producer)
        )
        self._task.add_done_callback(_retrieve)

    # -- state --------------------------------------------------------------------------------

    @property
    def result(self) -> _ResultAwaitable:
        """``await stream.result``: the :class:`AgentRunResult`, or the run's error raised."""
        return _ResultAwaitable(self)

    @property
    def buffered_event_count(self) -> int:
        """Events waiting for the consumer (the terminal one included)."""
        waiting_terminal = self._terminal is not None and not self._terminal_delivered
        return len(self._queue) + (1 if waiting_terminal else 0)

    @property
    def pending_consumer_count(self) -> int:
        """1 while the consumer waits for an event, else 0."""
        waiter = self._consumer_waiter
        return 1 if waiter is not None and not waiter.done() else 0

    @property
    def pending_producer_count(self) -> int:
        """1 while the run waits for buffer space (``overflow="block"``), else 0."""
        waiter = self._producer_waiter
        return 1 if waiter is not None and not waiter.done() else 0

    @property
    def is_cancelled(self) -> bool:
        """True once :meth:`cancel` was called on an unfinished stream."""
        return self._cancelled

    @property
    def cancel_reason(self) -> str | None:
        """The reason given to :meth:`cancel`."""
        return self._cancel_reason

    @property
    def dropped_event_count(self) -> int:
        """Events dropped by ``drop-oldest``/``drop-newest`` (or while nobody iterated)."""
        return self._dropped

    @property
    def done(self) -> bool:
        """True once the run finished and every event was produced."""
        return self._task.done()

    # The 0.x (camelCase) names of the counters, for code moved over from the reference.

    @property
    def bufferedEventCount(self) -> int:
        """0.x name of :attr:`buffered_event_count`."""
        return self.buffered_event_count

    @property
    def pendingConsumerCount(self) -> int:
        """0.x name of :attr:`pending_consumer_count`."""
        return self.pending_consumer_count

    @property
    def pendingProducerCount(self) -> int:
        """0.x name of :attr:`pending_producer_count`."""
        return self.pending_producer_count

    @property
    def isCancelled(self) -> bool:
        """0.x name of :attr:`is_cancelled`."""
        return self.is_cancelled

    def cancel(self, reason: str | None = None) -> None:
        """Cancel the run; ``result`` then raises the cancellation.

        A no-op once the run finished or its terminal event (``response.completed`` or
        ``error``) was produced: the outcome is decided by then.
        """
        if self._task.done() or self._cancelled or self._terminal is not None:
            return
        self._cancelled = True
        self._cancel_reason = reason or "AgentRunStream cancelled."
        self._cancel_run(self._cancel_reason)
        self._relieve()  # a run blocked on a full buffer must be able to wind down

    async def wait_finished(self) -> None:
        """Wait until the run stopped producing (its events stay buffered); never raises.

        Unlike awaiting :attr:`result`, this keeps the overflow strategy in force.
        """
        await asyncio.wait({self._task})

    async def wait_result(self) -> AgentRunResult:
        """The result (what ``await stream.result`` does)."""
        if not self._iterating:
            self._relieve()
        return await asyncio.shield(self._task)

    # -- producer side --------------------------------------------------------------------------

    async def _produce(self, producer: StreamProducer) -> AgentRunResult:
        try:
            return await producer(self._push)
        except BaseException as error:
            if self._terminal is None:
                self._terminal = _error_event(self.run_id, error)
            raise
        finally:
            self._closed = True
            self._wake_consumer()

    async def _push(self, event: AgentEvent) -> None:
        if event["type"] in _TERMINALS:
            self._terminal = event
            self._wake_consumer()
            return
        queue = self._queue
        if self.coalesce_deltas and event["type"] in _DELTAS and queue:
            last = cast(dict[str, Any], queue[-1])
            fresh = cast(dict[str, Any], event)
            if _stream_key(last) == _stream_key(fresh):
                queue[-1] = cast(
                    AgentEvent,
                    {**last, **fresh, "delta": f"{last.get('delta', '')}{fresh.get('delta', '')}"},
                )
                return
        capacity = self.max_buffered_events - 1
        while len(queue) >= capacity:
            if self._relieved or self.overflow == "drop-oldest":
                queue.popleft()
                self._dropped += 1
            elif self.overflow == "drop-newest":
                self._dropped += 1
                return
            elif self.overflow == "block":
                waiter = asyncio.get_running_loop().create_future()
                self._producer_waiter = waiter
                try:
                    await waiter
                finally:
                    self._producer_waiter = None
            else:
                raise AgentRunStreamOverflowError(self.max_buffered_events, run_id=self.run_id)
        queue.append(event)
        self._wake_consumer()

    def _relieve(self) -> None:
        """Nobody reads: never fail or stall the run on a full buffer from now on."""
        self._relieved = True
        self._wake_producer()

    def _wake_consumer(self) -> None:
        waiter = self._consumer_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _wake_producer(self) -> None:
        waiter = self._producer_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- consumer side --------------------------------------------------------------------------

    async def _next(self) -> AgentEvent | None:
        while True:
            if self._queue:
                event = self._queue.popleft()
                self._wake_producer()
                return event
            if self._terminal is not None and not self._terminal_delivered:
                self._terminal_delivered = True
                return self._terminal
            if self._closed:
                return None
            waiter = asyncio.get_running_loop().create_future()
            self._consumer_waiter = waiter
            try:
                await waiter
            finally:
                self._consumer_waiter = None

    def __aiter__(self) -> AsyncIterator[AgentEvent]:
        if self._iterating:
            raise StreamConsumedError("An AgentRunStream has exactly one consumer.")
        self._iterating = True
        return _EventIterator(self, self._events())

    def abandon(self) -> None:
        """The consumer dropped its iterator: cancel an unfinished run (internal)."""
        self.cancel(CONSUMER_STOPPED)

    async def _events(self) -> AsyncGenerator[AgentEvent, None]:
        finished = False
        try:
            while True:
                event = await self._next()
                if event is None:
                    break
                yield event
            finished = True
        finally:
            if not finished:
                self.cancel(CONSUMER_STOPPED)
        await asyncio.wait({self._task})
        error = None if self._task.cancelled() else self._task.exception()
        if error is not None:
            raise error

    async def aclose(self) -> None:
        """Stop: cancel an unfinished run and wait until it settled (its error is not raised)."""
        if not self._task.done():
            self.cancel(CONSUMER_STOPPED)
        self._relieve()
        await asyncio.wait({self._task})

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class _EventIterator:
    """The consumer's iterator: dropping it unfinished cancels the run at once.

    ``break`` out of ``async for`` drops it synchronously; the generator's own ``finally`` would
    only run once the event loop gets round to closing it.
    """

    __slots__ = ("_events", "_stream")

    def __init__(self, stream: AgentRunStream, events: AsyncGenerator[AgentEvent, None]) -> None:
        self._stream = stream
        self._events = events

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> AgentEvent:
        return await self._events.__anext__()

    async def aclose(self) -> None:
        """Stop iterating (cancels an unfinished run)."""
        await self._events.aclose()

    def __del__(self) -> None:
        # Runs synchronously when ``async for`` is left; the generator's own ``finally`` only
        # runs once the loop's async-generator finalizer is scheduled. Nothing may escape here.
        with contextlib.suppress(Exception):
            self._stream.abandon()


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark the outcome as seen: failures reach the caller through ``result`` and iteration."""
    if not task.cancelled():
        task.exception()
