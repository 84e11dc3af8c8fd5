"""Errors of durable background children: each an ``OrchestrationError`` with a stable ``code``.

Messages keep the reference fragments (spec 04 Appendix A, "Background"): ``Unknown``,
``leased``, ``may have committed``, ``call resume``, ``cancelled``, ``failed``, ``Cannot
resolve``. ``details`` always carries ``childId``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from actoviq.orchestration.errors import OrchestrationError

__all__ = [
    "DurableChildAgentError",
    "DurableChildCancelledError",
    "DurableChildConflictError",
    "DurableChildError",
    "DurableChildFailedError",
    "DurableChildInterruptedError",
    "DurableChildLeaseLostError",
    "DurableChildLeasedError",
    "DurableChildNotFoundError",
    "DurableChildNotReadyError",
    "DurableChildReconciliationError",
    "DurableChildStateError",
    "UnknownBackgroundEngineError",
]


class DurableChildError(OrchestrationError):
    """Root of the durable background-child errors.

    Attributes:
        child_id: the child the error is about.
    """

    default_code: ClassVar[str] = "DURABLE_CHILD_ERROR"

    def __init__(
        self,
        message: str,
        *,
        child_id: str,
        retryable: bool = False,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            message, retryable=retryable, details={"childId": child_id, **(details or {})}
        )
        self.child_id = child_id


class DurableChildNotFoundError(DurableChildError):
    """The child does not exist (``Unknown durable child "<id>".``)."""

    default_code: ClassVar[str] = "DURABLE_CHILD_NOT_FOUND"

    def __init__(self, child_id: str) -> None:
        super().__init__(f'Unknown durable child "{child_id}".', child_id=child_id)


class DurableChildLeasedError(DurableChildError):
    """Another worker holds a live lease on the child (retry after ``leaseExpiresAt``)."""

    default_code: ClassVar[str] = "DURABLE_CHILD_LEASED"

    def __init__(self, child_id: str, *, lease_owner: str | None, lease_expires_at: int | None):
        super().__init__(
            f'Durable child "{child_id}" is leased by another worker.',
            child_id=child_id,
            retryable=True,
            details={"leaseOwner": lease_owner, "leaseExpiresAt": lease_expires_at},
        )
        self.lease_owner = lease_owner
        self.lease_expires_at = lease_expires_at


class DurableChildReconciliationError(DurableChildError):
    """A side-effect child whose worker died mid-run may have committed: never replayed.

    The record is ``needs_reconciliation``; resolve it with ``reconcile()``.
    """

    default_code: ClassVar[str] = "DURABLE_CHILD_NEEDS_RECONCILIATION"

    def __init__(self, child_id: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(
            f'Durable child "{child_id}" may have committed a side effect; stale execution '
            "cannot be replayed. Resolve it with reconcile().",
            child_id=child_id,
            details=details,
        )


class DurableChildCancelledError(DurableChildError):
    """The child was cancelled (``Durable child "<id>" was cancelled.``)."""

    default_code: ClassVar[str] = "DURABLE_CHILD_CANCELLED"

    def __init__(self, child_id: str, *, reason: str | None = None) -> None:
        super().__init__(
            f'Durable child "{child_id}" was cancelled.',
            child_id=child_id,
            details={"reason": reason},
        )
        self.reason = reason


class DurableChildFailedError(DurableChildError):
    """The child failed (``Durable child "<id>" failed: <message>``) or cannot be replayed."""

    default_code: ClassVar[str] = "DURABLE_CHILD_FAILED"


class DurableChildNotReadyError(DurableChildError):
    """``result()`` of a child that has not settled ("... call resume() before result().")."""

    default_code: ClassVar[str] = "DURABLE_CHILD_NOT_READY"


class DurableChildInterruptedError(DurableChildNotReadyError):
    """The child waits for decisions (approvals); ``details["interruptions"]`` lists them."""

    default_code: ClassVar[str] = "DURABLE_CHILD_INTERRUPTED"


class DurableChildConflictError(DurableChildError):
    """The record changed under this worker (another worker took or resumed it); retryable."""

    default_code: ClassVar[str] = "DURABLE_CHILD_CONFLICT"

    def __init__(self, message: str, *, child_id: str) -> None:
        super().__init__(message, child_id=child_id, retryable=True)


class DurableChildLeaseLostError(DurableChildError):
    """This worker's lease was taken over (fencing): its run was aborted, nothing written."""

    default_code: ClassVar[str] = "DURABLE_CHILD_LEASE_LOST"


class DurableChildStateError(DurableChildError, ValueError):
    """The operation does not fit the child's status (e.g. reconciling a completed child)."""

    default_code: ClassVar[str] = "DURABLE_CHILD_STATE_INVALID"


class DurableChildAgentError(DurableChildError):
    """No agent for the stored id (``Cannot resolve durable child agent "<agentId>".``)."""

    default_code: ClassVar[str] = "DURABLE_CHILD_AGENT_UNRESOLVED"


class UnknownBackgroundEngineError(OrchestrationError, LookupError):
    """No background engine is registered under the configured name."""

    default_code: ClassVar[str] = "BACKGROUND_ENGINE_UNKNOWN"
