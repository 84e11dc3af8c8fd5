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
    "ArtifactBlobMissingError",
    "ArtifactIntegrityError",
    "ArtifactTooLargeError",
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


class ArtifactIntegrityError(StorageDataError):
    """Stored artifact bytes do not match their sha256 digest or size (corruption; fail closed).

    A streamed read raises it before it reports the end of the stream, so a consumer that only
    commits what it received once the stream ends never commits corrupt bytes.

    Attributes:
        sha256: the digest the bytes were stored under.
        actual_sha256: the digest of the bytes read (None when the size was already wrong).
        expected_size: the recorded size, when known.
        actual_size: how many bytes were read (or found on disk).
    """

    default_code: ClassVar[str] = "STORAGE_ARTIFACT_CORRUPT"

    def __init__(
        self,
        sha256: str,
        *,
        actual_sha256: str | None = None,
        expected_size: int | None = None,
        actual_size: int | None = None,
        reason: str | None = None,
    ) -> None:
        detail = reason or (
            f"size {actual_size} is not the recorded {expected_size}"
            if actual_sha256 is None
            else f"its sha256 is {actual_sha256}"
        )
        super().__init__(
            f"Artifact blob sha256:{sha256} is corrupt: {detail}. Restore it from a backup or "
            "put the artifact again.",
            details={
                "sha256": sha256,
                "actualSha256": actual_sha256,
                "expectedSize": expected_size,
                "actualSize": actual_size,
            },
        )
        self.sha256 = sha256
        self.actual_sha256 = actual_sha256
        self.expected_size = expected_size
        self.actual_size = actual_size


class ArtifactTooLargeError(StorageDataError):
    """An artifact's bytes exceed the size limit; nothing was stored.

    Attributes:
        limit: the limit in bytes.
    """

    default_code: ClassVar[str] = "STORAGE_ARTIFACT_TOO_LARGE"

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"Artifact is larger than the limit of {limit} bytes; nothing was stored. Raise "
            "max_bytes (per put) or max_artifact_bytes (per store) to accept it.",
            details={"limit": limit},
        )
        self.limit = limit


class ArtifactBlobMissingError(StorageNotFoundError):
    """No blob is stored under a digest (an artifact whose bytes were never stored here).

    Attributes:
        sha256: the digest looked up.
    """

    default_code: ClassVar[str] = "STORAGE_ARTIFACT_BLOB_MISSING"

    def __init__(self, sha256: str) -> None:
        super().__init__(f"artifact blob sha256:{sha256}")
        self.sha256 = sha256
