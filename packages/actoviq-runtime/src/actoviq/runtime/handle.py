"""``RunHandle``: the consumer side of a streamed run, and its bounded event buffer (D5, 03 §1.15).

A handle is an async iterator of :class:`~actoviq.events.RunEvent` **and** an async context
manager: leaving ``async with`` cancels an unfinished run and waits for it to settle. The run's
outcome comes from ``await handle.result()`` (the iterator never raises a run failure).

Buffer policy (D5, 03 §8.2 S7):

* ``"drop-deltas"`` (default): the buffer holds ``stream_buffer_size`` entries. Adjacent text or
  reasoning deltas are coalesced. When it is full, only ``model.text.delta`` and
  ``model.reasoning.delta`` events are dropped; a ``stream.dropped`` marker with the count is
  delivered where the gap is. Lifecycle, tool and terminal events are never dropped.
* ``"block"``: the run waits for the consumer when the buffer is full (true backpressure).

Example:
    >>> # async with runtime.stream(agent, "hi") as handle:
    >>> #     async for event in handle:
    >>> #         if event.type == "model.text.delta":
    >>> #             print(event.data["delta"], end="")
    >>> #     result = await handle.result()
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Generator
from types import TracebackType
from typing import Any, Final, Generic, Literal, Self, TypeAlias, TypeVar, cast

import attrs

from actoviq.core import JsonObject, JsonValue, RunResult
from actoviq.events import (
    RunEvent,
    ToolCompletedEvent,
    ToolEvent,
    ToolFailedEvent,
    ToolProgressEvent,
    ToolReconciledEvent,
    ToolRejectedEvent,
    ToolStartedEvent,
    ToolSuspendedEvent,
)
from actoviq.runtime.errors import RunHandleConsumedError

__all__ = ["DROPPED_EVENT_TYPE", "BufferPolicy", "RunHandle"]

TOutput = TypeVar("TOutput")

BufferPolicy: TypeAlias = Literal["drop-deltas", "block"]
"""What a run handle does when its event buffer is full: drop text deltas, or block the run."""

DROPPED_EVENT_TYPE: Final = "stream.dropped"
"""The marker delivered where deltas were dropped: ``{count, firstSequence, lastSequence}``."""

_TOOL_EVENTS: Final = (
    ToolStartedEvent,
    ToolProgressEvent,
    ToolCompletedEvent,
    ToolFailedEvent,
    ToolRejectedEvent,
    ToolReconciledEvent,
    ToolSuspendedEvent,
)
_DROPPABLE: Final = frozenset({"model.text.delta", "model.reasoning.delta"})
_COALESCE_LIMIT: Final = 64 * 1024  # characters; keeps memory flat on endless streams


def _delta_key(event: RunEvent) -> tuple[str, tuple[str, str, object]] | None:
    """``(text, stream key)`` of a coalescable delta, or None (opaque, empty or malformed).

    Two deltas may merge when their stream keys (type, run, output index) are equal.
    """
    data: Any = event.data
    if type(data) is not dict:
        return None
    mapping = cast(dict[str, Any], data)
    delta = mapping.get("delta")
    if type(delta) is not str or not delta or "opaque" in mapping:
        return None
    return delta, (event.type, event.run_id, mapping.get("outputIndex"))


def _text_delta(event: RunEvent) -> str | None:
    data = event.data
    if type(data) is not dict:
        return None
    delta = cast(dict[str, object], data).get("delta")
    return delta if type(delta) is str else None


class EventBuffer:
    """The bounded queue between a run (producer) and its handle (one consumer)."""

    __slots__ = (
        "_capacity",
        "_closed",
        "_dropped",
        "_gap_start",
        "_key",
        "_last",
        "_marked",
        "_parts",
        "_parts_len",
        "_policy",
        "_queue",
        "_space",
        "_template",
        "_waiter",
    )

    def __init__(self, capacity: int, policy: BufferPolicy = "drop-deltas") -> None:
        self._capacity = capacity
        self._policy: BufferPolicy = policy
        self._queue: deque[RunEvent] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._space: asyncio.Future[None] | None = None
        self._closed = False
        self._dropped = 0
        self._marked = 0
        self._gap_start = 0
        self._template: RunEvent | None = None
        # Coalescing in progress on the queue's last entry: its text pieces (joined once, when
        # the entry is sealed) and the latest merged-in event, whose envelope the merge takes.
        self._parts: list[str] | None = None
        self._parts_len = 0
        self._last: RunEvent | None = None
        self._key: tuple[str, str, object] | None = None

    @property
    def dropped(self) -> int:
        """How many deltas were dropped so far (all markers included)."""
        return self._dropped

    def __len__(self) -> int:
        return len(self._queue)

    def release_backpressure(self) -> None:
        """Switch ``block`` to ``drop-deltas`` (nobody will consume: never stall the run)."""
        self._policy = "drop-deltas"
        self._wake_space()

    def _wake_consumer(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _wake_space(self) -> None:
        space = self._space
        if space is not None and not space.done():
            space.set_result(None)

    def _seal(self) -> None:
        """Materialise the coalesced last entry: the latest envelope with the joined text."""
        parts = self._parts
        last = self._last
        if parts is None or last is None:
            return
        self._parts = None
        self._last = None
        merged = dict(cast(dict[str, Any], last.data))
        merged["delta"] = "".join(parts)
        self._queue[-1] = attrs.evolve(last, data=merged)

    def _merge(self, event: RunEvent) -> bool:
        """Coalesce ``event`` into the queue's last entry when both are adjacent deltas."""
        found = _delta_key(event)
        if found is None:
            return False
        delta, key = found
        parts = self._parts
        if parts is not None:
            if key != self._key or self._parts_len + len(delta) > _COALESCE_LIMIT:
                return False
            parts.append(delta)
            self._parts_len += len(delta)
            self._last = event
            return True
        tail = _delta_key(self._queue[-1])
        if tail is None or tail[1] != key or len(tail[0]) + len(delta) > _COALESCE_LIMIT:
            return False
        self._parts = [tail[0], delta]
        self._parts_len = len(tail[0]) + len(delta)
        self._last = event
        self._key = key
        return True

    def _flush_marker(self) -> None:
        if not self._dropped or self._template is None:
            return
        template = self._template
        self._template = None
        count = self._dropped - self._marked
        marker = attrs.evolve(
            template,
            event_id=str(uuid.uuid4()),
            type=DROPPED_EVENT_TYPE,
            data={
                "count": count,
                "firstSequence": self._gap_start,
                "lastSequence": template.sequence,
            },
        )
        self._marked = self._dropped
        self._queue.append(marker)

    async def put(self, event: RunEvent) -> None:
        """Add one event, applying the policy (only ``block`` ever waits)."""
        if self._closed:
            return
        queue = self._queue
        if queue and event.type in _DROPPABLE and self._merge(event):
            return
        while len(queue) >= self._capacity:
            if self._policy == "block":
                loop = asyncio.get_running_loop()
                self._space = loop.create_future()
                await self._space
                if self._closed:
                    return
                continue
            if event.type in _DROPPABLE:
                if self._template is None:
                    self._gap_start = event.sequence
                self._dropped += 1
                self._template = event
                return
            break  # lifecycle, tool and terminal events are never dropped
        self._seal()
        self._flush_marker()
        queue.append(event)
        self._wake_consumer()

    def close(self) -> None:
        """No more events: the consumer drains what is buffered, then stops."""
        if self._closed:
            return
        self._seal()
        self._flush_marker()
        self._closed = True
        self._wake_consumer()
        self._wake_space()

    async def get(self) -> RunEvent | None:
        """The next event, or None once closed and drained."""
        while True:
            queue = self._queue
            if queue:
                if self._parts is not None and len(queue) == 1:
                    self._seal()
                event = queue.popleft()
                if self._space is not None:
                    self._wake_space()
                return event
            if self._closed:
                return None
            loop = asyncio.get_running_loop()
            self._waiter = loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None


class RunHandle(Generic[TOutput]):
    """A started run: iterate its events, await its result, cancel it, snapshot its state.

    Created by ``AgentRuntime.stream`` and ``AgentRuntime.resume``; execution has already been
    scheduled when you get it. Only one consumer may iterate it.

    Attributes:
        run_id: the run's id.
    """

    def __init__(
        self,
        run_id: str,
        *,
        buffer: EventBuffer | None,
        cancel: Callable[[object], None],
        snapshot: Callable[[], JsonObject],
    ) -> None:
        self.run_id = run_id
        self._buffer = buffer
        self._cancel = cancel
        self._snapshot = snapshot
        self._task: asyncio.Task[RunResult[TOutput]] | None = None
        self._iterating = False
        self._stopped = False

    def _attach(self, task: asyncio.Task[RunResult[TOutput]]) -> None:
        self._task = task

    @property
    def done(self) -> bool:
        """True once the run settled (completed, interrupted, cancelled or failed)."""
        return self._task is not None and self._task.done()

    def add_done_callback(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` once the run settles (at once, from the loop, if it has)."""
        task = self._task
        assert task is not None, "RunHandle is not attached to a run."
        task.add_done_callback(lambda _: callback())

    def cancel(self, reason: object = None) -> None:
        """Cancel the run (a no-op once it settled); ``reason`` ends up in ``run.cancelled``."""
        if not self.done:
            self._cancel(reason)

    async def result(self) -> RunResult[TOutput]:
        """Wait for the outcome; raises the run's error if it failed."""
        task = self._task
        assert task is not None, "RunHandle is not attached to a run."
        if not self._iterating and self._buffer is not None:
            self._buffer.release_backpressure()
        return await asyncio.shield(task)

    def __await__(self) -> Generator[Any, None, RunResult[TOutput]]:
        return self.result().__await__()

    async def snapshot(self) -> JsonObject:
        """A copy of the latest serialised run state (``SerializedRunState`` JSON)."""
        return self._snapshot()

    # -- iteration --------------------------------------------------------------------------------

    def __aiter__(self) -> Self:
        if self._iterating:
            raise RunHandleConsumedError("A RunHandle has exactly one consumer.")
        if self._buffer is None:
            raise RunHandleConsumedError("This run has no event stream (use runtime.stream()).")
        self._iterating = True
        return self

    async def __anext__(self) -> RunEvent:
        buffer = self._buffer
        if buffer is None or self._stopped:
            raise StopAsyncIteration
        event = await buffer.get()
        if event is None:
            raise StopAsyncIteration
        return event

    async def aclose(self) -> None:
        """Stop consuming: cancels an unfinished run and waits until it settled."""
        self._stopped = True
        task = self._task
        if task is None:
            return
        if not task.done():
            self._cancel("Run event consumer stopped.")
        await asyncio.wait({task})

    async def athrow(self, error: BaseException) -> RunEvent:
        """Fail the consumer: cancel the run ("Run event consumer failed."), raise ``error``."""
        self._stopped = True
        task = self._task
        if task is not None and not task.done():
            self._cancel("Run event consumer failed.")
            await asyncio.wait({task})
        raise error

    # -- filtered views (each consumes the handle: the one consumer) -------------------------------

    async def text_deltas(self) -> AsyncIterator[str]:
        """The assistant's streamed text, piece by piece (``model.text.delta``), nothing else.

        Example:
            >>> # async with runtime.stream(agent, "hi") as handle:
            >>> #     async for text in handle.text_deltas():
            >>> #         print(text, end="", flush=True)
            >>> #     result = await handle.result()
        """
        async for event in self:
            if event.type == "model.text.delta":
                delta = _text_delta(event)
                if delta is not None:
                    yield delta

    async def tool_events(self) -> AsyncIterator[ToolEvent]:
        """Only the tool lifecycle events (``tool.started``, ``tool.completed`` ...).

        Every ``tool.*`` type: started, progress, completed, failed, rejected, reconciled.
        """
        async for event in self:
            if isinstance(event, _TOOL_EVENTS):
                yield event

    async def partial_output(self) -> AsyncIterator[JsonValue]:
        """Best-effort structured output while it streams: the JSON text so far, parsed.

        For an agent with ``output``: each time the streamed text of the current model call
        parses to a new value (unfinished strings, arrays and objects are closed), that value is
        yielded; it restarts with each model call (a tool turn, a retry). The values are
        previews, not validated; the validated, typed output is ``(await handle.result()).output``.
        """
        import jiter  # lazy: only streams of structured output need it

        text = bytearray()
        last: JsonValue | None = None
        async for event in self:
            kind = event.type
            if kind == "model.requested":
                text.clear()
                last = None
                continue
            delta = _text_delta(event) if kind == "model.text.delta" else None
            if delta is None:
                continue
            text.extend(delta.encode("utf-8"))
            try:
                value = cast(
                    JsonValue,
                    jiter.from_json(
                        bytes(text), partial_mode="trailing-strings", allow_inf_nan=False
                    ),
                )
            except ValueError:
                continue  # not JSON (yet): prose, or a half-written number or literal
            if value != last:
                last = value
                yield value

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
