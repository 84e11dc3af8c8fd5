"""Durable workflow-graph runs (spec 04 §8.2-21, issue 15 point 8).

Every node's status and output is persisted as the graph runs; a run continues after its last
completed node.
"""

from actoviq.orchestration.graph_runs.codec import decode_output, encode_output
from actoviq.orchestration.graph_runs.errors import (
    WorkflowNodeOutputError,
    WorkflowNodeReconciliationError,
    WorkflowRunCancelledError,
    WorkflowRunError,
    WorkflowRunLeasedError,
    WorkflowRunLeaseLostError,
    WorkflowRunMismatchError,
    WorkflowRunNotFoundError,
    WorkflowRunStateError,
)
from actoviq.orchestration.graph_runs.journal import WorkflowNodeFailedError
from actoviq.orchestration.graph_runs.records import (
    WORKFLOW_RUN_SCHEMA_VERSION,
    WorkflowNodeRecord,
    WorkflowRunRecord,
)
from actoviq.orchestration.graph_runs.runner import DurableGraphRunner, graph_digest

__all__ = [
    "WORKFLOW_RUN_SCHEMA_VERSION",
    "DurableGraphRunner",
    "WorkflowNodeFailedError",
    "WorkflowNodeOutputError",
    "WorkflowNodeReconciliationError",
    "WorkflowNodeRecord",
    "WorkflowRunCancelledError",
    "WorkflowRunError",
    "WorkflowRunLeaseLostError",
    "WorkflowRunLeasedError",
    "WorkflowRunMismatchError",
    "WorkflowRunNotFoundError",
    "WorkflowRunRecord",
    "WorkflowRunStateError",
    "decode_output",
    "encode_output",
    "graph_digest",
]
