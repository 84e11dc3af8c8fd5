"""Validation rules every backend applies identically (so the conformance suite holds for all).

Public so that backends in other packages (``actoviq.storage.sqlite``) validate with the very same
code, in the same order and with the same messages as the in-memory stores: each ``validate_*``
helper checks one operation's arguments before any transaction opens and returns what it copied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar, cast

from actoviq.core import JsonObject, JsonValue, iso_now
from actoviq.runtime.stores.errors import StorageDataError
from actoviq.runtime.stores.records import (
    CHECKPOINT_STATUSES,
    DURABLE_CHILD_STATUSES,
    ArtifactRecord,
    CheckpointRecord,
    CheckpointStatus,
    DurableChildRow,
    MemoryRecord,
    NewSessionItem,
    SessionRecord,
)
from actoviq.runtime.stores.validation import (
    MAX_SAFE_INTEGER,
    require_json_object,
    require_json_value,
    require_key,
    require_limit,
    require_optional_key,
    require_revision,
    require_sha256,
)

__all__ = [
    "artifact_resource",
    "check_append_items",
    "checkpoint_resource",
    "child_columns",
    "memory_resource",
    "prepare_append",
    "require_new_items",
    "session_key",
    "session_resource",
    "validate_artifact",
    "validate_cas_next",
    "validate_checkpoint",
    "validate_child_create",
    "validate_compact",
    "validate_load",
    "validate_memory",
    "validate_session_create",
]

P = TypeVar("P")
_NEW_ITEM_TYPE: frozenset[type] = frozenset({NewSessionItem})


def session_resource(tenant_id: str, session_id: str) -> str:
    """The resource string of a session in errors."""
    return f"session {tenant_id}/{session_id}"


def checkpoint_resource(tenant_id: str, checkpoint_id: str) -> str:
    """The resource string of a checkpoint in errors."""
    return f"checkpoint {tenant_id}/{checkpoint_id}"


def memory_resource(tenant_id: str, memory_id: str) -> str:
    """The resource string of a memory entry in errors."""
    return f"memory {tenant_id}/{memory_id}"


def artifact_resource(tenant_id: str, artifact_id: str) -> str:
    """The resource string of an artifact in errors."""
    return f"artifact {tenant_id}/{artifact_id}"


def require_new_items(items: object) -> Sequence[NewSessionItem]:
    """``items`` if it is a sequence (list, tuple...) of :class:`NewSessionItem` records.

    A plain dict or tuple in place of a record, one bare record, a string or an iterator are
    refused before anything reads them (a record's fields are never guessed from positions).

    Raises:
        StorageDataError: ``items`` is not such a sequence (naming the first wrong entry).
    """
    kind = type(items)
    if kind is list or kind is tuple:
        if set(map(type, cast(Sequence[object], items))) <= _NEW_ITEM_TYPE:
            return cast(Sequence[NewSessionItem], items)  # the usual case, in C-level passes
    elif isinstance(items, NewSessionItem | str | bytes | bytearray | Mapping) or not isinstance(
        items, Sequence
    ):
        raise StorageDataError(
            f"items must be a list of NewSessionItem records, got {kind.__name__}",
            details={"field": "items"},
        )
    sequence = cast(Sequence[object], items)
    for index, item in enumerate(sequence):
        if not isinstance(item, NewSessionItem):
            raise StorageDataError(
                f"items[{index}] must be a NewSessionItem record, got {type(item).__name__}",
                details={"field": f"items[{index}]"},
            )
    return cast(Sequence[NewSessionItem], sequence)


def check_append_items(
    items: Sequence[NewSessionItem], stamp: str, payload: Callable[[JsonObject, str], P]
) -> list[tuple[str, str, P, str | None]]:
    """Validate the items of an append in one pass: ``(item_id, kind, payload, created_at)``.

    ``payload(value, "payload")`` checks (and copies or encodes) each payload; it must raise
    :class:`StorageDataError` with :func:`require_json_object`'s message on a bad one.

    Raises:
        StorageDataError: ``items`` is not a sequence of :class:`NewSessionItem` records, an
            empty ``stamp``, no items, an empty or duplicate id, an empty kind, a bad payload, or
            an empty ``created_at`` (checked in that order, item by item).
    """
    items = require_new_items(items)
    require_key(stamp, "updatedAt")
    if len(items) == 0:
        raise StorageDataError("append requires at least one session item")
    seen: set[str] = set()
    prepared: list[tuple[str, str, P, str | None]] = []
    for item in items:
        item_id = require_key(item.item_id, "itemId")
        if item_id in seen:
            raise StorageDataError(f"append contains duplicate itemId {item_id!r}")
        seen.add(item_id)
        prepared.append(
            (
                item_id,
                require_key(item.kind, "kind"),
                payload(item.payload, "payload"),
                require_optional_key(item.created_at, "createdAt"),
            )
        )
    return prepared


def prepare_append(items: Sequence[NewSessionItem], stamp: str) -> list[NewSessionItem]:
    """Validate and copy the items of an append (before any transaction opens)."""
    return [
        NewSessionItem(item_id=item_id, kind=kind, payload=body, created_at=created_at)
        for item_id, kind, body, created_at in check_append_items(items, stamp, require_json_object)
    ]


def session_key(tenant_id: str, session_id: str) -> tuple[str, str]:
    """The validated ``(tenant_id, session_id)`` of a session operation."""
    return require_key(tenant_id, "tenantId"), require_key(session_id, "sessionId")


def validate_session_create(
    tenant_id: str, session_id: str, metadata: JsonObject | None, created_at: str | None
) -> SessionRecord:
    """Validate a session create; returns the new record (revision 0, no items).

    Raises:
        StorageDataError: an empty id, metadata that is not a strict JSON object, or an empty
            ``created_at``.
    """
    session_key(tenant_id, session_id)
    meta = require_json_object({} if metadata is None else metadata, "metadata")
    stamp = require_key(created_at or iso_now(), "createdAt")
    return SessionRecord(
        tenant_id=tenant_id,
        session_id=session_id,
        revision=0,
        metadata=meta,
        created_at=stamp,
        updated_at=stamp,
        last_sequence=0,
    )


def validate_load(
    tenant_id: str, session_id: str, after_sequence: int | None, limit: int | None
) -> int | None:
    """Validate a session load; returns the item cap (None: unlimited).

    Raises:
        StorageDataError: an empty id, a bad ``after_sequence`` or a bad ``limit``.
    """
    session_key(tenant_id, session_id)
    if after_sequence is not None:
        require_revision(after_sequence, "afterSequence")
    return require_limit(limit)


def validate_compact(
    tenant_id: str,
    session_id: str,
    expected_revision: int,
    through_sequence: int,
    state: JsonObject,
    created_at: str | None,
) -> tuple[int, int, JsonObject, str]:
    """Validate a compaction; returns ``(expected_revision, through_sequence, state, stamp)``.

    Raises:
        StorageDataError: an empty id, a bad revision or sequence, a state that is not a strict
            JSON object, or an empty ``created_at``.
    """
    session_key(tenant_id, session_id)
    expected = require_revision(expected_revision, "expectedRevision")
    through = require_revision(through_sequence, "throughSequence")
    body = require_json_object(state, "state")
    stamp = require_key(created_at or iso_now(), "createdAt")
    return expected, through, body, stamp


def validate_memory(
    *,
    tenant_id: str,
    memory_id: str,
    namespace: str,
    expected_revision: int | None,
    value: JsonValue,
    metadata: JsonObject | None,
    updated_at: str | None,
) -> MemoryRecord:
    """Validate a memory write; returns a draft record (revision 0, created_at = updated_at)."""
    require_key(tenant_id, "tenantId")
    require_key(memory_id, "memoryId")
    require_key(namespace, "namespace")
    if expected_revision is not None:
        require_revision(expected_revision, "expectedRevision")
    body = require_json_value(value, "value")
    meta = require_json_object({} if metadata is None else metadata, "metadata")
    stamp = require_key(updated_at or iso_now(), "updatedAt")
    return MemoryRecord(
        tenant_id=tenant_id,
        memory_id=memory_id,
        namespace=namespace,
        revision=0,
        value=body,
        metadata=meta,
        created_at=stamp,
        updated_at=stamp,
    )


def validate_artifact(
    *,
    tenant_id: str,
    artifact_id: str,
    expected_revision: int | None,
    media_type: str,
    size: int,
    sha256: str,
    uri: str | None,
    metadata: JsonObject | None,
    updated_at: str | None,
) -> ArtifactRecord:
    """Validate an artifact-metadata write; returns a draft record (revision 0)."""
    require_key(tenant_id, "tenantId")
    require_key(artifact_id, "artifactId")
    require_key(media_type, "mediaType")
    require_revision(size, "size")
    require_sha256(sha256)
    require_optional_key(uri, "uri")
    if expected_revision is not None:
        require_revision(expected_revision, "expectedRevision")
    meta = require_json_object({} if metadata is None else metadata, "metadata")
    stamp = require_key(updated_at or iso_now(), "updatedAt")
    return ArtifactRecord(
        tenant_id=tenant_id,
        artifact_id=artifact_id,
        revision=0,
        media_type=media_type,
        size=size,
        sha256=sha256,
        uri=uri,
        metadata=meta,
        created_at=stamp,
        updated_at=stamp,
    )


def _check_trace(trace: JsonObject) -> None:
    require_key(trace.get("traceId"), "traceContext.traceId")
    require_key(trace.get("spanId"), "traceContext.spanId")


def validate_checkpoint(
    *,
    tenant_id: str,
    checkpoint_id: str,
    run_id: str,
    expected_revision: int | None,
    status: CheckpointStatus,
    state: JsonObject,
    session_id: str | None,
    interruption: JsonObject | None,
    pending_side_effects: Sequence[JsonObject],
    trace_context: JsonObject | None,
    updated_at: str,
    lease_owner: str | None = None,
    lease_expires_at: int | None = None,
) -> CheckpointRecord:
    """Validate a checkpoint write; returns a draft record (revision 0, created_at = updated_at)."""
    require_key(tenant_id, "tenantId")
    require_optional_key(lease_owner, "leaseOwner")
    if lease_expires_at is not None:
        require_revision(lease_expires_at, "leaseExpiresAt")
    if (lease_owner is None) != (lease_expires_at is None):
        raise StorageDataError("leaseOwner and leaseExpiresAt are given together or not at all")
    require_key(checkpoint_id, "checkpointId")
    require_key(run_id, "runId")
    require_optional_key(session_id, "sessionId")
    if expected_revision is not None:
        require_revision(expected_revision, "expectedRevision")
    if status not in CHECKPOINT_STATUSES:
        raise StorageDataError(f"status must be one of {sorted(CHECKPOINT_STATUSES)}")
    body = require_json_object(state, "state")
    stop = None if interruption is None else require_json_object(interruption, "interruption")
    if stop is not None:
        require_key(stop.get("reason"), "interruption.reason")
        if type(stop.get("resumable")) is not bool:
            raise StorageDataError("interruption.resumable must be a boolean")
    effects: list[JsonObject] = []
    for effect in pending_side_effects:
        entry = require_json_object(effect, "pendingSideEffects")
        require_key(entry.get("sideEffectId"), "pendingSideEffect.sideEffectId")
        require_key(entry.get("kind"), "pendingSideEffect.kind")
        effects.append(entry)
    trace = None if trace_context is None else require_json_object(trace_context, "traceContext")
    if trace is not None:
        _check_trace(trace)
    stamp = require_key(updated_at, "updatedAt")
    return CheckpointRecord(
        tenant_id=tenant_id,
        checkpoint_id=checkpoint_id,
        run_id=run_id,
        session_id=session_id,
        revision=0,
        status=status,
        state=body,
        interruption=stop,
        pending_side_effects=tuple(effects),
        trace_context=trace,
        created_at=stamp,
        updated_at=stamp,
        lease_owner=lease_owner,
        lease_expires_at=lease_expires_at,
    )


def _optional_epoch(record: JsonObject, field: str) -> int | None:
    value = record.get(field)
    if value is None:
        return None
    if type(value) is not int or value < 0 or value > MAX_SAFE_INTEGER:
        raise StorageDataError(f"{field} must be a non-negative safe integer (epoch ms)")
    return value


def child_columns(tenant_id: str, record: object) -> DurableChildRow:
    """Read the indexed columns out of a durable child record (validated, copied).

    Raises:
        StorageDataError: the record is not a JSON object with ``childId``, ``revision``,
            ``status``, ``createdAt`` and ``updatedAt``.
    """
    body = require_json_object(record, "record")
    child_id = require_key(body.get("childId"), "childId")
    revision = require_revision(body.get("revision"), "revision")
    status = require_key(body.get("status"), "status")
    if status not in DURABLE_CHILD_STATUSES:
        raise StorageDataError(f"status must be one of {sorted(DURABLE_CHILD_STATUSES)}")
    parent = body.get("parent")
    parent_run_id: str | None = None
    if type(parent) is dict:
        run_id = cast(JsonObject, parent).get("runId")
        parent_run_id = (
            require_key(run_id, "parent.runId") if type(run_id) is str and run_id else None
        )
    owner = body.get("leaseOwner")
    return DurableChildRow(
        tenant_id=tenant_id,
        child_id=child_id,
        parent_run_id=parent_run_id,
        revision=revision,
        status=status,
        lease_owner=require_optional_key(owner, "leaseOwner"),
        lease_expires_at=_optional_epoch(body, "leaseExpiresAt"),
        heartbeat_at=_optional_epoch(body, "heartbeatAt"),
        created_at=require_key(body.get("createdAt"), "createdAt"),
        updated_at=require_key(body.get("updatedAt"), "updatedAt"),
        record=body,
    )


def validate_child_create(tenant_id: str, record: JsonObject) -> DurableChildRow:
    """Validate a new durable child record (its revision must be 0)."""
    row = child_columns(tenant_id, record)
    if row.revision != 0:
        raise StorageDataError("A new durable child record must have revision 0.")
    return row


def validate_cas_next(
    tenant_id: str, child_id: str, expected_revision: int, record: JsonObject
) -> DurableChildRow:
    """Validate the next version of a durable child record for compare-and-set."""
    row = child_columns(tenant_id, record)
    if row.child_id != child_id or row.revision != expected_revision + 1:
        raise StorageDataError("Durable child CAS must advance exactly one revision.")
    return row
