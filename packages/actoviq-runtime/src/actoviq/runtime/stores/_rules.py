"""Validation rules every backend applies identically (so the conformance suite holds for all)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from actoviq.core import JsonObject
from actoviq.runtime.stores.errors import StorageDataError
from actoviq.runtime.stores.records import (
    CHECKPOINT_STATUSES,
    DURABLE_CHILD_STATUSES,
    CheckpointRecord,
    CheckpointStatus,
    DurableChildRow,
    NewSessionItem,
)
from actoviq.runtime.stores.validation import (
    MAX_SAFE_INTEGER,
    require_json_object,
    require_key,
    require_optional_key,
    require_revision,
)

__all__ = [
    "artifact_resource",
    "checkpoint_resource",
    "child_columns",
    "memory_resource",
    "prepare_append",
    "session_resource",
    "validate_cas_next",
    "validate_checkpoint",
    "validate_child_create",
]


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


def prepare_append(items: Sequence[NewSessionItem], stamp: str) -> list[NewSessionItem]:
    """Validate and copy the items of an append (before any transaction opens)."""
    require_key(stamp, "updatedAt")
    if len(items) == 0:
        raise StorageDataError("append requires at least one session item")
    seen: set[str] = set()
    prepared: list[NewSessionItem] = []
    for item in items:
        item_id = require_key(item.item_id, "itemId")
        if item_id in seen:
            raise StorageDataError(f"append contains duplicate itemId {item_id!r}")
        seen.add(item_id)
        prepared.append(
            NewSessionItem(
                item_id=item_id,
                kind=require_key(item.kind, "kind"),
                payload=require_json_object(item.payload, "payload"),
                created_at=require_optional_key(item.created_at, "createdAt"),
            )
        )
    return prepared


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
) -> CheckpointRecord:
    """Validate a checkpoint write; returns a draft record (revision 0, created_at = updated_at)."""
    require_key(tenant_id, "tenantId")
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
        parent_run_id = run_id if type(run_id) is str and run_id else None
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
