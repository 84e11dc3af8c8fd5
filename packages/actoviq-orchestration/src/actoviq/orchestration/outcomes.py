"""Child-run values: failure policies, requests' session modes, errors and outcomes (spec 04 §1.2).

An outcome is ``completed``, ``interrupted`` (the child waits for a decision: its approval
surfaces here and is resumed through the parent), ``cancelled`` or ``failed`` (``collect``
policy only); the reference counted interrupted and cancelled runs as completed (§8.2-15).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, Self, TypeAlias, cast

import attrs

from actoviq.core import ActoviqError, Interruption, JsonObject, RunResult
from actoviq.orchestration._drafts import check_draft
from actoviq.orchestration.errors import ChildPolicyError
from actoviq.orchestration.scope import OrchestrationScope

__all__ = [
    "COLLECT",
    "FAIL_FAST",
    "ChildError",
    "ChildFailureMode",
    "ChildFailurePolicy",
    "ChildOutcomeStatus",
    "ChildRunOutcome",
    "SessionMode",
    "child_outcome",
]

ChildFailureMode: TypeAlias = Literal["fail-fast", "collect", "retry-safe"]
"""How an orchestration reacts to a failed child."""
ChildOutcomeStatus: TypeAlias = Literal["completed", "interrupted", "cancelled", "failed"]
"""How a child run ended."""
SessionMode: TypeAlias = Literal["child", "transfer", "ephemeral"]
"""``child``: a session of its own, tagged with the parent run (needs a ``sessions`` service);
``transfer``: the parent's session; ``ephemeral``: no session (the default when no ``sessions``
service is registered)."""

_MAX_SAFE: Final = 2**53 - 1


@attrs.frozen(kw_only=True, slots=True)
class ChildFailurePolicy:
    """What a failed child does: raise (``fail-fast``), report (``collect``) or retry.

    ``retry-safe`` is accepted only for ``read`` children and ``idempotent-write`` children with
    an idempotency key (checked by the runner before anything runs); ``retry_when(error,
    attempt)`` may veto a retry (it is not persisted).

    Example:
        >>> ChildFailurePolicy.retry_safe(3).to_json()
        {'mode': 'retry-safe', 'maxAttempts': 3}
    """

    mode: ChildFailureMode = "fail-fast"
    max_attempts: int | None = None
    retry_when: Callable[[BaseException, int], bool] | None = attrs.field(default=None, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.mode not in ("fail-fast", "collect", "retry-safe"):
            raise ChildPolicyError(f"Unknown child failure mode {self.mode!r}.")
        if self.mode == "retry-safe" and (
            type(self.max_attempts) is not int or not 2 <= self.max_attempts <= _MAX_SAFE
        ):
            raise ChildPolicyError(
                "retry-safe maxAttempts must be a safe integer of at least 2.",
                details={"field": "maxAttempts"},
            )

    @classmethod
    def fail_fast(cls) -> Self:
        """Raise :class:`~actoviq.orchestration.errors.ChildRunError` on failure."""
        return cls(mode="fail-fast")

    @classmethod
    def collect(cls) -> Self:
        """Return a ``failed`` outcome instead of raising."""
        return cls(mode="collect")

    @classmethod
    def retry_safe(
        cls, max_attempts: int, retry_when: Callable[[BaseException, int], bool] | None = None
    ) -> Self:
        """Retry up to ``max_attempts`` (>= 2) times with the same run id, then raise."""
        return cls(mode="retry-safe", max_attempts=max_attempts, retry_when=retry_when)

    @property
    def attempts(self) -> int:
        """How many attempts this policy allows."""
        return self.max_attempts if self.mode == "retry-safe" and self.max_attempts else 1

    def to_json(self) -> JsonObject:
        """``{mode}`` plus ``maxAttempts`` for retry-safe (``retry_when`` is not persisted)."""
        if self.mode == "retry-safe":
            return {"mode": self.mode, "maxAttempts": self.max_attempts}
        return {"mode": self.mode}


FAIL_FAST: Final = ChildFailurePolicy.fail_fast()
"""The child failure policy that cancels the siblings on the first failure."""
COLLECT: Final = ChildFailurePolicy.collect()
"""The child failure policy that runs every child and collects the failures."""


@attrs.frozen(kw_only=True, slots=True)
class ChildError:
    """A serialised child error: ``{name, message, code?}``."""

    name: str
    message: str
    code: str | None = None

    @classmethod
    def of(cls, error: object) -> Self:
        """Describe ``error`` (``code`` only when the error has a string ``code``)."""
        if isinstance(error, BaseException):
            code: Any = getattr(error, "code", None)
            message = error.message if isinstance(error, ActoviqError) else str(error)
            return cls(
                name=type(error).__name__ or "Error",
                message=message or type(error).__name__,
                code=code if isinstance(code, str) else None,
            )
        return cls(name="Error", message=str(error))

    def to_json(self) -> JsonObject:
        """``{name, message, code?}``."""
        data: JsonObject = {"name": self.name, "message": self.message}
        if self.code is not None:
            data["code"] = self.code
        return data


@attrs.frozen(kw_only=True, slots=True, eq=False, weakref_slot=False)
class ChildRunOutcome:
    """The outcome of one logical child.

    Attributes:
        status: ``completed``, ``interrupted``, ``cancelled`` or ``failed``.
        attempts: how many attempts ran (1 unless ``retry-safe``).
        scope: the child's scope (its ``run_id`` is the child run id).
        result: the child's :class:`RunResult` (absent when it failed or never started).
        error: the failure, or the cancel reason.
    """

    status: ChildOutcomeStatus
    attempts: int
    scope: OrchestrationScope
    result: RunResult[Any] | None = None
    error: ChildError | None = None

    @property
    def child_run_id(self) -> str:
        """The child's run id."""
        return self.scope.run_id

    @property
    def interruptions(self) -> tuple[Interruption, ...]:
        """The decisions the child waits for (``interrupted`` only)."""
        return self.result.interruptions if self.result is not None else ()

    @property
    def output(self) -> Any:
        """The child's output (None unless completed)."""
        return self.result.output if self.status == "completed" and self.result else None

    def to_json(self) -> JsonObject:
        """``{status, attempts, childRunId, error?, output?}`` (output when JSON)."""
        data: JsonObject = {
            "status": self.status,
            "attempts": self.attempts,
            "childRunId": self.child_run_id,
        }
        if self.error is not None:
            data["error"] = self.error.to_json()
        return data


class _OutcomeDraft:
    """:class:`ChildRunOutcome`'s layout without its frozen guard (see :func:`child_outcome`)."""

    __slots__ = tuple(field.name for field in attrs.fields(ChildRunOutcome))

    status: ChildOutcomeStatus
    attempts: int
    scope: OrchestrationScope
    result: RunResult[Any] | None
    error: ChildError | None


# Refuse, at import, a class the draft can no longer stand for.
check_draft(ChildRunOutcome, _OutcomeDraft)


def child_outcome(
    status: ChildOutcomeStatus,
    attempts: int,
    scope: OrchestrationScope,
    result: RunResult[Any] | None = None,
    error: ChildError | None = None,
) -> ChildRunOutcome:
    """``ChildRunOutcome(status=..., attempts=..., scope=..., result=..., error=...)``.

    Built with plain slot stores: attrs' frozen ``__init__`` calls ``object.__setattr__`` per
    field, and a runner makes one outcome per child.
    """
    draft = _OutcomeDraft()
    draft.status = status
    draft.attempts = attempts
    draft.scope = scope
    draft.result = result
    draft.error = error
    draft.__class__ = ChildRunOutcome  # pyright: ignore[reportAttributeAccessIssue]
    return cast(ChildRunOutcome, draft)
