"""Typed errors of the compat package (each an ``ActoviqError`` with a stable ``code``).

The legacy JSON v1 store keeps the reference codes (``SESSION_CONFLICT``, ``SESSION_DATA_INVALID``,
spec 04 Appendix A) and subclasses the runtime's storage errors, so ``except
StorageConflictError`` also catches a JSON v1 conflict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from actoviq.core import ActoviqError, RunError
from actoviq.runtime import (
    StorageConflictError,
    StorageDataError,
    StorageNotFoundError,
    StorageUnavailableError,
)

__all__ = [
    "AgentRunStreamOverflowError",
    "CompatConfigurationError",
    "CompatRunInterruptedError",
    "SessionBusyError",
    "SessionConflictError",
    "SessionDataError",
    "SessionNotFoundError",
    "UnsafeSessionIdError",
]


class CompatConfigurationError(ActoviqError, ValueError):
    """An option value the façade cannot use (the message says what to pass instead)."""

    default_code: ClassVar[str] = "COMPAT_CONFIGURATION_INVALID"


class SessionConflictError(StorageConflictError):
    """A JSON v1 ``save`` lost its compare-and-set on ``revision``.

    Attributes:
        session_id: the session.
        expected_revision: the revision the caller held.
        actual_revision: the revision on disk (None when the file is gone).
    """

    default_code: ClassVar[str] = "SESSION_CONFLICT"

    def __init__(
        self, session_id: str, *, expected_revision: int | None, actual_revision: int | None
    ) -> None:
        super().__init__(
            f"session {session_id}",
            expected_revision=expected_revision,
            actual_revision=actual_revision,
            message=(
                f'Session "{session_id}" was changed by another writer: expected revision '
                f"{expected_revision}, found {actual_revision}. Load it again and retry."
            ),
        )
        self.session_id = session_id
        if self.details is not None:
            self.details["sessionId"] = session_id


class SessionDataError(StorageDataError):
    """A JSON v1 session file (or a session given to ``save``) is not a valid StoredSession."""

    default_code: ClassVar[str] = "SESSION_DATA_INVALID"

    def __init__(
        self,
        message: str,
        *,
        session_id: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        merged = dict(details or {})
        if session_id is not None:
            merged["sessionId"] = session_id
        super().__init__(message, details=merged or None)
        self.session_id = session_id


class UnsafeSessionIdError(SessionDataError):
    """A session or checkpoint id that is not one plain path segment (refused before any I/O)."""

    default_code: ClassVar[str] = "SESSION_ID_UNSAFE"


class SessionNotFoundError(StorageNotFoundError):
    """No JSON v1 session file with that id."""

    default_code: ClassVar[str] = "SESSION_NOT_FOUND"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id}")
        self.session_id = session_id


class SessionBusyError(StorageUnavailableError):
    """A session's lock (write lock or whole-turn lease) is held by another writer (retryable)."""

    default_code: ClassVar[str] = "SESSION_BUSY"

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


class AgentRunStreamOverflowError(RunError):
    """An ``AgentRunStream`` buffer overflowed under the ``"throw"`` strategy (run cancelled).

    Attributes:
        max_buffered_events: the buffer size, terminal slot included.
    """

    default_code: ClassVar[str] = "AGENT_RUN_STREAM_OVERFLOW"

    def __init__(self, max_buffered_events: int, *, run_id: str | None = None) -> None:
        super().__init__(
            f"AgentRunStream buffer overflow: more than {max_buffered_events - 1} events were "
            "waiting for the consumer. Consume the stream faster, raise max_buffered_events, or "
            'choose overflow="drop-oldest", "drop-newest" or "block".',
            run_id=run_id,
            phase="runtime",
            details={"maxBufferedEvents": max_buffered_events},
        )
        self.max_buffered_events = max_buffered_events


class CompatRunInterruptedError(RunError):
    """The run paused for an approval, which the 0.x result shape cannot express.

    Nothing is lost: ``result`` is the runtime's interrupted ``RunResult`` (``result.state`` and
    ``result.interruptions``); continue it with ``AgentClient.runtime.resume(result.state,
    decisions)``.
    """

    default_code: ClassVar[str] = "RUN_INTERRUPTED"

    def __init__(self, result: Any) -> None:
        super().__init__(
            "The run is waiting for an approval; the 0.x result has no interrupted state. Resume "
            "it with AgentClient.runtime.resume(error.result.state, decisions).",
            run_id=getattr(result, "run_id", None),
            phase="tool_call",
        )
        self.result = result
