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

from typing import Any, Final, cast

import attrs

from actoviq.core import (
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

    def with_data(self, data: JsonValue) -> RunEvent:
        """Return a copy with other ``data`` (envelope unchanged, so not re-validated)."""
        clone = object.__new__(RunEvent)
        for name in _ENVELOPE_FIELDS:
            object.__setattr__(clone, name, getattr(self, name))
        object.__setattr__(clone, "data", data)
        return clone


_ENVELOPE_FIELDS: Final = tuple(
    field.name for field in attrs.fields(RunEvent) if field.name != "data"
)


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
        data = loads_strict(data, "run event")
    if type(data) is not dict:
        raise EventValidationError(f"A run event must be a JSON object, got {type(data).__name__}.")
    mapping = cast(dict[str, Any], data)
    if "schemaVersion" not in mapping:
        raise EventSchemaVersionError("Run event is missing schemaVersion.")
    assert_json_value(mapping.get("data"), "run event data")
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
    """Compact JSON text of one event."""
    return dumps_compact(run_event_to_json(event))
