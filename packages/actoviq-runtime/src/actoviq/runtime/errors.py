"""Errors raised by ``AgentRuntime`` itself (spec 03 §1.22, decision D5).

Codes and message fragments follow the reference; the typed deadlines of D5 are
:class:`RunDeadlineExceededError` (``RUN_DEADLINE_EXCEEDED``) and the provider layer's
:class:`~actoviq.providers.ModelCallTimeoutError` (``MODEL_CALL_TIMEOUT``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeAlias

from actoviq.core import AbortError, ActoviqError, RunError

__all__ = [
    "AgentRegistrationError",
    "AgentSpecTypeError",
    "InterruptionDecisionError",
    "RunAlreadyActiveError",
    "RunCancelledError",
    "RunClaimLostError",
    "RunDeadlineExceededError",
    "RunHandleConsumedError",
    "RunStateError",
    "RunStateStaleError",
    "RunStateVersionError",
    "RuntimeClosedError",
    "RuntimeConfigurationError",
    "StaleReason",
]


class RuntimeClosedError(ActoviqError, RuntimeError):
    """The runtime was closed: ``"AgentRuntime is closed."``."""

    default_code: ClassVar[str] = "RUNTIME_CLOSED"

    def __init__(self, message: str = "AgentRuntime is closed.") -> None:
        super().__init__(message)


class RunAlreadyActiveError(ActoviqError, RuntimeError):
    """A run id is already executing on this runtime: ``'Run "<id>" is already active.'``."""

    default_code: ClassVar[str] = "RUN_ALREADY_ACTIVE"

    def __init__(self, run_id: str) -> None:
        super().__init__(f'Run "{run_id}" is already active.', details={"runId": run_id})
        self.run_id = run_id


class AgentRegistrationError(ActoviqError, ValueError):
    """Another spec (different digest) owns the id: ``Agent "<id>" is already registered.``."""

    default_code: ClassVar[str] = "AGENT_ALREADY_REGISTERED"

    def __init__(self, agent_id: str) -> None:
        super().__init__(
            f'Agent "{agent_id}" is already registered.', details={"agentId": agent_id}
        )
        self.agent_id = agent_id


class RunStateError(ActoviqError, TypeError):
    """A serialised run state cannot be resumed (missing identity, bad shape)."""

    default_code: ClassVar[str] = "RUN_STATE_INVALID"


class RunStateVersionError(RunStateError):
    """``Unsupported run state version <v>.`` (newer than 2, or not 1/2)."""

    default_code: ClassVar[str] = "RUN_STATE_VERSION_UNSUPPORTED"


class InterruptionDecisionError(ActoviqError, ValueError):
    """A resume decision names no open interruption, or does not fit its pending call."""

    default_code: ClassVar[str] = "INTERRUPTION_DECISION_INVALID"


class RunHandleConsumedError(ActoviqError, RuntimeError):
    """A :class:`~actoviq.runtime.RunHandle` has exactly one consumer."""

    default_code: ClassVar[str] = "RUN_HANDLE_CONSUMED"


class RunCancelledError(RunError, AbortError):
    """Why a run was cancelled: ``handle.cancel(reason)``, close, a stopped consumer.

    The run itself ends with ``status == "cancelled"``; this error is the abort *reason*.
    """

    default_code: ClassVar[str] = "RUN_CANCELLED"

    def __init__(self, message: str = "Run cancelled.", *, run_id: str | None = None) -> None:
        super().__init__(message, run_id=run_id, phase="runtime")
        self.reason = message


class RunDeadlineExceededError(RunError, AbortError):
    """The run deadline passed (``RUN_DEADLINE_EXCEEDED``): the run ends ``cancelled``."""

    default_code: ClassVar[str] = "RUN_DEADLINE_EXCEEDED"

    def __init__(self, message: str = "Run deadline exceeded.", *, run_id: str | None = None):
        super().__init__(message, run_id=run_id, phase="runtime")
        self.reason = message


class RuntimeConfigurationError(ActoviqError, ValueError):
    """An ``AgentRuntime`` option is invalid (e.g. ``max_concurrent_runs``)."""

    default_code: ClassVar[str] = "RUNTIME_CONFIGURATION_INVALID"


class AgentSpecTypeError(ActoviqError, TypeError):
    """A run or registration was given something other than an ``AgentSpec``.

    A ``TypeError`` as well, as before it was typed.
    """

    default_code: ClassVar[str] = "AGENT_SPEC_EXPECTED"


StaleReason: TypeAlias = Literal["completed", "superseded", "claimed", "consumed", "lost"]
"""Why a state cannot run: see :class:`RunStateStaleError`."""

_STALE_TEXT: dict[str, str] = {
    "completed": "the run already completed",
    "superseded": "a newer state of the run exists",
    "claimed": "another execution holds the run",
    "consumed": "this state was already resumed",
    "lost": "another execution took the run over",
}


class RunStateStaleError(RunError):
    """A state that may no longer run: resume is exactly-once (decision D10).

    ``resume()`` claims the run before anything executes. The claim is refused when the stored
    run already completed, when a newer state of the same run exists (the state was resumed
    before, or the run moved on), or when another execution holds the run (its lease is live).
    Nothing ran and no event was emitted for the refused attempt.

    Attributes:
        run_id: the run.
        stored_status: the status of the run's newest known state (``"completed"``,
            ``"interrupted"``, ``"running"``, ...), None when unknown.
        reason: ``"completed"``, ``"superseded"``, ``"claimed"`` (retry once the holder's lease
            expired: ``details["leaseExpiresAt"]``, epoch ms), ``"consumed"`` (this process
            already resumed that state) or ``"lost"`` (see :class:`RunClaimLostError`).
        retryable: True only for ``"claimed"``.
    """

    default_code: ClassVar[str] = "RUN_STATE_STALE"

    def __init__(
        self,
        run_id: str,
        *,
        stored_status: str | None,
        reason: StaleReason,
        details: dict[str, Any] | None = None,
        message: str | None = None,
    ) -> None:
        status = "unknown" if stored_status is None else stored_status
        text = message or (
            f'Run "{run_id}" cannot run from this state: {_STALE_TEXT[reason]} '
            f"(stored status: {status})."
        )
        super().__init__(
            text,
            run_id=run_id,
            phase="runtime",
            retryable=reason == "claimed",
            details={"storedStatus": stored_status, "reason": reason, **(details or {})},
        )
        self.stored_status = stored_status
        self.reason: StaleReason = reason


class RunClaimLostError(RunStateStaleError):
    """The executing run lost its claim on its checkpoint; it stops without writing.

    Another execution took the run over after the lease expired, or the record changed under it.
    """

    default_code: ClassVar[str] = "RUN_CLAIM_LOST"

    def __init__(self, run_id: str, *, stored_status: str | None, owner: str | None) -> None:
        super().__init__(
            run_id,
            stored_status=stored_status,
            reason="lost",
            details={"owner": owner},
            message=(
                f'Run "{run_id}" lost its claim on the checkpoint (now held by '
                f"{owner or 'nobody'}, stored status: {stored_status or 'unknown'}); "
                "it stopped without writing."
            ),
        )
