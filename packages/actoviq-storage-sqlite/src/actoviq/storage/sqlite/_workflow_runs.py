"""SQL workflow run store: the run row (status, lease) and one row per node execution.

A node write names the revision it expects (None: new) and, when fenced, the run's lease owner;
both are checked in the writer transaction that writes the node (the run row is read ``FOR
UPDATE`` on PostgreSQL, so a concurrent takeover of the run waits for it, or it for the takeover).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, and_, delete, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from actoviq.core import JsonObject
from actoviq.runtime.stores import (
    StorageConflictError,
    StorageDataError,
    StorageNotFoundError,
    WorkflowNodeRow,
    WorkflowRunRow,
)
from actoviq.runtime.stores.validation import (
    decode_json_object,
    dump_json,
    require_key,
    require_limit,
    require_optional_key,
)
from actoviq.runtime.stores.workflow_runs import (
    validate_node_put,
    validate_run_cas,
    validate_run_create,
    workflow_node_columns,
    workflow_node_resource,
    workflow_run_columns,
    workflow_run_resource,
)
from actoviq.storage.sqlite._clock import database_clock_ms
from actoviq.storage.sqlite._engine import Database
from actoviq.storage.sqlite._keyed_rows import stored_int, stored_text
from actoviq.storage.sqlite._tables import workflow_nodes as N
from actoviq.storage.sqlite._tables import workflow_runs as W

__all__ = ["SqlWorkflowRunStore"]


def _decode_run(row: Row[Any]) -> WorkflowRunRow:
    decoded = workflow_run_columns(
        stored_text(row.tenant_id, "tenant_id"), decode_json_object(row.record_json, "record_json")
    )
    if decoded.revision != stored_int(row.revision, "revision"):
        raise StorageDataError(f"Workflow run {decoded.run_id} revision does not match storage.")
    _check_columns(row, {"run_id": decoded.run_id, **_run_values(decoded, with_record=False)})
    return decoded


def _decode_node(row: Row[Any]) -> WorkflowNodeRow:
    decoded = workflow_node_columns(
        stored_text(row.tenant_id, "tenant_id"), decode_json_object(row.record_json, "record_json")
    )
    if decoded.revision != stored_int(row.revision, "revision"):
        raise StorageDataError(
            f"Workflow node {decoded.node_id}#{decoded.iteration} revision does not match storage."
        )
    _check_columns(
        row,
        {
            "run_id": decoded.run_id,
            "node_id": decoded.node_id,
            "iteration": decoded.iteration,
            **_node_values(decoded, with_record=False),
        },
    )
    return decoded


def _check_columns(row: Row[Any], expected: dict[str, Any]) -> None:
    """Fail closed when a column that indexes a record disagrees with the record."""
    columns = row._mapping  # pyright: ignore[reportPrivateUsage]
    for name, value in expected.items():
        if columns[name] != value:
            raise StorageDataError(f"Workflow record does not match its row ({name}).")


def _run_values(row: WorkflowRunRow, *, with_record: bool = True) -> dict[str, Any]:
    values: dict[str, Any] = {
        "graph_id": row.graph_id,
        "revision": row.revision,
        "status": row.status,
        "lease_owner": row.lease_owner,
        "lease_expires_at": row.lease_expires_at,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }
    if with_record:
        values["record_json"] = dump_json(row.record)
    return values


def _node_values(row: WorkflowNodeRow, *, with_record: bool = True) -> dict[str, Any]:
    values: dict[str, Any] = {
        "revision": row.revision,
        "status": row.status,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }
    if with_record:
        values["record_json"] = dump_json(row.record)
    return values


class SqlWorkflowRunStore:
    """:class:`~actoviq.runtime.stores.WorkflowRunStore` on SQLAlchemy Core."""

    def __init__(self, database: Database) -> None:
        self._db = database

    @staticmethod
    def _run_key(tenant_id: str, run_id: str) -> Any:
        return and_(W.c.tenant_id == tenant_id, W.c.run_id == run_id)

    async def clock_ms(self) -> int:
        """See :class:`~actoviq.runtime.stores.StoreClock` (PostgreSQL: the server's clock)."""
        return await database_clock_ms(self._db)

    async def create_run(self, *, tenant_id: str, record: JsonObject) -> WorkflowRunRow:
        """See :meth:`WorkflowRunStore.create_run`."""
        row = validate_run_create(tenant_id, record)
        key = self._run_key(tenant_id, row.run_id)

        def conflict(actual: int | None) -> StorageConflictError:
            return StorageConflictError(
                workflow_run_resource(tenant_id, row.run_id),
                expected_revision=None,
                actual_revision=actual,
            )

        def work(conn: Connection) -> WorkflowRunRow:
            found = conn.execute(select(W.c.revision).where(key)).first()
            if found is not None:
                raise conflict(stored_int(found.revision, "revision"))
            conn.execute(
                insert(W).values(tenant_id=tenant_id, run_id=row.run_id, **_run_values(row))
            )
            return row

        try:
            return await self._db.run_write(work)
        except IntegrityError:
            raise conflict(0) from None

    async def get_run(self, *, tenant_id: str, run_id: str) -> WorkflowRunRow | None:
        """See :meth:`WorkflowRunStore.get_run`."""
        key = self._run_key(require_key(tenant_id, "tenantId"), require_key(run_id, "runId"))

        def work(conn: Connection) -> WorkflowRunRow | None:
            found = conn.execute(select(W).where(key)).first()
            return None if found is None else _decode_run(found)

        return await self._db.run_read(work)

    async def compare_and_set_run(
        self, *, tenant_id: str, run_id: str, expected_revision: int, record: JsonObject
    ) -> bool:
        """See :meth:`WorkflowRunStore.compare_and_set_run`."""
        row = validate_run_cas(tenant_id, run_id, expected_revision, record)
        key = self._run_key(tenant_id, run_id)

        def work(conn: Connection) -> bool:
            changed = conn.execute(
                update(W).where(key, W.c.revision == expected_revision).values(**_run_values(row))
            )
            return changed.rowcount == 1

        return await self._db.run_write(work)

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
        run_key = self._run_key(tenant_id, run_id)
        node_key = and_(
            N.c.tenant_id == tenant_id,
            N.c.run_id == run_id,
            N.c.node_id == row.node_id,
            N.c.iteration == row.iteration,
        )
        resource = workflow_node_resource(tenant_id, run_id, row.node_id, row.iteration)

        def conflict(actual: int | None, message: str | None = None) -> StorageConflictError:
            return StorageConflictError(
                resource,
                expected_revision=expected_revision,
                actual_revision=actual,
                message=message,
            )

        def work(conn: Connection) -> WorkflowNodeRow:
            run = conn.execute(select(W.c.lease_owner).where(run_key).with_for_update()).first()
            if run is None:
                raise StorageNotFoundError(workflow_run_resource(tenant_id, run_id))
            if lease_owner is not None and run.lease_owner != lease_owner:
                raise conflict(
                    None,
                    f"Workflow run {run_id} is leased by {run.lease_owner or 'nobody'}, "
                    f"not {lease_owner}: {resource} was not written.",
                )
            current = conn.execute(select(N.c.revision).where(node_key)).first()
            actual = None if current is None else stored_int(current.revision, "revision")
            if actual != expected_revision:
                raise conflict(actual)
            if current is None:
                conn.execute(
                    insert(N).values(
                        tenant_id=tenant_id,
                        run_id=run_id,
                        node_id=row.node_id,
                        iteration=row.iteration,
                        **_node_values(row),
                    )
                )
            else:
                conn.execute(
                    update(N)
                    .where(node_key, N.c.revision == expected_revision)
                    .values(**_node_values(row))
                )
            return row

        try:
            return await self._db.run_write(work)
        except IntegrityError:
            raise conflict(0) from None  # PostgreSQL: a concurrent writer created the node

    async def list_nodes(self, *, tenant_id: str, run_id: str) -> list[WorkflowNodeRow]:
        """See :meth:`WorkflowRunStore.list_nodes`."""
        require_key(tenant_id, "tenantId")
        require_key(run_id, "runId")

        def work(conn: Connection) -> list[WorkflowNodeRow]:
            rows = conn.execute(
                select(N)
                .where(N.c.tenant_id == tenant_id, N.c.run_id == run_id)
                .order_by(N.c.created_at, N.c.node_id, N.c.iteration)
            ).all()
            return [_decode_node(r) for r in rows]

        return await self._db.run_read(work)

    async def list_runs(
        self,
        *,
        tenant_id: str,
        graph_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[WorkflowRunRow]:
        """See :meth:`WorkflowRunStore.list_runs`."""
        require_key(tenant_id, "tenantId")
        require_optional_key(graph_id, "graphId")
        require_optional_key(status, "status")
        cap = require_limit(limit)
        query = select(W).where(W.c.tenant_id == tenant_id)
        if graph_id is not None:
            query = query.where(W.c.graph_id == graph_id)
        if status is not None:
            query = query.where(W.c.status == status)
        query = query.order_by(W.c.created_at, W.c.run_id)
        if cap is not None:
            query = query.limit(cap)

        def work(conn: Connection) -> list[WorkflowRunRow]:
            return [_decode_run(r) for r in conn.execute(query).all()]

        return await self._db.run_read(work)

    async def delete_run(self, *, tenant_id: str, run_id: str) -> bool:
        """See :meth:`WorkflowRunStore.delete_run`."""
        key = self._run_key(require_key(tenant_id, "tenantId"), require_key(run_id, "runId"))

        def work(conn: Connection) -> bool:
            conn.execute(delete(N).where(N.c.tenant_id == tenant_id, N.c.run_id == run_id))
            return conn.execute(delete(W).where(key)).rowcount == 1

        return await self._db.run_write(work)

    async def aclose(self) -> None:
        """No-op: the :class:`SqliteStorage` owns the engine."""
