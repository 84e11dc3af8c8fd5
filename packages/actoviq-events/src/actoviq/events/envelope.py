"""The ``RunEvent`` envelope (spec 03 §5.1, decision D2).

Example:
    >>> event = RunEvent(
    ...     event_id="e1", sequence=1, run_id="r1", trace_id="0" * 32, span_id="1" * 16,
    ...     type="run.started", timestamp="2026-01-01T00:00:00.000Z", data={"agentId": "a"},
    ... )
    >>> run_event_to_json(event)["schemaVersion"]
    1
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Self, cast

import attrs

from actoviq.core import (
    MAX_WIRE_DEPTH,
    ItemValidationError,
    JsonObject,
    JsonValue,
    assert_json_value,
    converter,
    dumps_compact,
    loads_strict,
    register_wire_class,
)
from actoviq.events.errors import EventSchemaVersionError, EventValidationError

__all__ = [
    "SCHEMA_VERSION",
    "RunEvent",
    "event_class",
    "register_event_class",
    "run_event_dumps",
    "run_event_from_json",
    "run_event_to_json",
    "run_events_from_json",
    "run_events_to_json",
]

SCHEMA_VERSION: Final = 1
"""The only envelope version this package writes and reads."""


def _check_text(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not str or not value:
        raise EventValidationError(
            f"RunEvent.{attribute.name} must be a non-empty string, got {value!r}.",
            details={"field": attribute.name},
        )


def _check_opt_text(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        _check_text(instance, attribute, value)


def _check_sequence(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not int or value < 1:
        raise EventValidationError(
            f"RunEvent.sequence must be an integer >= 1, got {value!r}.",
            details={"field": "sequence"},
        )


def _check_schema(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value != SCHEMA_VERSION or type(value) is not int:
        raise EventSchemaVersionError(
            f"Unsupported run event schemaVersion {value!r} (expected {SCHEMA_VERSION}).",
            details={"schemaVersion": repr(value)},
        )


@attrs.frozen(kw_only=True, slots=True)
class RunEvent:
    """One event of one run: an envelope around an open ``type`` and JSON ``data``.

    Envelope fields never go into ``data``. Ordering is guaranteed per run only, by
    ``sequence``; consumers dedupe by ``event_id``. ``data`` is expected to be a strict JSON value
    (the default redaction processor guarantees it); it is left out of ``repr`` so an unredacted
    event never leaks through logs or tracebacks.

    Attributes:
        schema_version: always :data:`SCHEMA_VERSION`.
        event_id: unique id (a UUIDv4 by default).
        sequence: strictly increasing per run, starting at 1.
        run_id: the run that emitted the event.
        parent_run_id: the parent run for child runs.
        trace_id: 32 lowercase hex chars, shared by a run tree.
        span_id: 16 lowercase hex chars, the run's span.
        parent_span_id: the parent run's span.
        type: open string, e.g. ``"run.started"`` (see :data:`EVENT_TYPES`).
        timestamp: ISO-8601 UTC creation time with milliseconds and ``Z``.
        data: the payload.
    """

    schema_version: int = attrs.field(default=SCHEMA_VERSION, validator=_check_schema)
    event_id: str = attrs.field(validator=_check_text)
    sequence: int = attrs.field(validator=_check_sequence)
    run_id: str = attrs.field(validator=_check_text)
    parent_run_id: str | None = attrs.field(default=None, validator=_check_opt_text)
    trace_id: str = attrs.field(validator=_check_text)
    span_id: str = attrs.field(validator=_check_text)
    parent_span_id: str | None = attrs.field(default=None, validator=_check_opt_text)
    type: str = attrs.field(validator=_check_text)
    timestamp: str = attrs.field(validator=_check_text)
    data: JsonValue = attrs.field(repr=False)

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        """Create an instance of the class of ``type`` (see :mod:`actoviq.events.catalogue`).

        The class always follows ``type``: an event of a catalogued type is an instance of its
        typed class however it was built (by a sequencer, from JSON, by ``attrs.evolve``), so
        ``isinstance`` and ``match`` work on every event. Other types stay ``RunEvent``.
        """
        kind: object = kwargs.get("type")
        target: type[RunEvent] = (
            _EVENT_CLASSES.get(kind, RunEvent) if isinstance(kind, str) else cls
        )
        if target is cls or issubclass(target, cls):
            return cast(Self, _new(target))
        # e.g. ``attrs.evolve(text_delta, type="stream.dropped")``: Python will not call
        # ``__init__`` on an instance of another class, so construct it fully here.
        instance = _new(target)
        RunEvent.__init__(instance, **kwargs)
        return cast(Self, instance)

    def with_data(self, data: JsonValue) -> RunEvent:
        """Return a copy with other ``data`` (envelope unchanged, so not re-validated)."""
        clone = _new(self.__class__)
        _set_schema_version(clone, self.schema_version)
        _set_event_id(clone, self.event_id)
        _set_sequence(clone, self.sequence)
        _set_run_id(clone, self.run_id)
        _set_parent_run_id(clone, self.parent_run_id)
        _set_trace_id(clone, self.trace_id)
        _set_span_id(clone, self.span_id)
        _set_parent_span_id(clone, self.parent_span_id)
        _set_type(clone, self.type)
        _set_timestamp(clone, self.timestamp)
        _set_data(clone, data)
        return clone


# Fast construction of the frozen, slotted envelope: write the slots through their descriptors
# (what attrs' own __init__ does, minus the per-field validator calls) where every field is
# already known to be valid. Twice as fast as ``RunEvent(...)``; this is the per-event hot path.
_new = object.__new__
_EVENT_CLASSES: dict[str, type[RunEvent]] = {}


def register_event_class(type: str, cls: type[RunEvent]) -> None:
    """Make ``cls`` (a ``RunEvent`` subclass with no slots of its own) the class of ``type``.

    Used by :mod:`actoviq.events.catalogue`; a type is registered once.

    Raises:
        EventValidationError: ``type`` has another class already, or ``cls`` is not a
            slot-free ``RunEvent`` subclass.
    """
    if not issubclass(cls, RunEvent) or cls.__dict__.get("__slots__", None) != ():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise EventValidationError(
            f"{cls.__name__} must be a RunEvent subclass with __slots__ = ()."
        )
    known = _EVENT_CLASSES.get(type)
    if known is not None and known is not cls:
        raise EventValidationError(f'Event type "{type}" already has the class {known.__name__}.')
    _EVENT_CLASSES[type] = cls
    register_wire_class(cls)


def event_class(type: str) -> type[RunEvent]:
    """The class events of ``type`` are instances of (``RunEvent`` for unknown types)."""
    return _EVENT_CLASSES.get(type, RunEvent)


def _slot(name: str) -> Callable[[RunEvent, object], None]:
    descriptor: Any = RunEvent.__dict__[name]
    return descriptor.__set__


_set_schema_version = _slot("schema_version")
_set_event_id = _slot("event_id")
_set_sequence = _slot("sequence")
_set_run_id = _slot("run_id")
_set_parent_run_id = _slot("parent_run_id")
_set_trace_id = _slot("trace_id")
_set_span_id = _slot("span_id")
_set_parent_span_id = _slot("parent_span_id")
_set_type = _slot("type")
_set_timestamp = _slot("timestamp")
_set_data = _slot("data")


def stamp_run_event(
    event_id: str,
    sequence: int,
    run_id: str,
    parent_run_id: str | None,
    trace_id: str,
    span_id: str,
    parent_span_id: str | None,
    type: str,
    timestamp: str,
    data: JsonValue,
) -> RunEvent:
    """Build a schema-version-1 event for a sequencer: same checks as ``RunEvent(...)``, faster.

    Every field is checked with cheap exact-type tests; if one fails, the regular constructor runs
    so its validator raises the usual precise error.

    Raises:
        EventValidationError: a field is invalid.
    """
    if (
        event_id.__class__ is not str
        or not event_id
        or sequence.__class__ is not int
        or sequence < 1
        or type.__class__ is not str
        or not type
        or timestamp.__class__ is not str
        or not timestamp
        or run_id.__class__ is not str
        or not run_id
        or trace_id.__class__ is not str
        or not trace_id
        or span_id.__class__ is not str
        or not span_id
        or (parent_run_id is not None and (parent_run_id.__class__ is not str or not parent_run_id))
        or (
            parent_span_id is not None
            and (parent_span_id.__class__ is not str or not parent_span_id)
        )
    ):
        # Rare: let the attrs validators raise their precise error.
        return RunEvent(
            event_id=event_id,
            sequence=sequence,
            run_id=run_id,
            parent_run_id=parent_run_id,
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent_span_id,
            type=type,
            timestamp=timestamp,
            data=data,
        )
    return build_run_event_unchecked(
        event_id,
        sequence,
        run_id,
        parent_run_id,
        trace_id,
        span_id,
        parent_span_id,
        type,
        timestamp,
        data,
    )


def build_run_event_unchecked(
    event_id: str,
    sequence: int,
    run_id: str,
    parent_run_id: str | None,
    trace_id: str,
    span_id: str,
    parent_span_id: str | None,
    type: str,
    timestamp: str,
    data: JsonValue,
) -> RunEvent:
    """Build a schema-version-1 event WITHOUT any check: every field must already be valid.

    For callers that have validated each field themselves (the sequencer checks what its id
    factory and clock return; the trace fields come from a validated ``TraceContext``). Anyone
    else uses :func:`stamp_run_event` or ``RunEvent(...)``.
    """
    event = _new(_EVENT_CLASSES.get(type, RunEvent))
    _set_schema_version(event, SCHEMA_VERSION)
    _set_event_id(event, event_id)
    _set_sequence(event, sequence)
    _set_run_id(event, run_id)
    _set_parent_run_id(event, parent_run_id)
    _set_trace_id(event, trace_id)
    _set_span_id(event, span_id)
    _set_parent_span_id(event, parent_span_id)
    _set_type(event, type)
    _set_timestamp(event, timestamp)
    _set_data(event, data)
    return event


register_wire_class(RunEvent)


def run_event_to_json(event: RunEvent) -> JsonObject:
    """Serialise an event to its wire mapping (camelCase, absent optionals omitted)."""
    return cast(JsonObject, converter.unstructure(event))


def run_event_from_json(data: object) -> RunEvent:
    """Load an event from its wire mapping (or JSON text).

    Raises:
        EventSchemaVersionError: ``schemaVersion`` is missing or not :data:`SCHEMA_VERSION`
            (consumers must stop on an unknown version, spec 03 §5.1).
        EventValidationError: an envelope field is missing, unknown or invalid.
    """
    if isinstance(data, str | bytes):
        # The envelope adds one level around data, which may carry a whole document.
        data = loads_strict(data, "run event", max_depth=MAX_WIRE_DEPTH + 1)
    if type(data) is not dict:
        raise EventValidationError(f"A run event must be a JSON object, got {type(data).__name__}.")
    mapping = cast(dict[str, Any], data)
    if "schemaVersion" not in mapping:
        raise EventSchemaVersionError("Run event is missing schemaVersion.")
    assert_json_value(mapping.get("data"), "run event data", max_depth=MAX_WIRE_DEPTH)
    try:
        return converter.structure(mapping, RunEvent)
    except ItemValidationError as error:
        raise EventValidationError(error.message, details=error.details) from None


def run_events_to_json(events: list[RunEvent] | tuple[RunEvent, ...]) -> list[JsonObject]:
    """Serialise several events."""
    return [run_event_to_json(event) for event in events]


def run_events_from_json(data: list[Any]) -> list[RunEvent]:
    """Load several events; see :func:`run_event_from_json`."""
    return [run_event_from_json(entry) for entry in data]


def run_event_dumps(event: RunEvent) -> str:
    """Compact JSON text of one event.

    Raises:
        JsonValueError: ``data`` is not strict JSON (events delivered through the default
            redaction processor always are).
    """
    return dumps_compact(run_event_to_json(event), "run event", max_depth=MAX_WIRE_DEPTH + 1)
