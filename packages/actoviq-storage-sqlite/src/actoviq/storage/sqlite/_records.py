"""SQL checkpoint, memory, artifact-metadata and durable-child stores (spec 04 §3.5-3.7, §8.1.2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import attrs
from sqlalchemy import Row, Table, and_, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from actoviq.core import JsonObject, JsonValue, iso_now
from actoviq.runtime.stores import (
    CHECKPOINT_STATUSES,
    ArtifactRecord,
    CheckpointRecord,
    CheckpointStatus,
    DurableChildRow,
    MemoryRecord,
    StorageConflictError,
    StorageDataError,
)
from actoviq.runtime.stores.rules import (
    artifact_resource,
    checkpoint_resource,
    child_columns,
    memory_resource,
    validate_artifact,
    validate_cas_next,
    validate_checkpoint,
    validate_child_create,
    validate_memory,
)
from actoviq.runtime.stores.validation import (
    decode_json_object,
    decode_json_text,
    dump_json,
    require_json_object,
    require_key,
    require_limit,
    require_optional_key,
    require_revision,
    require_sha256,
)
from actoviq.storage.sqlite._engine import Database
from actoviq.storage.sqlite._tables import artifacts, checkpoints, durable_children, memory


def _text(value: object, field: str) -> str:
    if type(value) is not str:
        raise StorageDataError(f"stored {field} must be text")
    return value


def _opt_text(value: object, field: str) -> str | None:
    return None if value is None else _text(value, field)


def _int(value: object, field: str) -> int:
    if type(value) is not int:
        raise StorageDataError(f"stored {field} must be an integer")
    return require_revision(value, field)


async def _guarded_write(
    db: Database,
    table: Table,
    key: dict[str, str],
    expected_revision: int | None,
    resource: str,
    values: dict[str, Any],
    stamp: str,
) -> tuple[int, str]:
    """The create-or-replace CAS shared by checkpoints, memory and artifacts.

    Returns ``(revision, created_at)`` of the written row.
    """
    where = and_(*(table.c[name] == value for name, value in key.items()))
    try:
        async with db.write() as conn:
            row = (
                await conn.execute(
                    select(table.c.revision, table.c.created_at).where(where).with_for_update()
                )
            ).first()
            actual = None if row is None else _int(row.revision, "revision")
            if actual != expected_revision:
                raise StorageConflictError(
                    resource, expected_revision=expected_revision, actual_revision=actual
                )
            if row is None:
                await conn.execute(
                    insert(table).values(
                        **key, **values, revision=0, created_at=stamp, updated_at=stamp
                    )
                )
                return 0, stamp
            changed = await conn.execute(
                update(table)
                .where(where)
                .where(table.c.revision == actual)
                .values(**values, revision=(actual or 0) + 1, updated_at=stamp)
            )
            if changed.rowcount != 1:
                raise StorageConflictError(
                    resource, expected_revision=expected_revision, actual_revision=None
                )
            return (actual or 0) + 1, _text(row.created_at, "created_at")
    except IntegrityError:
        # PostgreSQL: a concurrent creator inserted the absent row first.
        raise StorageConflictError(
            resource, expected_revision=expected_revision, actual_revision=0
        ) from None


async def _guarded_delete(
    db: Database, table: Table, key: dict[str, str], expected_revision: int | None, resource: str
) -> bool:
    where = and_(*(table.c[name] == value for name, value in key.items()))
    async with db.write() as conn:
        row = (await conn.execute(select(table.c.revision).where(where).with_for_update())).first()
        if row is None:
            return False
        actual = _int(row.revision, "revision")
        if expected_revision is not None and actual != expected_revision:
            raise StorageConflictError(
                resource, expected_revision=expected_revision, actual_revision=actual
            )
        await conn.execute(delete(table).where(where))
        return True


async def _select(db: Database, query: Any) -> list[Row[Any]]:
    async with db.read() as conn:
        return list((await conn.execute(query)).all())


class SqlCheckpointStore:
    """:class:`~actoviq.runtime.stores.CheckpointStore` on SQLAlchemy Core."""

    def __init__(self, database: Database) -> None:
        self._db = database

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
        )
        effects: list[JsonValue] = list(draft.pending_side_effects)
        revision, created = await _guarded_write(
            self._db,
            checkpoints,
            {"tenant_id": tenant_id, "checkpoint_id": checkpoint_id},
            expected_revision,
            checkpoint_resource(tenant_id, checkpoint_id),
            {
                "run_id": run_id,
                "session_id": session_id,
                "status": status,
                "state_json": dump_json(draft.state),
                "interruption_json": None
                if draft.interruption is None
                else dump_json(draft.interruption),
                "pending_side_effects_json": dump_json(effects),
                "trace_context_json": None
                if draft.trace_context is None
                else dump_json(draft.trace_context),
            },
            draft.updated_at,
        )
        return attrs.evolve(draft, revision=revision, created_at=created)

    @staticmethod
    def _decode(row: Row[Any]) -> CheckpointRecord:
        status = _text(row.status, "status")
        if status not in CHECKPOINT_STATUSES:
            raise StorageDataError(f"stored checkpoint status {status!r} is not known")
        effects = decode_json_text(row.pending_side_effects_json, "pending_side_effects_json")
        if type(effects) is not list:
            raise StorageDataError("pending_side_effects_json must be a JSON array")
        return CheckpointRecord(
            tenant_id=_text(row.tenant_id, "tenant_id"),
            checkpoint_id=_text(row.checkpoint_id, "checkpoint_id"),
            run_id=_text(row.run_id, "run_id"),
            session_id=_opt_text(row.session_id, "session_id"),
            revision=_int(row.revision, "revision"),
            status=cast(CheckpointStatus, status),
            state=decode_json_object(row.state_json, "state_json"),
            interruption=None
            if row.interruption_json is None
            else decode_json_object(row.interruption_json, "interruption_json"),
            pending_side_effects=tuple(
                require_json_object(e, "pending_side_effects_json") for e in effects
            ),
            trace_context=None
            if row.trace_context_json is None
            else decode_json_object(row.trace_context_json, "trace_context_json"),
            created_at=_text(row.created_at, "created_at"),
            updated_at=_text(row.updated_at, "updated_at"),
        )

    async def get(self, *, tenant_id: str, checkpoint_id: str) -> CheckpointRecord | None:
        """See :meth:`CheckpointStore.get`."""
        require_key(tenant_id, "tenantId")
        require_key(checkpoint_id, "checkpointId")
        rows = await _select(
            self._db,
            select(checkpoints)
            .where(checkpoints.c.tenant_id == tenant_id)
            .where(checkpoints.c.checkpoint_id == checkpoint_id),
        )
        return self._decode(rows[0]) if rows else None

    async def list_checkpoints(
        self,
        *,
        tenant_id: str,
        run_id: str | None = None,
        status: CheckpointStatus | None = None,
        limit: int = 1000,
    ) -> list[CheckpointRecord]:
        """See :meth:`CheckpointStore.list_checkpoints`."""
        require_key(tenant_id, "tenantId")
        require_optional_key(run_id, "runId")
        cap = require_limit(limit)
        query = select(checkpoints).where(checkpoints.c.tenant_id == tenant_id)
        if run_id is not None:
            query = query.where(checkpoints.c.run_id == run_id)
        if status is not None:
            query = query.where(checkpoints.c.status == status)
        query = query.order_by(checkpoints.c.created_at, checkpoints.c.checkpoint_id).limit(cap)
        return [self._decode(r) for r in await _select(self._db, query)]

    async def delete(
        self, *, tenant_id: str, checkpoint_id: str, expected_revision: int | None = None
    ) -> bool:
        """See :meth:`CheckpointStore.delete`."""
        require_key(tenant_id, "tenantId")
        require_key(checkpoint_id, "checkpointId")
        return await _guarded_delete(
            self._db,
            checkpoints,
            {"tenant_id": tenant_id, "checkpoint_id": checkpoint_id},
            expected_revision,
            checkpoint_resource(tenant_id, checkpoint_id),
        )

    async def aclose(self) -> None:
        """No-op: the :class:`SqliteStorage` owns the engine."""


class SqlMemoryStore:
    """:class:`~actoviq.runtime.stores.MemoryStore` on SQLAlchemy Core."""

    def __init__(self, database: Database) -> None:
        self._db = database

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
        revision, created = await _guarded_write(
            self._db,
            memory,
            {"tenant_id": tenant_id, "memory_id": memory_id},
            expected_revision,
            memory_resource(tenant_id, memory_id),
            {
                "namespace": namespace,
                "value_json": dump_json(draft.value),
                "metadata_json": dump_json(draft.metadata),
            },
            draft.updated_at,
        )
        return attrs.evolve(draft, revision=revision, created_at=created)

    @staticmethod
    def _decode(row: Row[Any]) -> MemoryRecord:
        return MemoryRecord(
            tenant_id=_text(row.tenant_id, "tenant_id"),
            memory_id=_text(row.memory_id, "memory_id"),
            namespace=_text(row.namespace, "namespace"),
            revision=_int(row.revision, "revision"),
            value=decode_json_text(row.value_json, "value_json"),
            metadata=decode_json_object(row.metadata_json, "metadata_json"),
            created_at=_text(row.created_at, "created_at"),
            updated_at=_text(row.updated_at, "updated_at"),
        )

    async def get(self, *, tenant_id: str, memory_id: str) -> MemoryRecord | None:
        """See :meth:`MemoryStore.get`."""
        require_key(tenant_id, "tenantId")
        require_key(memory_id, "memoryId")
        rows = await _select(
            self._db,
            select(memory)
            .where(memory.c.tenant_id == tenant_id)
            .where(memory.c.memory_id == memory_id),
        )
        return self._decode(rows[0]) if rows else None

    async def list_memories(
        self, *, tenant_id: str, namespace: str | None = None, limit: int | None = None
    ) -> list[MemoryRecord]:
        """See :meth:`MemoryStore.list_memories`."""
        require_key(tenant_id, "tenantId")
        require_optional_key(namespace, "namespace")
        cap = require_limit(limit)
        query = select(memory).where(memory.c.tenant_id == tenant_id)
        if namespace is not None:
            query = query.where(memory.c.namespace == namespace)
        query = query.order_by(memory.c.updated_at.desc(), memory.c.memory_id)
        if cap is not None:
            query = query.limit(cap)
        return [self._decode(r) for r in await _select(self._db, query)]

    async def delete(
        self, *, tenant_id: str, memory_id: str, expected_revision: int | None = None
    ) -> bool:
        """See :meth:`MemoryStore.delete`."""
        require_key(tenant_id, "tenantId")
        require_key(memory_id, "memoryId")
        return await _guarded_delete(
            self._db,
            memory,
            {"tenant_id": tenant_id, "memory_id": memory_id},
            expected_revision,
            memory_resource(tenant_id, memory_id),
        )

    async def aclose(self) -> None:
        """No-op: the :class:`SqliteStorage` owns the engine."""


class SqlArtifactMetadataStore:
    """:class:`~actoviq.runtime.stores.ArtifactMetadataStore` on SQLAlchemy Core."""

    def __init__(self, database: Database) -> None:
        self._db = database

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
        revision, created = await _guarded_write(
            self._db,
            artifacts,
            {"tenant_id": tenant_id, "artifact_id": artifact_id},
            expected_revision,
            artifact_resource(tenant_id, artifact_id),
            {
                "media_type": media_type,
                "size": size,
                "sha256": sha256,
                "uri": uri,
                "metadata_json": dump_json(draft.metadata),
            },
            draft.updated_at,
        )
        return attrs.evolve(draft, revision=revision, created_at=created)

    @staticmethod
    def _decode(row: Row[Any]) -> ArtifactRecord:
        return ArtifactRecord(
            tenant_id=_text(row.tenant_id, "tenant_id"),
            artifact_id=_text(row.artifact_id, "artifact_id"),
            revision=_int(row.revision, "revision"),
            media_type=_text(row.media_type, "media_type"),
            size=_int(row.size, "size"),
            sha256=require_sha256(row.sha256, "stored sha256"),
            uri=_opt_text(row.uri, "uri"),
            metadata=decode_json_object(row.metadata_json, "metadata_json"),
            created_at=_text(row.created_at, "created_at"),
            updated_at=_text(row.updated_at, "updated_at"),
        )

    async def get(self, *, tenant_id: str, artifact_id: str) -> ArtifactRecord | None:
        """See :meth:`ArtifactMetadataStore.get`."""
        require_key(tenant_id, "tenantId")
        require_key(artifact_id, "artifactId")
        rows = await _select(
            self._db,
            select(artifacts)
            .where(artifacts.c.tenant_id == tenant_id)
            .where(artifacts.c.artifact_id == artifact_id),
        )
        return self._decode(rows[0]) if rows else None

    async def list_artifacts(
        self, *, tenant_id: str, limit: int | None = None
    ) -> list[ArtifactRecord]:
        """See :meth:`ArtifactMetadataStore.list_artifacts`."""
        require_key(tenant_id, "tenantId")
        cap = require_limit(limit)
        query = (
            select(artifacts)
            .where(artifacts.c.tenant_id == tenant_id)
            .order_by(artifacts.c.updated_at.desc(), artifacts.c.artifact_id)
        )
        if cap is not None:
            query = query.limit(cap)
        return [self._decode(r) for r in await _select(self._db, query)]

    async def delete(
        self, *, tenant_id: str, artifact_id: str, expected_revision: int | None = None
    ) -> bool:
        """See :meth:`ArtifactMetadataStore.delete`."""
        require_key(tenant_id, "tenantId")
        require_key(artifact_id, "artifactId")
        return await _guarded_delete(
            self._db,
            artifacts,
            {"tenant_id": tenant_id, "artifact_id": artifact_id},
            expected_revision,
            artifact_resource(tenant_id, artifact_id),
        )

    async def aclose(self) -> None:
        """No-op: the :class:`SqliteStorage` owns the engine."""


def _child_values(row: DurableChildRow) -> dict[str, Any]:
    return {
        "parent_run_id": row.parent_run_id,
        "revision": row.revision,
        "status": row.status,
        "lease_owner": row.lease_owner,
        "lease_expires_at": row.lease_expires_at,
        "heartbeat_at": row.heartbeat_at,
        "record_json": dump_json(row.record),
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


class SqlDurableChildStore:
    """:class:`~actoviq.runtime.stores.DurableChildStore` on its own indexed table."""

    def __init__(self, database: Database) -> None:
        self._db = database

    async def create(self, *, tenant_id: str, record: JsonObject) -> DurableChildRow:
        """See :meth:`DurableChildStore.create`."""
        row = validate_child_create(require_key(tenant_id, "tenantId"), record)

        def exists(actual: int | None) -> StorageConflictError:
            return StorageConflictError(
                f"durable child {tenant_id}/{row.child_id}",
                expected_revision=None,
                actual_revision=actual,
                message=f'Durable child "{row.child_id}" already exists.',
            )

        try:
            async with self._db.write() as conn:
                found = await self._current(conn, tenant_id, row.child_id)
                if found is not None:
                    raise exists(_int(found.revision, "revision"))
                await conn.execute(
                    insert(durable_children).values(
                        tenant_id=tenant_id, child_id=row.child_id, **_child_values(row)
                    )
                )
        except IntegrityError:
            raise exists(None) from None
        return row

    @staticmethod
    async def _current(conn: AsyncConnection, tenant_id: str, child_id: str) -> Row[Any] | None:
        return (
            await conn.execute(
                select(durable_children)
                .where(durable_children.c.tenant_id == tenant_id)
                .where(durable_children.c.child_id == child_id)
                .with_for_update()
            )
        ).first()

    @staticmethod
    def _decode(tenant_id: str, row: Row[Any]) -> DurableChildRow:
        decoded = child_columns(tenant_id, decode_json_object(row.record_json, "record_json"))
        if decoded.revision != _int(row.revision, "revision"):
            raise StorageDataError(
                f"Durable child {decoded.child_id} revision does not match storage."
            )
        return decoded

    async def get(self, *, tenant_id: str, child_id: str) -> DurableChildRow | None:
        """See :meth:`DurableChildStore.get`."""
        require_key(tenant_id, "tenantId")
        require_key(child_id, "childId")
        rows = await _select(
            self._db,
            select(durable_children)
            .where(durable_children.c.tenant_id == tenant_id)
            .where(durable_children.c.child_id == child_id),
        )
        return self._decode(tenant_id, rows[0]) if rows else None

    async def compare_and_set(
        self, *, tenant_id: str, child_id: str, expected_revision: int, record: JsonObject
    ) -> bool:
        """See :meth:`DurableChildStore.compare_and_set`."""
        require_key(tenant_id, "tenantId")
        require_key(child_id, "childId")
        require_revision(expected_revision, "expectedRevision")
        row = validate_cas_next(tenant_id, child_id, expected_revision, record)
        async with self._db.write() as conn:
            changed = await conn.execute(
                update(durable_children)
                .where(durable_children.c.tenant_id == tenant_id)
                .where(durable_children.c.child_id == child_id)
                .where(durable_children.c.revision == expected_revision)
                .values(**_child_values(row))
            )
            return changed.rowcount == 1

    async def list_children(
        self,
        *,
        tenant_id: str,
        parent_run_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[DurableChildRow]:
        """See :meth:`DurableChildStore.list_children`."""
        require_key(tenant_id, "tenantId")
        require_optional_key(parent_run_id, "parentRunId")
        cap = require_limit(limit)
        query = select(durable_children).where(durable_children.c.tenant_id == tenant_id)
        if parent_run_id is not None:
            query = query.where(durable_children.c.parent_run_id == parent_run_id)
        if status is not None:
            query = query.where(durable_children.c.status == status)
        query = query.order_by(durable_children.c.created_at, durable_children.c.child_id)
        if cap is not None:
            query = query.limit(cap)
        return [self._decode(tenant_id, r) for r in await _select(self._db, query)]

    async def aclose(self) -> None:
        """No-op: the :class:`SqliteStorage` owns the engine."""
