"""Errors raised by ``actoviq.events`` (each with a stable ``code``)."""

from __future__ import annotations

from typing import ClassVar

from actoviq.core import ActoviqError

__all__ = [
    "EventDispatcherClosedError",
    "EventError",
    "EventOrderError",
    "EventSchemaVersionError",
    "EventSinkTimeoutError",
    "EventValidationError",
    "RedactionError",
]


class EventError(ActoviqError):
    """Root of the event pipeline errors."""

    default_code: ClassVar[str] = "EVENT_ERROR"


class EventValidationError(EventError, ValueError):
    """An envelope field, event type, sequence or component id is invalid."""

    default_code: ClassVar[str] = "EVENT_INVALID"


class EventSchemaVersionError(EventError, ValueError):
    """A serialised event carries a ``schemaVersion`` this package does not understand."""

    default_code: ClassVar[str] = "EVENT_SCHEMA_UNSUPPORTED"


class EventOrderError(EventError, ValueError):
    """A sink received a run's events out of sequence order."""

    default_code: ClassVar[str] = "EVENT_OUT_OF_ORDER"


class EventDispatcherClosedError(EventError, RuntimeError):
    """``dispatch`` was called after ``aclose()``."""

    default_code: ClassVar[str] = "EVENT_DISPATCHER_CLOSED"


class EventSinkTimeoutError(EventError, TimeoutError):
    """A sink or processor did not finish within its timeout."""

    default_code: ClassVar[str] = "EVENT_SINK_TIMEOUT"


class RedactionError(EventError):
    """Redaction could not complete; the value must not be delivered (fail-closed)."""

    default_code: ClassVar[str] = "REDACTION_FAILED"
