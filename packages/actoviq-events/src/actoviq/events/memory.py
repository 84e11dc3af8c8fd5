"""``InMemoryEventSink``: keeps every delivered event, checks per-run ordering (spec 03 §5.3)."""

from __future__ import annotations

import copy
import json
from collections import deque
from typing import cast

from actoviq.core import JsonObject, JsonValue
from actoviq.events.envelope import RunEvent, run_event_to_json
from actoviq.events.errors import EventDispatcherClosedError, EventOrderError, EventValidationError

__all__ = ["InMemoryEventSink"]


def _copy(data: JsonValue) -> JsonValue:
    """A deep copy; the JSON round-trip runs in C and is several times faster than deepcopy."""
    if data is None or type(data) in (str, int, float, bool):
        return data
    try:
        return cast(JsonValue, json.loads(json.dumps(data, allow_nan=False)))
    except (TypeError, ValueError):  # not strict JSON (no redaction processor ran)
        return copy.deepcopy(data)


class InMemoryEventSink:
    """Stores a deep copy of every event, in delivery order.

    * an already-seen ``event_id`` is ignored silently (dedupe);
    * a run's sequence must be strictly greater than the last one stored for that run, else
      :class:`EventOrderError` (``"Run <id> event sequence <n> is not greater than <m>."``).

    Args:
        id: the sink id (default ``"memory"``).
        max_events: keep at most this many events (oldest dropped; ``None`` = unbounded). Per-run
            ordering still covers dropped events; dedupe then remembers the last
            ``max(2 * max_events, 8192)`` event ids, so memory stays bounded.

    Example:
        >>> sink = InMemoryEventSink()
        >>> sink.events
        ()
    """

    def __init__(self, id: str = "memory", *, max_events: int | None = None) -> None:
        if max_events is not None and max_events < 1:
            raise EventValidationError("InMemoryEventSink max_events must be positive.")
        self.id = id
        self._events: deque[RunEvent] = deque(maxlen=max_events)
        self._seen: set[str] = set()
        self._seen_order: deque[str] | None = (
            deque() if max_events is None else deque(maxlen=max(2 * max_events, 8192))
        )
        self._last_sequence: dict[str, int] = {}
        self._dropped = 0
        self._closed = False

    async def write(self, event: RunEvent) -> None:
        """Store ``event`` (see the class docstring for the checks).

        Raises:
            EventOrderError: the run's sequence did not increase.
            EventDispatcherClosedError: the sink was closed.
        """
        self.store(event)

    def store(self, event: RunEvent) -> bool:
        """The synchronous body of :meth:`write`; returns False for a duplicate."""
        if self._closed:
            raise EventDispatcherClosedError(f'Event sink "{self.id}" is closed.')
        if event.event_id in self._seen:
            return False
        last = self._last_sequence.get(event.run_id)
        if last is not None and event.sequence <= last:
            raise EventOrderError(
                f"Run {event.run_id} event sequence {event.sequence} is not greater than {last}.",
                details={"runId": event.run_id, "sequence": event.sequence, "last": last},
            )
        if self._events.maxlen is not None and len(self._events) == self._events.maxlen:
            self._dropped += 1
        self._events.append(event.with_data(_copy(event.data)))
        self._seen.add(event.event_id)
        order = self._seen_order
        if order is not None and order.maxlen is not None:
            if len(order) == order.maxlen:
                self._seen.discard(order[0])
            order.append(event.event_id)
        self._last_sequence[event.run_id] = event.sequence
        return True

    @property
    def events(self) -> tuple[RunEvent, ...]:
        """The stored events, in delivery order."""
        return tuple(self._events)

    @property
    def dropped(self) -> int:
        """Events evicted because of ``max_events``."""
        return self._dropped

    def events_for_run(self, run_id: str) -> tuple[RunEvent, ...]:
        """The stored events of one run, in sequence order."""
        return tuple(event for event in self._events if event.run_id == run_id)

    def last_sequence(self, run_id: str) -> int:
        """The highest sequence stored for ``run_id`` (0 if none)."""
        return self._last_sequence.get(run_id, 0)

    def types(self) -> list[str]:
        """The stored event types, in order (handy in tests)."""
        return [event.type for event in self._events]

    def to_json(self) -> list[JsonObject]:
        """The stored events as wire JSON."""
        return [run_event_to_json(event) for event in self._events]

    def clear(self) -> None:
        """Forget everything (including dedupe and ordering state)."""
        self._events.clear()
        self._seen.clear()
        if self._seen_order is not None:
            self._seen_order.clear()
        self._last_sequence.clear()
        self._dropped = 0

    async def aclose(self) -> None:
        """Refuse further writes; stored events stay readable. Idempotent."""
        self._closed = True
