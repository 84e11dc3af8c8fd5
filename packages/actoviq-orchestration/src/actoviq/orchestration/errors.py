"""Orchestration errors: each an :class:`~actoviq.core.ActoviqError` with a stable ``code``.

Messages keep the reference fragments tests match on (spec 04 Appendix A). Errors that stand for
bad input also subclass ``ValueError`` so generic handlers keep working.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from actoviq.core import ActoviqError

__all__ = [
    "AgentToolError",
    "BudgetExceededError",
    "ChildPolicyError",
    "ChildRunError",
    "ChildScopeError",
    "HandoffError",
    "HandoffLimitExceededError",
    "OrchestrationConfigError",
    "OrchestrationError",
    "RunTreeConflictError",
    "ScopeWideningError",
]


class OrchestrationError(ActoviqError):
    """Root of the orchestration errors."""

    default_code: ClassVar[str] = "ORCHESTRATION_ERROR"


class OrchestrationConfigError(OrchestrationError, ValueError):
    """A limit, capacity, deadline, policy, tenant or counter is invalid (nothing was changed)."""

    default_code: ClassVar[str] = "ORCHESTRATION_CONFIG_INVALID"


class RunTreeConflictError(OrchestrationError, ValueError):
    """A run id is already in the run tree (``Run tree already contains ...``)."""

    default_code: ClassVar[str] = "RUN_TREE_CONFLICT"


class ScopeWideningError(OrchestrationError, ValueError):
    """A child scope asked for more than its parent has (spec 04 §8.2-18).

    ``details["field"]`` names what would have widened: ``deadline``, ``workspace.access``,
    ``workspace.allowedRoots``, ``workspace.root``, ``workspace.workspaceId``, ``allowedTools``
    or ``budget.<limit>``.
    """

    default_code: ClassVar[str] = "SCOPE_WIDENING"


class BudgetExceededError(OrchestrationError):
    """A budget limit is reached; never retryable (the usage that broke it is already recorded).

    ``details`` carries ``kind`` (``childRuns``, ``depth``, ``tokens`` or ``costUsd``), ``limit``
    and, where it applies, ``used``.
    """

    default_code: ClassVar[str] = "BUDGET_EXCEEDED"

    def __init__(self, message: str, *, details: Mapping[str, Any]) -> None:
        super().__init__(message, retryable=False, details=details)


class ChildPolicyError(OrchestrationError, ValueError):
    """A failure policy does not fit the child (e.g. ``retry-safe`` for a side-effect child)."""

    default_code: ClassVar[str] = "CHILD_POLICY_INVALID"


class ChildScopeError(OrchestrationError, ValueError):
    """A parent scope does not belong to this runner (another ``RuntimeServices`` instance)."""

    default_code: ClassVar[str] = "CHILD_SCOPE_INVALID"


class ChildRunError(OrchestrationError):
    """A child failed under ``fail-fast`` (or after its last ``retry-safe`` attempt).

    Attributes:
        child_run_id: the child's run id (the same on every attempt).
        attempts: how many attempts ran.
        cause: the last attempt's error (also ``__cause__``).
    """

    default_code: ClassVar[str] = "CHILD_RUN_FAILED"

    def __init__(self, child_run_id: str, attempts: int, cause: BaseException | None) -> None:
        noun = "attempt" if attempts == 1 else "attempts"
        super().__init__(
            f'Child run "{child_run_id}" failed after {attempts} {noun}.',
            retryable=False,
            details={"childRunId": child_run_id, "attempts": attempts},
        )
        self.child_run_id = child_run_id
        self.attempts = attempts
        self.cause = cause
        if cause is not None:
            self.__cause__ = cause


class AgentToolError(OrchestrationError, ValueError):
    """An agent tool is misconfigured or was invoked with bad arguments (blank name or callId)."""

    default_code: ClassVar[str] = "AGENT_TOOL_INVALID"


class HandoffError(OrchestrationError, ValueError):
    """A handoff cannot be executed: blank id, unknown handoff, unresolvable target agent."""

    default_code: ClassVar[str] = "HANDOFF_INVALID"


class HandoffLimitExceededError(OrchestrationError):
    """A handoff chain asked for more than ``max_handoffs`` handoffs (a cycle, usually)."""

    default_code: ClassVar[str] = "HANDOFF_LIMIT_EXCEEDED"
