"""Envelope checks and the identity window's entries (the projector's validation helpers).

The projector keeps the last ``dedupe_window_size`` source events by ``eventId`` to recognise
an exact replay. A runtime text delta (the bulk of every stream) is remembered as a tuple of its
envelope and payload values rather than as the event: the tuple holds only strings and ints, so
the garbage collector stops tracking it, and thousands of remembered deltas add nothing to the
collections of a long stream (a remembered event object would be promoted to the oldest
generation and scanned by every full collection). :func:`same_event` compares either form with
a new event exactly as ``RunEvent.__eq__`` would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from actoviq.events import EVENT_CLASSES, RunEvent
from actoviq.surfaces._state import RunState, TraceKey
from actoviq.surfaces.errors import (
    SurfaceEventSchemaVersionError,
    SurfaceEventSequenceError,
    SurfaceEventTraceError,
    SurfaceEventValidationError,
)

__all__ = [
    "DELTA_CLASS",
    "MAX_SAFE",
    "MISSING",
    "WindowEntry",
    "check_envelope",
    "check_new_run",
    "delta_entry",
    "same_event",
]

MAX_SAFE: Final = 2**53 - 1
DELTA_CLASS: Final = EVENT_CLASSES["model.text.delta"]
"""The catalogue class of every ``model.text.delta`` event (the class follows the type)."""

MISSING: Final = object()
"""Stands for an absent ``outputIndex`` in a window entry (equal to no JSON value)."""

WindowEntry = RunEvent | tuple[Any, ...]
"""What the identity window keeps per ``eventId``: the event, or a text delta's values."""


def delta_entry(event: RunEvent, data: Mapping[str, Any]) -> tuple[Any, ...]:
    """The window entry of a runtime text delta (``data`` is ``{delta[, outputIndex]}``).

    The projector's hot path builds the same tuple inline (from the run's trace context, equal
    to the event's once validated).
    """
    envelope = (
        event.run_id,
        event.parent_run_id,
        event.trace_id,
        event.span_id,
        event.parent_span_id,
    )
    return (
        envelope,
        event.sequence,
        event.timestamp,
        data["delta"],
        data.get("outputIndex", MISSING),
    )


def same_event(seen: WindowEntry, event: RunEvent) -> bool:
    """Whether ``event`` is an exact replay of the remembered ``seen`` (``RunEvent.__eq__``)."""
    if seen.__class__ is not tuple:
        return seen == event
    data: Any = event.data
    return (
        event.__class__ is DELTA_CLASS
        and event.schema_version == 1
        and event.type == "model.text.delta"
        and data.__class__ is dict
        and "delta" in data
        and (len(data) == 1 or (len(data) == 2 and "outputIndex" in data))
        and delta_entry(event, data) == seen
    )


def _blank(value: object) -> bool:
    return not isinstance(value, str) or not value or value.isspace()


def check_envelope(event: RunEvent) -> None:
    """Raise the precise typed error for an invalid envelope (the slow path)."""
    if not isinstance(event, RunEvent):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise SurfaceEventValidationError(
            f"Expected a RunEvent, got {type(event).__name__}.",
        )
    if event.schema_version != 1 or type(event.schema_version) is not int:
        raise SurfaceEventSchemaVersionError(
            f"Unsupported RunEvent schemaVersion {event.schema_version!r} (expected 1).",
            details={"schemaVersion": repr(event.schema_version)},
        )
    for name in ("event_id", "run_id", "type"):
        if _blank(getattr(event, name)):
            raise SurfaceEventValidationError(
                f"RunEvent {name} must be a non-blank string.", details={"field": name}
            )
    for name in ("trace_id", "span_id"):
        if _blank(getattr(event, name)):
            raise SurfaceEventTraceError(
                f"RunEvent {name} must be a non-blank string (run {event.run_id}).",
                details={"field": name, "runId": event.run_id},
            )
    sequence = event.sequence
    if type(sequence) is not int or sequence < 1 or sequence > MAX_SAFE:
        raise SurfaceEventSequenceError(
            f"RunEvent sequence must be a positive safe integer, got {sequence!r}.",
            details={"runId": event.run_id},
        )


def check_new_run(
    event: RunEvent,
    trace: TraceKey,
    runs: Mapping[str, RunState],
    children: Mapping[str, set[str]],
) -> None:
    """Raise if a run seen for the first time disagrees with its known parent or children."""
    run_id = event.run_id
    parent_run_id, trace_id, span_id, parent_span_id = trace
    if parent_run_id is not None:
        if parent_span_id is None:
            raise SurfaceEventTraceError(
                f"Child run {run_id} of {parent_run_id} has no parentSpanId.",
                details={"runId": run_id},
            )
        parent = runs.get(parent_run_id)
        if parent is not None and (
            parent.trace[1] != trace_id or parent.trace[2] != parent_span_id
        ):
            raise SurfaceEventTraceError(
                f"Child run {run_id} does not match the trace of parent run {parent_run_id}.",
                details={"runId": run_id, "parentRunId": parent_run_id},
            )
    for child_id in children.get(run_id, ()):
        child = runs.get(child_id)
        if child is not None and (child.trace[1] != trace_id or child.trace[3] != span_id):
            raise SurfaceEventTraceError(
                f"Late parent run {run_id} does not match the trace of its child {child_id}.",
                details={"runId": run_id, "childRunId": child_id},
            )
