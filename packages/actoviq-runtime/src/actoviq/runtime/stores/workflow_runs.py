"""Durable workflow-graph runs: one run row plus one row per node execution (spec 04 §8.2-21).

A durable ``WorkflowGraph`` run persists each node's status and output as it settles, so a run
interrupted by a crash resumes from what completed: completed nodes (side-effect ones above all)
are never executed again. The payloads are orchestration's JSON (camelCase, D2); the store reads
a few indexed columns out of them and otherwise keeps them verbatim, like the durable children.

* A **run record** has ``runId``, ``graphId``, ``revision`` (0 on create, +1 per CAS, the fencing
  token), ``status`` (``running``, ``completed``, ``failed``, ``cancelled``), ``createdAt``,
  ``updatedAt`` and optionally ``leaseOwner`` / ``leaseExpiresAt`` (epoch ms): the worker that
  executes the run.
* A **node record** has ``runId``, ``nodeId``, ``iteration`` (0 for the first execution; loops
  add one per round), ``revision``, ``status`` (``running``, ``completed``, ``failed``,
  ``skipped``, ``cancelled``), ``createdAt`` and ``updatedAt``.

Node writes may be *fenced*: :meth:`WorkflowRunStore.put_node` with ``lease_owner`` writes only
while the run record names that owner, in the same transaction, so a worker whose run was taken
over cannot record a node afterwards.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

from actoviq.core import JsonObject
from actoviq.runtime.stores.errors import StorageDataError
from actoviq.runtime.stores.validation import (
    MAX_SAFE_INTEGER,
    require_json_object,
    require_key,
    require_optional_key,
    require_revision,
)

__all__ = [
    "WORKFLOW_NODE_STATUSES",
    "WORKFLOW_RUN_STATUSES",
    "WorkflowNodeRow",
    "WorkflowRunRow",
    "WorkflowRunStore",
    "copy_node",
    "validate_node_put",
    "validate_run_cas",
    "validate_run_create",
    "workflow_node_columns",
    "workflow_node_resource",
    "workflow_run_columns",
    "workflow_run_resource",
]

WORKFLOW_RUN_STATUSES: frozenset[str] = frozenset({"running", "completed", "failed", "cancelled"})
"""Every status a durable workflow run record may have."""
WORKFLOW_NODE_STATUSES: frozenset[str] = frozenset(
    {"running", "completed", "failed", "skipped", "cancelled"}
)
"""Every status a durable workflow node record may have."""


def workflow_run_resource(tenant_id: str, run_id: str) -> str:
    """The resource string of a workflow run in errors."""
    return f"workflow run {tenant_id}/{run_id}"


def workflow_node_resource(tenant_id: str, run_id: str, node_id: str, iteration: int) -> str:
    """The resource string of one node execution in errors."""
    return f"workflow node {tenant_id}/{run_id}/{node_id}#{iteration}"


@attrs.frozen(kw_only=True)
class WorkflowRunRow:
    """A workflow run record and its indexed columns."""

    tenant_id: str
    run_id: str
    graph_id: str
    revision: int
    status: str
    lease_owner: str | None
    lease_expires_at: int | None
    created_at: str
    updated_at: str
    record: JsonObject


@attrs.frozen(kw_only=True)
class WorkflowNodeRow:
    """One node execution's record and its indexed columns."""

    tenant_id: str
    run_id: str
    node_id: str
    iteration: int
    revision: int
    status: str
    created_at: str
    updated_at: str
    record: JsonObject


def _epoch(body: JsonObject, field: str) -> int | None:
    value = body.get(field)
    if value is None:
        return None
    if type(value) is not int or value < 0 or value > MAX_SAFE_INTEGER:
        raise StorageDataError(f"{field} must be a non-negative safe integer (epoch ms)")
    return value


def _status(body: JsonObject, allowed: frozenset[str]) -> str:
    status = require_key(body.get("status"), "status")
    if status not in allowed:
        raise StorageDataError(f"status must be one of {sorted(allowed)}")
    return status


def workflow_run_columns(tenant_id: str, record: object) -> WorkflowRunRow:
    """Read the indexed columns out of a run record (validated, copied).

    Raises:
        StorageDataError: the record is not a JSON object with the required fields.
    """
    body = require_json_object(record, "record")
    return WorkflowRunRow(
        tenant_id=tenant_id,
        run_id=require_key(body.get("runId"), "runId"),
        graph_id=require_key(body.get("graphId"), "graphId"),
        revision=require_revision(body.get("revision"), "revision"),
        status=_status(body, WORKFLOW_RUN_STATUSES),
        lease_owner=require_optional_key(body.get("leaseOwner"), "leaseOwner"),
        lease_expires_at=_epoch(body, "leaseExpiresAt"),
        created_at=require_key(body.get("createdAt"), "createdAt"),
        updated_at=require_key(body.get("updatedAt"), "updatedAt"),
        record=body,
    )


def workflow_node_columns(tenant_id: str, record: object) -> WorkflowNodeRow:
    """Read the indexed columns out of a node record (validated, copied).

    Raises:
        StorageDataError: the record is not a JSON object with the required fields.
    """
    body = require_json_object(record, "record")
    return WorkflowNodeRow(
        tenant_id=tenant_id,
        run_id=require_key(body.get("runId"), "runId"),
        node_id=require_key(body.get("nodeId"), "nodeId"),
        iteration=require_revision(body.get("iteration"), "iteration"),
        revision=require_revision(body.get("revision"), "revision"),
        status=_status(body, WORKFLOW_NODE_STATUSES),
        created_at=require_key(body.get("createdAt"), "createdAt"),
        updated_at=require_key(body.get("updatedAt"), "updatedAt"),
        record=body,
    )


def validate_run_create(tenant_id: str, record: JsonObject) -> WorkflowRunRow:
    """Validate a new run record (revision 0)."""
    row = workflow_run_columns(require_key(tenant_id, "tenantId"), record)
    if row.revision != 0:
        raise StorageDataError("A new workflow run record must have revision 0.")
    return row


def validate_run_cas(
    tenant_id: str, run_id: str, expected_revision: int, record: JsonObject
) -> WorkflowRunRow:
    """Validate the next version of a run record for compare-and-set."""
    require_key(tenant_id, "tenantId")
    require_key(run_id, "runId")
    require_revision(expected_revision, "expectedRevision")
    row = workflow_run_columns(tenant_id, record)
    if row.run_id != run_id or row.revision != expected_revision + 1:
        raise StorageDataError("Workflow run CAS must advance exactly one revision.")
    return row


def validate_node_put(
    tenant_id: str,
    run_id: str,
    expected_revision: int | None,
    record: JsonObject,
    lease_owner: str | None,
) -> WorkflowNodeRow:
    """Validate a node write: its run, and its revision (0 new, ``expected + 1`` otherwise)."""
    require_key(tenant_id, "tenantId")
    require_key(run_id, "runId")
    require_optional_key(lease_owner, "leaseOwner")
    if expected_revision is not None:
        require_revision(expected_revision, "expectedRevision")
    row = workflow_node_columns(tenant_id, record)
    if row.run_id != run_id:
        raise StorageDataError("A workflow node record must name its run.")
    wanted = 0 if expected_revision is None else expected_revision + 1
    if row.revision != wanted:
        raise StorageDataError("Workflow node write must advance exactly one revision.")
    return row


def copy_node(row: WorkflowNodeRow) -> WorkflowNodeRow:
    """A copy whose record can be mutated freely."""
    return attrs.evolve(row, record=require_json_object(row.record, "record"))


@runtime_checkable
class WorkflowRunStore(Protocol):
    """Workflow runs and their node executions, keyed by ``(tenant_id, run_id)``."""

    async def create_run(self, *, tenant_id: str, record: JsonObject) -> WorkflowRunRow:
        """Insert a run record whose ``revision`` is 0.

        Raises:
            StorageConflictError: the run exists (expected None, actual its revision).
            StorageDataError: the record is invalid.
        """
        ...

    async def get_run(self, *, tenant_id: str, run_id: str) -> WorkflowRunRow | None:
        """Return the run record, or None."""
        ...

    async def compare_and_set_run(
        self, *, tenant_id: str, run_id: str, expected_revision: int, record: JsonObject
    ) -> bool:
        """Replace the run record if its revision is ``expected_revision``; False otherwise.

        Raises:
            StorageDataError: ``record`` names another run or does not advance one revision.
        """
        ...

    async def put_node(
        self,
        *,
        tenant_id: str,
        run_id: str,
        expected_revision: int | None,
        record: JsonObject,
        lease_owner: str | None = None,
    ) -> WorkflowNodeRow:
        """Create (``expected_revision=None``) or replace one node execution's record.

        With ``lease_owner``, the write happens only while the run record's ``leaseOwner`` is
        that owner (checked in the same transaction).

        Raises:
            StorageNotFoundError: the run does not exist.
            StorageConflictError: the node's revision (or absence) differs from the expected one,
                or the run is leased by another owner.
            StorageDataError: the record is invalid.
        """
        ...

    async def list_nodes(self, *, tenant_id: str, run_id: str) -> list[WorkflowNodeRow]:
        """The run's node executions ordered by ``created_at``, node id, then iteration."""
        ...

    async def list_runs(
        self,
        *,
        tenant_id: str,
        graph_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[WorkflowRunRow]:
        """Runs ordered by ``created_at`` then run id."""
        ...

    async def delete_run(self, *, tenant_id: str, run_id: str) -> bool:
        """Delete the run and its node records; False when absent."""
        ...

    async def aclose(self) -> None:
        """Release resources; idempotent."""
        ...
