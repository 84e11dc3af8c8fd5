"""Rules shared by the store engine's modules: policy checks, typed outcomes, reconciliation."""

from __future__ import annotations

from typing import Any, Final

from actoviq.core import (
    UNSET,
    JsonObject,
    JsonValue,
    JsonValueError,
    RunResult,
    Unset,
    assert_json_value,
    iso_now,
)
from actoviq.events import register_event_type
from actoviq.orchestration.background.errors import (
    DurableChildCancelledError,
    DurableChildFailedError,
    DurableChildInterruptedError,
    DurableChildNotReadyError,
    DurableChildReconciliationError,
    DurableChildStateError,
)
from actoviq.orchestration.background.records import (
    DurableChildRecord,
    ReconcileResolution,
    ReconciliationEntry,
)
from actoviq.orchestration.errors import ChildPolicyError, OrchestrationConfigError
from actoviq.orchestration.outcomes import ChildError, ChildFailurePolicy
from actoviq.runtime import ToolEffect

__all__ = [
    "BACKGROUND_EVENT_TYPES",
    "SETTLED_STATUSES",
    "cancel_error",
    "check_durable_policy",
    "interrupted_error",
    "message_of",
    "reconciled_record",
    "result_of",
]

BACKGROUND_EVENT_TYPES: Final = (
    "orchestration.background.spawned",
    "orchestration.background.cancelled",
    "orchestration.background.reconciliation_required",
    "orchestration.background.reconciled",
)
for _name in BACKGROUND_EVENT_TYPES:
    register_event_type(
        _name, description="Actoviq durable background child (actoviq.orchestration.background)."
    )

SETTLED_STATUSES: Final = frozenset(
    {"completed", "failed", "cancelled", "interrupted", "needs_reconciliation"}
)
"""Statuses ``wait()`` returns on: nothing more happens without a decision."""


def check_durable_policy(
    policy: ChildFailurePolicy, effect: ToolEffect, idempotency_key: str | None
) -> None:
    """A durable retry only replays what is safe to replay (checked before anything persists).

    Raises:
        ChildPolicyError: a retried side-effect child, or a keyless idempotent write.
    """
    if policy.mode != "retry-safe":
        return
    if effect == "side-effect":
        raise ChildPolicyError(
            "Durable retry-safe execution cannot replay a side-effect child.",
            details={"effect": effect},
        )
    if effect == "idempotent-write" and not (idempotency_key and idempotency_key.strip()):
        raise ChildPolicyError(
            "Durable idempotent-write retry requires an idempotencyKey.",
            details={"effect": effect},
        )


def message_of(record: DurableChildRecord) -> str | None:
    """The stored error's message."""
    return record.error.message if record.error is not None else None


def cancel_error(reason: str) -> ChildError:
    """What a cancelled record stores as its error."""
    return ChildError(name="AbortError", message=reason, code="CANCELLED")


def interrupted_error(record: DurableChildRecord) -> DurableChildInterruptedError:
    """The error of an interrupted child's ``result()`` (names its open interruptions)."""
    ids = [i.id for i in record.interruptions]
    return DurableChildInterruptedError(
        f'Durable child "{record.child_id}" is interrupted: call resume() with decisions for '
        f"{ids} before result().",
        child_id=record.child_id,
        details={"interruptions": ids},
    )


def result_of(record: DurableChildRecord) -> RunResult[Any]:
    """The result a record holds, or the typed error its status stands for."""
    child_id = record.child_id
    status = record.status
    if status == "completed":
        result = record.run_result()
        if result is not None:
            return result
    if status == "failed":
        raise DurableChildFailedError(
            f'Durable child "{child_id}" failed: {message_of(record) or "unknown error"}',
            child_id=child_id,
            details={"error": None if record.error is None else record.error.to_json()},
        )
    if status == "cancelled":
        raise DurableChildCancelledError(child_id, reason=message_of(record))
    if status == "interrupted":
        raise interrupted_error(record)
    if status == "needs_reconciliation":
        raise DurableChildReconciliationError(child_id)
    raise DurableChildNotReadyError(
        f'Durable child "{child_id}" is {status}; call resume() before result().',
        child_id=child_id,
        details={"status": status},
    )


def _reconciled_result(record: DurableChildRecord, output: JsonValue, stamp: str) -> JsonObject:
    return {
        "runId": record.child_id,
        "agentId": record.agent_id,
        "status": "completed",
        "output": output,
        "items": [],
        "usage": {"totalTokens": 0, "costUsd": 0},
        "startedAt": record.created_at,
        "completedAt": stamp,
        "metadata": {"reconciled": True},
    }


def reconciled_record(
    record: DurableChildRecord,
    resolution: ReconcileResolution,
    *,
    actor: str,
    now_ms: int,
    note: str | None = None,
    output: JsonValue | Unset = UNSET,
    error: str | None = None,
) -> DurableChildRecord:
    """The record after a human's decision (one revision later, with an audit entry).

    Allowed for ``needs_reconciliation`` children and ``running`` ones whose lease expired.

    Raises:
        OrchestrationConfigError: a blank ``actor``, an unknown resolution, a non-JSON output.
        DurableChildStateError: the child is in another status, or its lease is live.
    """
    if not isinstance(actor, str) or not actor.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise OrchestrationConfigError(
            "reconcile() needs the actor who decided.", details={"field": "actor"}
        )
    if resolution not in ("completed", "failed", "requeue"):
        raise OrchestrationConfigError(
            f'reconcile() resolution must be "completed", "failed" or "requeue", got '
            f"{resolution!r}.",
            details={"field": "resolution"},
        )
    value: JsonValue = None if isinstance(output, Unset) else output
    try:
        assert_json_value(value, "output")
    except JsonValueError as bad:
        raise OrchestrationConfigError(
            f"A reconciled output must be strict JSON: {bad}", details={"field": "output"}
        ) from bad
    stale = record.status == "running" and (
        record.lease_expires_at is None or record.lease_expires_at <= now_ms
    )
    if record.status != "needs_reconciliation" and not stale:
        hint = " (its lease is live)" if record.status == "running" else ""
        raise DurableChildStateError(
            f'Cannot reconcile durable child "{record.child_id}" in status {record.status}{hint}.',
            child_id=record.child_id,
            details={"status": record.status},
        )
    stamp = iso_now()
    entry = ReconciliationEntry(
        resolution=resolution,
        actor=actor,
        at=stamp,
        previous_status=record.status,
        previous_revision=record.revision,
        previous_lease_owner=record.lease_owner,
        note=note,
    )
    changes: dict[str, Any] = {
        "updated_at": stamp,
        "lease_owner": None,
        "lease_expires_at": None,
        "heartbeat_at": None,
        "reconciliations": (*record.reconciliations, entry),
    }
    if resolution == "completed":
        changes.update(
            status="completed", error=None, result=_reconciled_result(record, value, stamp)
        )
    elif resolution == "failed":
        changes.update(
            status="failed",
            error=ChildError(
                name="ReconciledFailure",
                message=error or note or "Reconciled as failed.",
                code="RECONCILED_FAILED",
            ),
        )
    else:
        changes.update(status="queued", error=None)
    return record.next(**changes)
