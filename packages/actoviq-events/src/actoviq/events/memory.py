"""``InMemoryEventSink``: keeps every delivered event, checks per-run ordering (spec 03 §5.3)."""

from __future__ import annotations

import copy
import json
from collections import deque
from typing import Final, cast

from actoviq.core import JsonObject, JsonValue
from actoviq.events.envelope import RunEvent, run_event_to_json
from actoviq.events.errors import EventDispatcherClosedError, EventOrderError, EventValidationError

__all__ = ["InMemoryEventSink"]


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def _copy(data: JsonValue) -> JsonValue:
    """A deep copy: direct for scalars and (two-level) dicts of scalars, else a JSON round-trip.

    The JSON round-trip runs in C and is several times faster than ``copy.deepcopy``.
    """
    kind = data.__class__
    if kind in _SCALARS:
        return data
    if kind is dict:
        copied: dict[str, JsonValue] = {}
        for key, value in cast(dict[str, JsonValue], data).items():
            value_kind = value.__class__
            if value_kind in _SCALARS:
                copied[key] = value
            elif value_kind is dict and all(
                entry.__class__ in _SCALARS for entry in cast(JsonObject, value).values()
            ):
                copied[key] = cast(JsonObject, value).copy()
            else:
                break
        else:
            return copied
    try:
        return cast(JsonValue, json.loads(json.dumps(data, allow_nan=False)))
    except (TypeError, ValueError):  # not strict JSON (no redaction processor ran)
        return copy.deepcopy(data)


class InMemoryEventSink:
    """Stores every event, in delivery order, isolated from the code that emitted it.

    Ownership: :meth:`write` stores a deep copy of ``event.data``, so a caller that writes events
    directly may reuse and mutate its payloads. Behind an :class:`EventDispatcher` the sink is
    written through :meth:`write_owned` whenever the data is a fresh clone made by the redaction
    processor (the default chain); that clone references nothing the emitter's caller holds, so
    it is stored as delivered, without a second copy. Stored events are shared, read-only values
    (the same object the dispatcher returned): do not mutate their ``data``.

    * an already-seen ``event_id`` is ignored silently (dedupe);
    * a run's sequence must be strictly greater than the last one stored for that run, else
      :class:`EventOrderError` (``"Run <id> event sequence <n> is not greater than <m>."``).

    Args:
        id: the sink id (default ``"memory"``).
        max_events: keep at most this many events (oldest dropped; ``None`` = unbounded). Per-run
            ordering still covers dropped events. To keep memory bounded, a bounded sink's dedupe
            remembers the last ``window = max(2 * max_events, 8192)`` event ids and its ordering
            check the last sequence of the ``window`` most recently written runs (a run idle
            while ``window`` other runs were written is forgotten).

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
        self._max_events = max_events
        self._seen: set[str] = set()
        # Bounded mode only: the ids in arrival order (dedupe window) and the run-table bound.
        self._window: deque[str] | None = None if max_events is None else deque()
        self._window_size = 0 if max_events is None else max(2 * max_events, 8192)
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

    def write_owned(self, event: RunEvent) -> None:
        """Like :meth:`write`, but keep ``event`` as is: its data must be owned by the pipeline.

        The dispatcher calls this only when a ``clones_data`` processor (redaction) produced the
        data; see the class docstring. Synchronous, so the dispatcher awaits nothing.

        Raises:
            EventOrderError: the run's sequence did not increase.
            EventDispatcherClosedError: the sink was closed.
        """
        self._store(event, copy_data=False)

    def store(self, event: RunEvent) -> bool:
        """The synchronous body of :meth:`write`; returns False for a duplicate."""
        return self._store(event, copy_data=True)

    def _store(self, event: RunEvent, *, copy_data: bool) -> bool:
        if self._closed:
            raise EventDispatcherClosedError(f'Event sink "{self.id}" is closed.')
        event_id = event.event_id
        seen = self._seen
        if event_id in seen:
            return False
        run_id = event.run_id
        sequence = event.sequence
        runs = self._last_sequence
        last = runs.get(run_id)
        if last is not None and sequence <= last:
            raise EventOrderError(
                f"Run {run_id} event sequence {sequence} is not greater than {last}.",
                details={"runId": run_id, "sequence": sequence, "last": last},
            )
        events = self._events
        if len(events) == self._max_events:
            self._dropped += 1
        events.append(event.with_data(_copy(event.data)) if copy_data else event)
        seen.add(event_id)
        window = self._window
        if window is None:
            runs[run_id] = sequence
            return True
        if len(window) == self._window_size:
            seen.discard(window.popleft())
        window.append(event_id)
        if last is not None:
            del runs[run_id]  # re-inserted below: the table stays in least-recently-written order
        elif len(runs) == self._window_size:
            del runs[next(iter(runs))]
        runs[run_id] = sequence
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
        if self._window is not None:
            self._window.clear()
        self._last_sequence.clear()
        self._dropped = 0

    async def aclose(self) -> None:
        """Refuse further writes; stored events stay readable. Idempotent."""
        self._closed = True
