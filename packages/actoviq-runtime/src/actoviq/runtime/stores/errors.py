"""Typed storage errors shared by every store implementation (spec 04 §3.2, Appendix A).

Every error is a :class:`~actoviq.core.RunError` so the runtime can let it end a run unchanged. The
codes are the reference ones (``STORAGE_CONFLICT``, ``STORAGE_NOT_FOUND``, ``STORAGE_DATA_INVALID``,
``STORAGE_UNAVAILABLE``), except that a stale session append raises
:class:`SessionRevisionConflictError` with code ``SESSION_REVISION_CONFLICT``; it is still a
:class:`StorageConflictError`, so ``except StorageConflictError`` catches every CAS failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from actoviq.core import RunError

__all__ = [
    "SessionRevisionConflictError",
    "StorageConflictError",
    "StorageDataError",
    "StorageError",
    "StorageNotFoundError",
    "StorageUnavailableError",
]


def _revision_text(revision: int | None) -> str:
    return "<absent>" if revision is None else str(revision)


class StorageError(RunError):
    """Root of the storage errors (reference ``StorageV2Error``)."""

    default_code: ClassVar[str] = "STORAGE_ERROR"


class StorageConflictError(StorageError):
    """A compare-and-set guard failed: the stored revision is not the expected one.

    Attributes:
        resource: what conflicted, e.g. ``"checkpoint default/run-1"``.
        expected_revision: the revision the caller expected (None: the caller expected no record).
        actual_revision: the revision found (None: no record exists).

    Example:
        >>> str(StorageConflictError("memory t/m", expected_revision=None, actual_revision=0))
        'Revision conflict for memory t/m: expected <absent>, actual 0'
    """

    default_code: ClassVar[str] = "STORAGE_CONFLICT"

    def __init__(
        self,
        resource: str,
        *,
        expected_revision: int | None,
        actual_revision: int | None,
        message: str | None = None,
    ) -> None:
        text = message or (
            f"Revision conflict for {resource}: expected {_revision_text(expected_revision)}, "
            f"actual {_revision_text(actual_revision)}"
        )
        super().__init__(
            text,
            phase="runtime",
            details={
                "resource": resource,
                "expectedRevision": expected_revision,
                "actualRevision": actual_revision,
            },
        )
        self.resource = resource
        self.expected_revision = expected_revision
        self.actual_revision = actual_revision


class SessionRevisionConflictError(StorageConflictError):
    """A session append, create or compaction lost its compare-and-set race."""

    default_code: ClassVar[str] = "SESSION_REVISION_CONFLICT"


class StorageNotFoundError(StorageError):
    """The addressed record does not exist.

    Attributes:
        resource: what was looked up, e.g. ``"session default/s1"``.
    """

    default_code: ClassVar[str] = "STORAGE_NOT_FOUND"

    def __init__(self, resource: str) -> None:
        super().__init__(
            f"Storage resource not found: {resource}",
            phase="runtime",
            details={"resource": resource},
        )
        self.resource = resource


class StorageDataError(StorageError, ValueError):
    """Input is invalid, or stored data failed validation on read (fail closed)."""

    default_code: ClassVar[str] = "STORAGE_DATA_INVALID"

    def __init__(self, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message, phase="runtime", details=details)


class StorageUnavailableError(StorageError):
    """The backend cannot be reached or opened (missing driver, unreadable file, closed store).

    ``retryable`` is True unless retrying cannot help (a file that is not a database).
    """

    default_code: ClassVar[str] = "STORAGE_UNAVAILABLE"

    def __init__(
        self, message: str, *, cause: BaseException | None = None, retryable: bool = True
    ) -> None:
        super().__init__(message, phase="runtime", retryable=retryable, cause=cause)
