"""SQL checkpoint, memory, artifact-metadata and durable-child stores (spec 04 §3.5-3.7, §8.1.2)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, cast

import attrs
from sqlalchemy import Row, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

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
from actoviq.storage.sqlite._children_sql import (
    CHECKED_COLUMNS,
    child_cas,
    child_exists,
    child_insert,
    child_row,
)
from actoviq.storage.sqlite._clock import database_clock_ms
from actoviq.storage.sqlite._engine import Database
from actoviq.storage.sqlite._keyed_rows import KeyedRows, stored_int, stored_opt_text, stored_text
from actoviq.storage.sqlite._tables import artifacts, checkpoints, durable_children, memory


class SqlCheckpointStore:
    """:class:`~actoviq.runtime.stores.CheckpointStore` on SQLAlchemy Core."""

    def __init__(self, database: Database) -> None:
        self._db = database
        self._rows = KeyedRows(
            database,
            checkpoints,
            id_column="checkpoint_id",
            id_field="checkpointId",
            resource=checkpoint_resource,
            decode=self._decode,
        )

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
        effects: list[JsonValue] = list(draft.pending_side_effects)
        revision, created = await self._rows.put(
            tenant_id,
            checkpoint_id,
            expected_revision,
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
                "lease_owner": lease_owner,
                "lease_expires_at": lease_expires_at,
            },
            draft.updated_at,
        )
        return attrs.evolve(draft, revision=revision, created_at=created)

    @staticmethod
    def _decode(row: Row[Any]) -> CheckpointRecord:
        status = stored_text(row.status, "status")
        if status not in CHECKPOINT_STATUSES:
            raise StorageDataError(f"stored checkpoint status {status!r} is not known")
        effects = decode_json_text(row.pending_side_effects_json, "pending_side_effects_json")
        if type(effects) is not list:
            raise StorageDataError("pending_side_effects_json must be a JSON array")
        return CheckpointRecord(
            tenant_id=stored_text(row.tenant_id, "tenant_id"),
            checkpoint_id=stored_text(row.checkpoint_id, "checkpoint_id"),
            run_id=stored_text(row.run_id, "run_id"),
            session_id=stored_opt_text(row.session_id, "session_id"),
            revision=stored_int(row.revision, "revision"),
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
            created_at=stored_text(row.created_at, "created_at"),
            updated_at=stored_text(row.updated_at, "updated_at"),
            lease_owner=stored_opt_text(row.lease_owner, "lease_owner"),
            lease_expires_at=None
            if row.lease_expires_at is None
            else stored_int(row.lease_expires_at, "lease_expires_at"),
        )

    async def get(self, *, tenant_id: str, checkpoint_id: str) -> CheckpointRecord | None:
        """See :meth:`CheckpointStore.get`."""
        return await self._rows.get(tenant_id, checkpoint_id)

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
        require_optional_key(status, "status")
        cap = require_limit(limit)
        return await self._rows.list(
            tenant_id,
            equal={"run_id": run_id, "status": status},
            order_by=(checkpoints.c.created_at, checkpoints.c.checkpoint_id),
            limit=cap,
        )

    async def delete(
        self, *, tenant_id: str, checkpoint_id: str, expected_revision: int | None = None
    ) -> bool:
        """See :meth:`CheckpointStore.delete`."""
        return await self._rows.delete(tenant_id, checkpoint_id, expected_revision)

    async def clock_ms(self) -> int:
        """The time checkpoint leases compare against: PostgreSQL's clock, else this machine's."""
        return await database_clock_ms(self._db)

    async def aclose(self) -> None:
        """No-op: the :class:`SqliteStorage` owns the engine."""


class SqlMemoryStore:
    """:class:`~actoviq.runtime.stores.MemoryStore` on SQLAlchemy Core."""

    def __init__(self, database: Database) -> None:
        self._rows = KeyedRows(
            database,
            memory,
            id_column="memory_id",
            id_field="memoryId",
            resource=memory_resource,
            decode=self._decode,
        )

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
        revision, created = await self._rows.put(
            tenant_id,
            memory_id,
            expected_revision,
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
            tenant_id=stored_text(row.tenant_id, "tenant_id"),
            memory_id=stored_text(row.memory_id, "memory_id"),
            namespace=stored_text(row.namespace, "namespace"),
            revision=stored_int(row.revision, "revision"),
            value=decode_json_text(row.value_json, "value_json"),
            metadata=decode_json_object(row.metadata_json, "metadata_json"),
            created_at=stored_text(row.created_at, "created_at"),
            updated_at=stored_text(row.updated_at, "updated_at"),
        )

    async def get(self, *, tenant_id: str, memory_id: str) -> MemoryRecord | None:
        """See :meth:`MemoryStore.get`."""
        return await self._rows.get(tenant_id, memory_id)

    async def list_memories(
        self, *, tenant_id: str, namespace: str | None = None, limit: int | None = None
    ) -> list[MemoryRecord]:
        """See :meth:`MemoryStore.list_memories`."""
        require_key(tenant_id, "tenantId")
        require_optional_key(namespace, "namespace")
        cap = require_limit(limit)
        return await self._rows.list(
            tenant_id,
            equal={"namespace": namespace},
            order_by=(memory.c.updated_at.desc(), memory.c.memory_id),
            limit=cap,
        )

    async def delete(
        self, *, tenant_id: str, memory_id: str, expected_revision: int | None = None
    ) -> bool:
        """See :meth:`MemoryStore.delete`."""
        return await self._rows.delete(tenant_id, memory_id, expected_revision)

    async def aclose(self) -> None:
        """No-op: the :class:`SqliteStorage` owns the engine."""


class SqlArtifactMetadataStore:
    """:class:`~actoviq.runtime.stores.ArtifactMetadataStore` on SQLAlchemy Core."""

    def __init__(self, database: Database) -> None:
        self._db = database
        self._rows = KeyedRows(
            database,
            artifacts,
            id_column="artifact_id",
            id_field="artifactId",
            resource=artifact_resource,
            decode=self._decode,
        )

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
        revision, created = await self._rows.put(
            tenant_id,
            artifact_id,
            expected_revision,
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
            tenant_id=stored_text(row.tenant_id, "tenant_id"),
            artifact_id=stored_text(row.artifact_id, "artifact_id"),
            revision=stored_int(row.revision, "revision"),
            media_type=stored_text(row.media_type, "media_type"),
            size=stored_int(row.size, "size"),
            sha256=require_sha256(row.sha256, "stored sha256"),
            uri=stored_opt_text(row.uri, "uri"),
            metadata=decode_json_object(row.metadata_json, "metadata_json"),
            created_at=stored_text(row.created_at, "created_at"),
            updated_at=stored_text(row.updated_at, "updated_at"),
        )

    async def get(self, *, tenant_id: str, artifact_id: str) -> ArtifactRecord | None:
        """See :meth:`ArtifactMetadataStore.get`."""
        return await self._rows.get(tenant_id, artifact_id)

    async def list_artifacts(
        self, *, tenant_id: str, limit: int | None = None
    ) -> list[ArtifactRecord]:
        """See :meth:`ArtifactMetadataStore.list_artifacts`."""
        require_key(tenant_id, "tenantId")
        cap = require_limit(limit)
        return await self._rows.list(
            tenant_id,
            equal={},
            order_by=(artifacts.c.updated_at.desc(), artifacts.c.artifact_id),
            limit=cap,
        )

    async def delete(
        self, *, tenant_id: str, artifact_id: str, expected_revision: int | None = None
    ) -> bool:
        """See :meth:`ArtifactMetadataStore.delete`."""
        return await self._rows.delete(tenant_id, artifact_id, expected_revision)

    async def referenced_sha256(self, *, sha256s: Sequence[str]) -> frozenset[str]:
        """See :meth:`ArtifactMetadataStore.referenced_sha256`."""
        wanted = sorted({require_sha256(value) for value in sha256s})
        if not wanted:
            return frozenset()

        def work(conn: Connection) -> frozenset[str]:
            found: set[str] = set()
            for start in range(0, len(wanted), _IN_BATCH):
                batch = wanted[start : start + _IN_BATCH]
                query = select(artifacts.c.sha256).where(artifacts.c.sha256.in_(batch)).distinct()
                found.update(str(value) for value in conn.execute(query).scalars())
            return frozenset(found)

        return await self._db.run_read(work)

    async def aclose(self) -> None:
        """No-op: the :class:`SqliteStorage` owns the engine."""


_IN_BATCH = 500


def _child_resource(tenant_id: str, child_id: str) -> str:
    return f"durable child {tenant_id}/{child_id}"


def _decode_child(
    tenant_id: object, record_json: object, revision: object, child_id: object, *checked: object
) -> DurableChildRow:
    """The row's record, checked against the columns that index it (fail closed).

    A record whose ``childId``, ``status``, lease or stamps differ from the row's columns was
    written behind the store's back: the queries by those columns (lists, recovery) would
    disagree with what a read returns.
    """
    decoded = child_columns(
        stored_text(tenant_id, "tenant_id"), decode_json_object(record_json, "record_json")
    )
    if decoded.revision != stored_int(revision, "revision"):
        raise StorageDataError(f"Durable child {decoded.child_id} revision does not match storage.")
    values = _child_values(decoded, with_record=False)
    if decoded.child_id != child_id or any(
        values[name] != stored for name, stored in zip(CHECKED_COLUMNS, checked, strict=True)
    ):
        raise StorageDataError(f"Durable child {decoded.child_id} does not match its row.")
    return decoded


def _child_values(row: DurableChildRow, *, with_record: bool = True) -> dict[str, Any]:
    values: dict[str, Any] = {
        "parent_run_id": row.parent_run_id,
        "revision": row.revision,
        "status": row.status,
        "lease_owner": row.lease_owner,
        "lease_expires_at": row.lease_expires_at,
        "heartbeat_at": row.heartbeat_at,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }
    if with_record:
        values["record_json"] = dump_json(row.record)
    return values


class SqlDurableChildStore:
    """:class:`~actoviq.runtime.stores.DurableChildStore` on its own indexed table.

    Create, get and compare-and-set are the hot path of background children: on a SQLite file
    they run pre-written SQL inline on the event loop when they cannot block (the session
    journal's discipline, ``_children_sql``); elsewhere one transaction in one step.
    """

    def __init__(self, database: Database) -> None:
        self._db = database
        self._rows = KeyedRows(
            database,
            durable_children,
            id_column="child_id",
            id_field="childId",
            resource=_child_resource,
            decode=self._decode,
        )

    async def create(self, *, tenant_id: str, record: JsonObject) -> DurableChildRow:
        """See :meth:`DurableChildStore.create`."""
        row = validate_child_create(require_key(tenant_id, "tenantId"), record)
        values = _child_values(row)

        def exists(actual: int | None) -> StorageConflictError:
            return StorageConflictError(
                _child_resource(tenant_id, row.child_id),
                expected_revision=None,
                actual_revision=actual,
                message=f'Durable child "{row.child_id}" already exists.',
            )

        def work(conn: Any) -> None:
            found = child_exists(conn, tenant_id, row.child_id)
            if found is not None:
                raise exists(stored_int(found, "revision"))
            child_insert(conn, tenant_id, row.child_id, values)

        try:
            await self._db.run_journal_write(work)
        except (IntegrityError, sqlite3.IntegrityError):
            raise exists(None) from None
        return row

    @staticmethod
    def _decode(row: Row[Any]) -> DurableChildRow:
        return _decode_child(
            row.tenant_id,
            row.record_json,
            row.revision,
            row.child_id,
            *(row._mapping[name] for name in CHECKED_COLUMNS),  # pyright: ignore[reportPrivateUsage]
        )

    async def get(self, *, tenant_id: str, child_id: str) -> DurableChildRow | None:
        """See :meth:`DurableChildStore.get`."""
        require_key(tenant_id, "tenantId")
        require_key(child_id, "childId")
        found = await self._db.run_journal_read(lambda conn: child_row(conn, tenant_id, child_id))
        return None if found is None else _decode_child(*found)

    async def compare_and_set(
        self, *, tenant_id: str, child_id: str, expected_revision: int, record: JsonObject
    ) -> bool:
        """See :meth:`DurableChildStore.compare_and_set`."""
        require_key(tenant_id, "tenantId")
        require_key(child_id, "childId")
        require_revision(expected_revision, "expectedRevision")
        values = _child_values(validate_cas_next(tenant_id, child_id, expected_revision, record))
        return await self._db.run_journal_write(
            lambda conn: child_cas(conn, tenant_id, child_id, expected_revision, values)
        )

    async def clock_ms(self) -> int:
        """See :class:`~actoviq.runtime.stores.StoreClock` (PostgreSQL: the server's clock)."""
        return await database_clock_ms(self._db)

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
        require_optional_key(status, "status")
        cap = require_limit(limit)
        return await self._rows.list(
            tenant_id,
            equal={"parent_run_id": parent_run_id, "status": status},
            order_by=(durable_children.c.created_at, durable_children.c.child_id),
            limit=cap,
        )

    async def aclose(self) -> None:
        """No-op: the :class:`SqliteStorage` owns the engine."""
