"""Errors raised by ``actoviq.surfaces`` (each with a stable ``code``)."""

from __future__ import annotations

from typing import ClassVar

from actoviq.core import ActoviqError

__all__ = [
    "LegacyEventError",
    "LegacyEventIdentityCollisionError",
    "LegacyRunContextError",
    "SurfaceError",
    "SurfaceEventIdentityCollisionError",
    "SurfaceEventSchemaVersionError",
    "SurfaceEventSequenceError",
    "SurfaceEventTraceError",
    "SurfaceEventValidationError",
    "SurfaceTargetError",
]


class SurfaceError(ActoviqError):
    """Root of the surface errors."""

    default_code: ClassVar[str] = "SURFACE_ERROR"


class SurfaceEventValidationError(SurfaceError, ValueError):
    """A source event is malformed (blank id, run id or type; not a ``RunEvent``)."""

    default_code: ClassVar[str] = "SURFACE_EVENT_INVALID"


class SurfaceEventSchemaVersionError(SurfaceEventValidationError):
    """A source event carries a ``schemaVersion`` the projector does not understand."""

    default_code: ClassVar[str] = "SURFACE_EVENT_SCHEMA_UNSUPPORTED"


class SurfaceEventTraceError(SurfaceError, ValueError):
    """Trace context missing, changed within a run, or inconsistent with the parent run."""

    default_code: ClassVar[str] = "SURFACE_EVENT_TRACE_MISMATCH"


class SurfaceEventSequenceError(SurfaceError, ValueError):
    """A sequence is not a positive integer or does not increase within its run."""

    default_code: ClassVar[str] = "SURFACE_EVENT_SEQUENCE_REGRESSION"


class SurfaceEventIdentityCollisionError(SurfaceError, ValueError):
    """An ``eventId`` seen before arrived again with a different payload."""

    default_code: ClassVar[str] = "SURFACE_EVENT_IDENTITY_COLLISION"


class SurfaceTargetError(SurfaceError, ValueError):
    """A surface target that is not one of ``cli``, ``tui``, ``gui``, ``bridge``."""

    default_code: ClassVar[str] = "SURFACE_TARGET_UNKNOWN"


class LegacyEventError(SurfaceError, ValueError):
    """A legacy ``AgentEvent`` is malformed (not a mapping, blank type or run id, bad timestamp)."""

    default_code: ClassVar[str] = "LEGACY_EVENT_INVALID"


class LegacyRunContextError(SurfaceError, ValueError):
    """A legacy run context is invalid, changed after registration, or contradicts its parent."""

    default_code: ClassVar[str] = "LEGACY_RUN_CONTEXT_INVALID"


class LegacyEventIdentityCollisionError(SurfaceError, ValueError):
    """A legacy event identity (``eventId``, ``identity_key`` or object) came back changed."""

    default_code: ClassVar[str] = "LEGACY_EVENT_IDENTITY_COLLISION"
