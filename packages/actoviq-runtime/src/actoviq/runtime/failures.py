"""Typed run failures: a run never ends with a raw exception (issue 11 §2, decision D10).

A failure while persisting (serialising the state, writing the checkpoint, appending the session,
delivering an event) becomes a :class:`RunPersistenceError` whose ``code`` and
``details["step"]`` name the step and whose ``phase`` is ``"persistence"``; any other exception
that is not an :class:`~actoviq.core.ActoviqError` becomes a ``RunError`` ``RUN_FAILED``, a
``BaseException`` too (``KeyboardInterrupt`` and ``SystemExit`` are re-raised unchanged once the
failure is saved and ``run.failed`` emitted). The
original exception stays the ``__cause__``. Messages name the exception type and, for our own
typed errors, their message; a foreign exception's text is never copied (it may hold the very
value that could not be stored).
"""

from __future__ import annotations

from typing import ClassVar, Final, Literal, TypeAlias

from actoviq.core import ActoviqError, JsonObject, RunError

__all__ = [
    "PERSISTENCE_STEPS",
    "PersistenceStep",
    "RunPersistenceError",
    "as_run_error",
    "persistence_error",
]

PersistenceStep: TypeAlias = Literal[
    "state.serialize",
    "checkpoint.claim",
    "checkpoint.save",
    "checkpoint.delete",
    "session.load",
    "session.append",
    "event.delivery",
]
"""The persistence step that failed (reported in `RunError` details)."""

PERSISTENCE_STEPS: Final[dict[str, tuple[str, str]]] = {
    "state.serialize": ("RUN_STATE_SERIALIZATION_FAILED", "Serialising the run state failed"),
    "checkpoint.claim": ("CHECKPOINT_CLAIM_FAILED", "Claiming the run checkpoint failed"),
    "checkpoint.save": ("CHECKPOINT_SAVE_FAILED", "Saving the run checkpoint failed"),
    "checkpoint.delete": ("CHECKPOINT_DELETE_FAILED", "Deleting the run checkpoint failed"),
    "session.load": ("SESSION_LOAD_FAILED", "Loading the session failed"),
    "session.append": ("SESSION_APPEND_FAILED", "Appending the run to its session failed"),
    "event.delivery": ("EVENT_DELIVERY_FAILED", "Delivering a run event failed"),
}
"""Step → ``(code, message)``."""


class RunPersistenceError(RunError):
    """A run could not persist its state, session or events (phase ``persistence``).

    Attributes:
        step: ``state.serialize``, ``checkpoint.claim``, ``checkpoint.save``,
            ``checkpoint.delete``, ``session.load``, ``session.append`` or ``event.delivery``.
        retryable: True when the cause was a timeout or a retryable typed error (an outage).
    """

    default_code: ClassVar[str] = "RUN_PERSISTENCE_FAILED"

    def __init__(
        self, step: PersistenceStep, error: BaseException, *, run_id: str | None = None
    ) -> None:
        code, text = PERSISTENCE_STEPS[step]
        details: JsonObject = {"step": step, "errorType": type(error).__name__}
        if isinstance(error, ActoviqError):
            details["errorCode"] = error.code
            text = f"{text}: {error.message}"
        else:
            text = f"{text} ({type(error).__name__})."
        retryable = isinstance(error, TimeoutError) or (
            isinstance(error, ActoviqError) and error.retryable
        )
        super().__init__(
            text,
            code=code,
            run_id=run_id,
            phase="persistence",
            retryable=retryable,
            details=details,
            cause=error,
        )
        self.step: PersistenceStep = step


def persistence_error(
    step: PersistenceStep, error: BaseException, run_id: str | None
) -> RunPersistenceError:
    """The typed failure of ``step`` (an existing one is returned unchanged)."""
    if isinstance(error, RunPersistenceError):
        return error
    return RunPersistenceError(step, error, run_id=run_id)


def as_run_error(error: BaseException, run_id: str | None) -> ActoviqError:
    """``error`` itself when typed, else a ``RunError`` ``RUN_FAILED`` caused by it."""
    if isinstance(error, ActoviqError):
        return error
    return RunError(
        f"Run failed ({type(error).__name__}).",
        code="RUN_FAILED",
        run_id=run_id,
        phase="runtime",
        details={"errorType": type(error).__name__},
        cause=error,
    )
