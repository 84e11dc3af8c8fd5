"""In-memory workflow run store (tests, single-process scripts).

Every operation runs without awaiting, so it is atomic on the event loop: the same CAS and fencing
rules as the SQL backend, with no persistence. Everything returned is a copy.
"""

from __future__ import annotations

import attrs

from actoviq.core import JsonObject
from actoviq.runtime.stores.clock import wall_clock_ms
from actoviq.runtime.stores.errors import StorageConflictError, StorageNotFoundError
from actoviq.runtime.stores.validation import (
    require_json_object,
    require_key,
    require_limit,
    require_optional_key,
)
from actoviq.runtime.stores.workflow_runs import (
    WorkflowNodeRow,
    WorkflowRunRow,
    copy_node,
    validate_node_put,
    validate_run_cas,
    validate_run_create,
    workflow_node_resource,
    workflow_run_resource,
)

__all__ = ["InMemoryWorkflowRunStore"]


def _copy_run(row: WorkflowRunRow) -> WorkflowRunRow:
    return attrs.evolve(row, record=require_json_object(row.record, "record"))


class InMemoryWorkflowRunStore:
    """A :class:`~actoviq.runtime.stores.workflow_runs.WorkflowRunStore` held in dicts."""

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str], WorkflowRunRow] = {}
        self._nodes: dict[tuple[str, str], dict[tuple[str, int], WorkflowNodeRow]] = {}

    async def create_run(self, *, tenant_id: str, record: JsonObject) -> WorkflowRunRow:
        """See :meth:`WorkflowRunStore.create_run`."""
        row = validate_run_create(tenant_id, record)
        key = (row.tenant_id, row.run_id)
        current = self._runs.get(key)
        if current is not None:
            raise StorageConflictError(
                workflow_run_resource(*key),
                expected_revision=None,
                actual_revision=current.revision,
            )
        self._runs[key] = row
        self._nodes[key] = {}
        return _copy_run(row)

    async def get_run(self, *, tenant_id: str, run_id: str) -> WorkflowRunRow | None:
        """See :meth:`WorkflowRunStore.get_run`."""
        key = (require_key(tenant_id, "tenantId"), require_key(run_id, "runId"))
        row = self._runs.get(key)
        return None if row is None else _copy_run(row)

    async def compare_and_set_run(
        self, *, tenant_id: str, run_id: str, expected_revision: int, record: JsonObject
    ) -> bool:
        """See :meth:`WorkflowRunStore.compare_and_set_run`."""
        row = validate_run_cas(tenant_id, run_id, expected_revision, record)
        key = (tenant_id, run_id)
        current = self._runs.get(key)
        if current is None or current.revision != expected_revision:
            return False
        self._runs[key] = row
        return True

    async def put_node(
        self,
        *,
        tenant_id: str,
        run_id: str,
        expected_revision: int | None,
        record: JsonObject,
        lease_owner: str | None = None,
    ) -> WorkflowNodeRow:
        """See :meth:`WorkflowRunStore.put_node`."""
        row = validate_node_put(tenant_id, run_id, expected_revision, record, lease_owner)
        key = (tenant_id, run_id)
        run = self._runs.get(key)
        if run is None:
            raise StorageNotFoundError(workflow_run_resource(*key))
        resource = workflow_node_resource(tenant_id, run_id, row.node_id, row.iteration)
        if lease_owner is not None and run.lease_owner != lease_owner:
            raise StorageConflictError(
                resource,
                expected_revision=expected_revision,
                actual_revision=None,
                message=(
                    f"Workflow run {run_id} is leased by {run.lease_owner or 'nobody'}, "
                    f"not {lease_owner}: {resource} was not written."
                ),
            )
        nodes = self._nodes[key]
        current = nodes.get((row.node_id, row.iteration))
        actual = None if current is None else current.revision
        if actual != expected_revision:
            raise StorageConflictError(
                resource, expected_revision=expected_revision, actual_revision=actual
            )
        nodes[(row.node_id, row.iteration)] = row
        return copy_node(row)

    async def clock_ms(self) -> int:
        """See :class:`~actoviq.runtime.stores.clock.StoreClock` (the wall clock)."""
        return wall_clock_ms()

    async def list_nodes(self, *, tenant_id: str, run_id: str) -> list[WorkflowNodeRow]:
        """See :meth:`WorkflowRunStore.list_nodes`."""
        key = (require_key(tenant_id, "tenantId"), require_key(run_id, "runId"))
        rows = list(self._nodes.get(key, {}).values())
        rows.sort(key=lambda r: (r.created_at, r.node_id, r.iteration))
        return [copy_node(r) for r in rows]

    async def list_runs(
        self,
        *,
        tenant_id: str,
        graph_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[WorkflowRunRow]:
        """See :meth:`WorkflowRunStore.list_runs`."""
        tenant = require_key(tenant_id, "tenantId")
        require_optional_key(graph_id, "graphId")
        require_optional_key(status, "status")
        cap = require_limit(limit)
        rows = [
            row
            for (owner, _), row in self._runs.items()
            if owner == tenant
            and (graph_id is None or row.graph_id == graph_id)
            and (status is None or row.status == status)
        ]
        rows.sort(key=lambda r: (r.created_at, r.run_id))
        return [_copy_run(r) for r in rows[:cap]]

    async def delete_run(self, *, tenant_id: str, run_id: str) -> bool:
        """See :meth:`WorkflowRunStore.delete_run`."""
        key = (require_key(tenant_id, "tenantId"), require_key(run_id, "runId"))
        self._nodes.pop(key, None)
        return self._runs.pop(key, None) is not None

    async def aclose(self) -> None:
        """Nothing to release."""
