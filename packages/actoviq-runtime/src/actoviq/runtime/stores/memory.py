"""In-memory checkpoint, memory, artifact-metadata and durable-child stores (tests, scripts).

Each operation runs without awaiting, so it is atomic on the event loop: the same CAS semantics as
the SQL backends, with no persistence. Everything returned is a copy. The session store is in
:mod:`actoviq.runtime.stores.memory_sessions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import attrs

from actoviq.core import JsonObject, JsonValue, iso_now
from actoviq.runtime.stores._memory_rows import RevisionRows, row_key
from actoviq.runtime.stores.clock import wall_clock_ms
from actoviq.runtime.stores.errors import StorageConflictError
from actoviq.runtime.stores.records import (
    ArtifactRecord,
    CheckpointRecord,
    CheckpointStatus,
    DurableChildRow,
    MemoryRecord,
)
from actoviq.runtime.stores.rules import (
    artifact_resource,
    checkpoint_resource,
    memory_resource,
    validate_artifact,
    validate_cas_next,
    validate_checkpoint,
    validate_child_create,
    validate_memory,
)
from actoviq.runtime.stores.validation import (
    require_json_object,
    require_json_value,
    require_key,
    require_limit,
    require_optional_key,
    require_revision,
    require_sha256,
)

__all__ = [
    "InMemoryArtifactMetadataStore",
    "InMemoryCheckpointStore",
    "InMemoryDurableChildStore",
    "InMemoryMemoryStore",
]


_Draft = TypeVar("_Draft", CheckpointRecord, MemoryRecord, ArtifactRecord)


def _next_revision(draft: _Draft, current: _Draft | None) -> _Draft:
    """The row to store: the draft's revision follows ``current``, which keeps its created_at."""
    if current is None:
        return draft
    return attrs.evolve(draft, revision=current.revision + 1, created_at=current.created_at)


class InMemoryCheckpointStore:
    """A :class:`~actoviq.runtime.stores.protocols.CheckpointStore` held in a dict."""

    def __init__(self) -> None:
        self._rows = RevisionRows[CheckpointRecord](checkpoint_resource)

    async def put(
        self,
        *,
        tenant_id: str,
        checkpoint_id: str,
        run_id: str,
        expected_revision: int | None,
        status: CheckpointStatus,
        state: JsonObject,
        session_id: str | None = None,
        interruption: JsonObject | None = None,
        pending_side_effects: Sequence[JsonObject] = (),
        trace_context: JsonObject | None = None,
        updated_at: str | None = None,
        lease_owner: str | None = None,
        lease_expires_at: int | None = None,
    ) -> CheckpointRecord:
        """See :meth:`CheckpointStore.put`."""
        draft = validate_checkpoint(
            tenant_id=tenant_id,
            checkpoint_id=checkpoint_id,
            run_id=run_id,
            expected_revision=expected_revision,
            status=status,
            state=state,
            session_id=session_id,
            interruption=interruption,
            pending_side_effects=pending_side_effects,
            trace_context=trace_context,
            updated_at=updated_at or iso_now(),
            lease_owner=lease_owner,
            lease_expires_at=lease_expires_at,
        )
        key = (tenant_id, checkpoint_id)
        stored = _next_revision(draft, self._rows.expect(key, expected_revision))
        self._rows.rows[key] = stored
        return _copy_checkpoint(stored)

    async def get(self, *, tenant_id: str, checkpoint_id: str) -> CheckpointRecord | None:
        """See :meth:`CheckpointStore.get`."""
        row = self._rows.rows.get(row_key(tenant_id, checkpoint_id, "checkpointId"))
        return None if row is None else _copy_checkpoint(row)

    async def list_checkpoints(
        self,
        *,
        tenant_id: str,
        run_id: str | None = None,
        status: CheckpointStatus | None = None,
        limit: int = 1000,
    ) -> list[CheckpointRecord]:
        """See :meth:`CheckpointStore.list_checkpoints`."""
        tenant = require_key(tenant_id, "tenantId")
        require_optional_key(run_id, "runId")
        require_optional_key(status, "status")
        cap = require_limit(limit)
        rows = [
            row
            for row in self._rows.of_tenant(tenant)
            if (run_id is None or row.run_id == run_id) and (status is None or row.status == status)
        ]
        rows.sort(key=lambda r: (r.created_at, r.checkpoint_id))
        return [_copy_checkpoint(r) for r in rows[:cap]]

    async def delete(
        self, *, tenant_id: str, checkpoint_id: str, expected_revision: int | None = None
    ) -> bool:
        """See :meth:`CheckpointStore.delete`."""
        return self._rows.delete(
            row_key(tenant_id, checkpoint_id, "checkpointId"), expected_revision
        )

    async def clock_ms(self) -> int:
        """This process's wall clock (what checkpoint leases are compared against)."""
        return wall_clock_ms()

    async def aclose(self) -> None:
        """Nothing to release."""


def _copy_checkpoint(row: CheckpointRecord) -> CheckpointRecord:
    return attrs.evolve(
        row,
        state=require_json_object(row.state, "state"),
        interruption=None
        if row.interruption is None
        else require_json_object(row.interruption, "interruption"),
        pending_side_effects=tuple(
            require_json_object(e, "pendingSideEffects") for e in row.pending_side_effects
        ),
        trace_context=None
        if row.trace_context is None
        else require_json_object(row.trace_context, "traceContext"),
    )


class InMemoryMemoryStore:
    """A :class:`~actoviq.runtime.stores.protocols.MemoryStore` held in a dict."""

    def __init__(self) -> None:
        self._rows = RevisionRows[MemoryRecord](memory_resource)

    async def put(
        self,
        *,
        tenant_id: str,
        memory_id: str,
        namespace: str,
        expected_revision: int | None,
        value: JsonValue,
        metadata: JsonObject | None = None,
        updated_at: str | None = None,
    ) -> MemoryRecord:
        """See :meth:`MemoryStore.put`."""
        draft = validate_memory(
            tenant_id=tenant_id,
            memory_id=memory_id,
            namespace=namespace,
            expected_revision=expected_revision,
            value=value,
            metadata=metadata,
            updated_at=updated_at,
        )
        key = (tenant_id, memory_id)
        current = self._rows.expect(key, expected_revision)
        row = _next_revision(draft, current)
        self._rows.rows[key] = row
        return _copy_memory(row)

    async def get(self, *, tenant_id: str, memory_id: str) -> MemoryRecord | None:
        """See :meth:`MemoryStore.get`."""
        row = self._rows.rows.get(row_key(tenant_id, memory_id, "memoryId"))
        return None if row is None else _copy_memory(row)

    async def list_memories(
        self, *, tenant_id: str, namespace: str | None = None, limit: int | None = None
    ) -> list[MemoryRecord]:
        """See :meth:`MemoryStore.list_memories`."""
        tenant = require_key(tenant_id, "tenantId")
        require_optional_key(namespace, "namespace")
        cap = require_limit(limit)
        rows = [
            r for r in self._rows.of_tenant(tenant) if namespace is None or r.namespace == namespace
        ]
        rows.sort(key=lambda r: r.memory_id)
        rows.sort(key=lambda r: r.updated_at, reverse=True)
        return [_copy_memory(r) for r in rows[:cap]]

    async def delete(
        self, *, tenant_id: str, memory_id: str, expected_revision: int | None = None
    ) -> bool:
        """See :meth:`MemoryStore.delete`."""
        return self._rows.delete(row_key(tenant_id, memory_id, "memoryId"), expected_revision)

    async def aclose(self) -> None:
        """Nothing to release."""


def _copy_memory(row: MemoryRecord) -> MemoryRecord:
    return attrs.evolve(
        row,
        value=require_json_value(row.value, "value"),
        metadata=require_json_object(row.metadata, "metadata"),
    )


class InMemoryArtifactMetadataStore:
    """A :class:`~actoviq.runtime.stores.protocols.ArtifactMetadataStore` held in a dict."""

    def __init__(self) -> None:
        self._rows = RevisionRows[ArtifactRecord](artifact_resource)

    async def put(
        self,
        *,
        tenant_id: str,
        artifact_id: str,
        expected_revision: int | None,
        media_type: str,
        size: int,
        sha256: str,
        uri: str | None = None,
        metadata: JsonObject | None = None,
        updated_at: str | None = None,
    ) -> ArtifactRecord:
        """See :meth:`ArtifactMetadataStore.put`."""
        draft = validate_artifact(
            tenant_id=tenant_id,
            artifact_id=artifact_id,
            expected_revision=expected_revision,
            media_type=media_type,
            size=size,
            sha256=sha256,
            uri=uri,
            metadata=metadata,
            updated_at=updated_at,
        )
        key = (tenant_id, artifact_id)
        current = self._rows.expect(key, expected_revision)
        row = _next_revision(draft, current)
        self._rows.rows[key] = row
        return _copy_artifact(row)

    async def get(self, *, tenant_id: str, artifact_id: str) -> ArtifactRecord | None:
        """See :meth:`ArtifactMetadataStore.get`."""
        row = self._rows.rows.get(row_key(tenant_id, artifact_id, "artifactId"))
        return None if row is None else _copy_artifact(row)

    async def list_artifacts(
        self, *, tenant_id: str, limit: int | None = None
    ) -> list[ArtifactRecord]:
        """See :meth:`ArtifactMetadataStore.list_artifacts`."""
        tenant = require_key(tenant_id, "tenantId")
        cap = require_limit(limit)
        rows = self._rows.of_tenant(tenant)
        rows.sort(key=lambda r: r.artifact_id)
        rows.sort(key=lambda r: r.updated_at, reverse=True)
        return [_copy_artifact(r) for r in rows[:cap]]

    async def delete(
        self, *, tenant_id: str, artifact_id: str, expected_revision: int | None = None
    ) -> bool:
        """See :meth:`ArtifactMetadataStore.delete`."""
        return self._rows.delete(row_key(tenant_id, artifact_id, "artifactId"), expected_revision)

    async def referenced_sha256(self, *, sha256s: Sequence[str]) -> frozenset[str]:
        """See :meth:`ArtifactMetadataStore.referenced_sha256`."""
        wanted = {require_sha256(value) for value in sha256s}
        return frozenset(row.sha256 for row in self._rows.rows.values() if row.sha256 in wanted)

    async def aclose(self) -> None:
        """Nothing to release."""


def _copy_artifact(row: ArtifactRecord) -> ArtifactRecord:
    return attrs.evolve(row, metadata=require_json_object(row.metadata, "metadata"))


class InMemoryDurableChildStore:
    """A :class:`~actoviq.runtime.stores.protocols.DurableChildStore` held in a dict."""

    def __init__(self) -> None:
        self._rows = RevisionRows[DurableChildRow](
            lambda tenant, child: f"durable child {tenant}/{child}"
        )

    async def create(self, *, tenant_id: str, record: JsonObject) -> DurableChildRow:
        """See :meth:`DurableChildStore.create`."""
        tenant = require_key(tenant_id, "tenantId")
        row = validate_child_create(tenant, record)
        key = (tenant, row.child_id)
        current = self._rows.rows.get(key)
        if current is not None:
            raise StorageConflictError(
                f"durable child {tenant}/{row.child_id}",
                expected_revision=None,
                actual_revision=current.revision,
                message=f'Durable child "{row.child_id}" already exists.',
            )
        self._rows.rows[key] = row
        return _copy_child(row)

    async def get(self, *, tenant_id: str, child_id: str) -> DurableChildRow | None:
        """See :meth:`DurableChildStore.get`."""
        row = self._rows.rows.get(row_key(tenant_id, child_id, "childId"))
        return None if row is None else _copy_child(row)

    async def compare_and_set(
        self, *, tenant_id: str, child_id: str, expected_revision: int, record: JsonObject
    ) -> bool:
        """See :meth:`DurableChildStore.compare_and_set`."""
        tenant = require_key(tenant_id, "tenantId")
        require_key(child_id, "childId")
        require_revision(expected_revision, "expectedRevision")
        next_row = validate_cas_next(tenant, child_id, expected_revision, record)
        key = (tenant, child_id)
        current = self._rows.rows.get(key)
        if current is None or current.revision != expected_revision:
            return False
        self._rows.rows[key] = next_row
        return True

    async def clock_ms(self) -> int:
        """See :class:`~actoviq.runtime.stores.clock.StoreClock` (the wall clock)."""
        return wall_clock_ms()

    async def list_children(
        self,
        *,
        tenant_id: str,
        parent_run_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[DurableChildRow]:
        """See :meth:`DurableChildStore.list_children`."""
        tenant = require_key(tenant_id, "tenantId")
        require_optional_key(parent_run_id, "parentRunId")
        require_optional_key(status, "status")
        cap = require_limit(limit)
        rows = [
            r
            for r in self._rows.of_tenant(tenant)
            if (parent_run_id is None or r.parent_run_id == parent_run_id)
            and (status is None or r.status == status)
        ]
        rows.sort(key=lambda r: (r.created_at, r.child_id))
        return [_copy_child(r) for r in rows[:cap]]

    async def aclose(self) -> None:
        """Nothing to release."""


def _copy_child(row: DurableChildRow) -> DurableChildRow:
    return attrs.evolve(row, record=require_json_object(row.record, "record"))
