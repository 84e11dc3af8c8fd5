"""Errors of durable workflow-graph runs: each an ``OrchestrationError`` with a stable code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from actoviq.orchestration.errors import OrchestrationError

__all__ = [
    "WorkflowNodeOutputError",
    "WorkflowNodeReconciliationError",
    "WorkflowRunCancelledError",
    "WorkflowRunError",
    "WorkflowRunLeaseLostError",
    "WorkflowRunLeasedError",
    "WorkflowRunMismatchError",
    "WorkflowRunNotFoundError",
    "WorkflowRunStateError",
]


class WorkflowRunError(OrchestrationError):
    """Root of the durable graph-run errors (``details["runId"]``).

    They stop the run itself, so a ``collect`` node never turns them into its output.
    """

    default_code: ClassVar[str] = "WORKFLOW_RUN_ERROR"
    interrupts_workflow: ClassVar[bool] = True

    def __init__(
        self,
        message: str,
        *,
        run_id: str,
        retryable: bool = False,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message, retryable=retryable, details={"runId": run_id, **(details or {})})
        self.run_id = run_id


class WorkflowRunNotFoundError(WorkflowRunError):
    """No such run (``Unknown workflow run "<id>".``)."""

    default_code: ClassVar[str] = "WORKFLOW_RUN_NOT_FOUND"


class WorkflowRunLeasedError(WorkflowRunError):
    """Another worker is executing the run (retry once its lease expired)."""

    default_code: ClassVar[str] = "WORKFLOW_RUN_LEASED"


class WorkflowRunLeaseLostError(WorkflowRunError):
    """This worker's lease was taken over: it stopped and wrote nothing more."""

    default_code: ClassVar[str] = "WORKFLOW_RUN_LEASE_LOST"


class WorkflowRunCancelledError(WorkflowRunError):
    """The run was cancelled."""

    default_code: ClassVar[str] = "WORKFLOW_RUN_CANCELLED"


class WorkflowRunMismatchError(WorkflowRunError, ValueError):
    """The run id belongs to another graph (digest) or another input."""

    default_code: ClassVar[str] = "WORKFLOW_RUN_MISMATCH"


class WorkflowRunStateError(WorkflowRunError, ValueError):
    """The operation does not fit the run's or the node's status."""

    default_code: ClassVar[str] = "WORKFLOW_RUN_STATE_INVALID"


class WorkflowNodeReconciliationError(WorkflowRunError):
    """A side-effect node was running when its worker died: it may have committed.

    It is never run again implicitly; resolve each listed node with ``reconcile_node()``
    (``details["nodes"]``: ``[{nodeId, iteration}]``).
    """

    default_code: ClassVar[str] = "WORKFLOW_NODE_NEEDS_RECONCILIATION"


class WorkflowNodeOutputError(WorkflowRunError, TypeError):
    """A node's output cannot be persisted (not strict JSON, no codec for its type)."""

    default_code: ClassVar[str] = "WORKFLOW_NODE_OUTPUT_INVALID"
