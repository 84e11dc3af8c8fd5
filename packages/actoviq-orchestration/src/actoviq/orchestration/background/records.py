"""``DurableChildRecord``: a background child as it is persisted (spec 04 §1.9.1, D2).

The JSON keeps the reference ``DurableChildRecord`` (schemaVersion 1, camelCase keys), so a record
written here is readable by the reference and the reverse. Python adds optional keys the
reference does not know (absent when unused): ``heartbeatAt``, the statuses ``interrupted`` and
``needs_reconciliation``, ``interruptions`` and ``runState`` (an interrupted child's pending
decisions and the run state to resume), ``sessionMode``, ``budgetLedger`` (the durable ledger the
child's tree shares), ``cancelWithParent`` and ``reconciliations`` (the audit trail of
``reconcile()``). Keys this version does not know are kept verbatim (``extra``).

Example:
    >>> record = DurableChildRecord.from_json({
    ...     "schemaVersion": 1, "childId": "c1", "revision": 0, "parent": {"runId": "p"},
    ...     "agentId": "worker", "input": [{"type": "text", "role": "user", "text": "go"}],
    ...     "metadata": {}, "effect": "read", "failurePolicy": {"mode": "fail-fast"},
    ...     "status": "queued", "attempts": 0,
    ...     "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z"})
    >>> (record.status, record.parent_run_id, record.replay_safe)
    ('queued', 'p', True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, Self, TypeAlias, cast

import attrs

from actoviq.core import (
    MAX_WIRE_DEPTH,
    UNSET,
    CanonicalItem,
    Interruption,
    JsonObject,
    JsonValue,
    JsonValueError,
    RunResult,
    TextItem,
    Unset,
    assert_json_object,
    assert_json_value,
    from_json,
    items_from_json,
    items_to_json,
    to_json,
)
from actoviq.orchestration.errors import OrchestrationConfigError
from actoviq.orchestration.outcomes import ChildError, ChildFailurePolicy
from actoviq.runtime import AgentInput, ToolEffect

__all__ = [
    "ACTIVE_STATUSES",
    "DURABLE_CHILD_SCHEMA_VERSION",
    "TERMINAL_STATUSES",
    "DurableChildRecord",
    "DurableChildStatus",
    "LedgerRef",
    "ReconcileResolution",
    "ReconciliationEntry",
    "normalize_input",
    "policy_from_json",
    "stored_result_json",
]

DURABLE_CHILD_SCHEMA_VERSION: Final = 1
"""The version of the durable child record this package writes."""

DurableChildStatus: TypeAlias = Literal[
    "queued",
    "running",
    "interrupted",
    "completed",
    "failed",
    "cancelled",
    "needs_reconciliation",
]
"""The status of a durable background child."""
ReconcileResolution: TypeAlias = Literal["completed", "failed", "requeue"]
"""How an operator resolves a child that needs reconciliation."""

TERMINAL_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})
"""Statuses a record never leaves (``cancel`` does not overwrite ``failed``)."""
ACTIVE_STATUSES: Final = frozenset({"queued", "running", "interrupted", "needs_reconciliation"})

_STATUSES: Final = TERMINAL_STATUSES | ACTIVE_STATUSES
_EFFECTS: Final = frozenset({"read", "idempotent-write", "side-effect"})
_KNOWN_KEYS: Final = frozenset(
    {
        "schemaVersion",
        "childId",
        "revision",
        "parent",
        "agentId",
        "input",
        "context",
        "metadata",
        "effect",
        "idempotencyKey",
        "failurePolicy",
        "status",
        "attempts",
        "createdAt",
        "updatedAt",
        "leaseOwner",
        "leaseExpiresAt",
        "heartbeatAt",
        "result",
        "error",
        "interruptions",
        "runState",
        "sessionMode",
        "budgetLedger",
        "cancelWithParent",
        "reconciliations",
    }
)
_RESULT_KEYS: Final = (
    "runId",
    "agentId",
    "status",
    "output",
    "items",
    "usage",
    "startedAt",
    "completedAt",
    "sessionId",
    "metadata",
)


def _invalid(message: str) -> OrchestrationConfigError:
    return OrchestrationConfigError(message, details={"record": "durableChild"})


def normalize_input(value: AgentInput) -> tuple[CanonicalItem, ...]:
    """``str`` -> one user text item; one item -> ``(item,)``; a sequence -> a tuple."""
    if isinstance(value, str):
        return (TextItem(role="user", text=value),)
    if isinstance(value, Sequence):
        return tuple(value)
    return (value,)


def policy_from_json(data: object) -> ChildFailurePolicy:
    """Read ``{mode, maxAttempts?}`` (absent: ``fail-fast``)."""
    if data is None:
        return ChildFailurePolicy.fail_fast()
    if not isinstance(data, Mapping):
        raise _invalid("failurePolicy must be a JSON object.")
    mapping = cast(Mapping[str, Any], data)
    return ChildFailurePolicy(
        mode=mapping.get("mode", "fail-fast"), max_attempts=mapping.get("maxAttempts")
    )


def stored_result_json(result: RunResult[Any]) -> JsonObject:
    """The reference ``StoredRunResult`` of a run result (its output must be strict JSON).

    Raises:
        OrchestrationConfigError: the output is not strict JSON.
    """
    data = cast(dict[str, Any], to_json(result))
    try:
        assert_json_value(data.get("output"), "result.output")
    except JsonValueError as error:
        raise _invalid(f"A durable child's output must be strict JSON: {error}") from error
    return {key: data[key] for key in _RESULT_KEYS if key in data and data[key] is not None}


@attrs.frozen(kw_only=True, slots=True)
class LedgerRef:
    """Which durable budget ledger a child's tree shares: ``{tenantId, ledgerId}``."""

    tenant_id: str
    ledger_id: str

    def to_json(self) -> JsonObject:
        """``{tenantId, ledgerId}``."""
        return {"tenantId": self.tenant_id, "ledgerId": self.ledger_id}

    @classmethod
    def from_json(cls, data: object) -> Self:
        """Read :meth:`to_json` output."""
        if not isinstance(data, Mapping):
            raise _invalid("budgetLedger must be a JSON object.")
        mapping = cast(Mapping[str, Any], data)
        tenant, ledger = mapping.get("tenantId"), mapping.get("ledgerId")
        if not isinstance(tenant, str) or not isinstance(ledger, str) or not tenant or not ledger:
            raise _invalid("budgetLedger needs a tenantId and a ledgerId.")
        return cls(tenant_id=tenant, ledger_id=ledger)


@attrs.frozen(kw_only=True, slots=True)
class ReconciliationEntry:
    """One ``reconcile()`` decision, kept on the record for audit."""

    resolution: ReconcileResolution
    actor: str
    at: str
    previous_status: str
    previous_revision: int
    previous_lease_owner: str | None = None
    note: str | None = None

    def to_json(self) -> JsonObject:
        """``{resolution, actor, at, previousStatus, previousRevision}`` (+ lease owner, note)."""
        data: JsonObject = {
            "resolution": self.resolution,
            "actor": self.actor,
            "at": self.at,
            "previousStatus": self.previous_status,
            "previousRevision": self.previous_revision,
        }
        if self.previous_lease_owner is not None:
            data["previousLeaseOwner"] = self.previous_lease_owner
        if self.note is not None:
            data["note"] = self.note
        return data

    @classmethod
    def from_json(cls, data: object) -> Self:
        """Read :meth:`to_json` output."""
        if not isinstance(data, Mapping):
            raise _invalid("A reconciliation entry must be a JSON object.")
        m = cast(Mapping[str, Any], data)
        return cls(
            resolution=m["resolution"],
            actor=m["actor"],
            at=m["at"],
            previous_status=m["previousStatus"],
            previous_revision=m["previousRevision"],
            previous_lease_owner=m.get("previousLeaseOwner"),
            note=m.get("note"),
        )


def _opt_int(mapping: Mapping[str, Any], key: str) -> int | None:
    value = mapping.get(key)
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise _invalid(f"{key} must be a non-negative integer.")
    return value


@attrs.frozen(kw_only=True, slots=True, eq=False)
class DurableChildRecord:
    """A durable background child (see the module doc for the JSON).

    Attributes:
        child_id: the child's id (also its run id).
        revision: 0 on create, +1 on every compare-and-set: the fencing token.
        parent: the parent's ``PersistedScope`` JSON.
        agent_id: the agent the child runs (resolved by id in whichever worker runs it).
        input: the child's input items.
        context: the run context (strict JSON), or UNSET.
        metadata: caller metadata.
        effect: ``read``, ``idempotent-write`` or ``side-effect`` (what a crash may have done).
        idempotency_key: the key of an idempotent write.
        failure_policy: how a failed attempt is handled.
        status: see :data:`DurableChildStatus`.
        attempts: how many times a worker took the lease and started the run (a takeover
            the runtime refuses because a dead worker's run claim still holds is not
            counted).
        lease_owner / lease_expires_at / heartbeat_at: the running worker's lease (epoch ms).
        result: the completed run (``StoredRunResult`` JSON).
        error: why it failed or was cancelled.
        interruptions / run_state: what an ``interrupted`` child waits for, and its run state.
        session_mode: the child's session mode (None: the runner's default).
        budget_ledger: the durable ledger of the child's tree.
        cancel_with_parent: cancel the child when its live parent scope is cancelled.
        reconciliations: the audit trail of ``reconcile()``.
        extra: keys of the stored JSON this version does not know (kept verbatim).
    """

    child_id: str
    revision: int
    parent: JsonObject
    agent_id: str
    input: tuple[CanonicalItem, ...]
    context: JsonValue | Unset = UNSET
    metadata: JsonObject = attrs.field(factory=lambda: cast(JsonObject, {}))
    effect: ToolEffect = "side-effect"
    idempotency_key: str | None = None
    failure_policy: ChildFailurePolicy = attrs.field(factory=ChildFailurePolicy.fail_fast)
    status: DurableChildStatus
    attempts: int = 0
    created_at: str
    updated_at: str
    lease_owner: str | None = None
    lease_expires_at: int | None = None
    heartbeat_at: int | None = None
    result: JsonObject | None = None
    error: ChildError | None = None
    interruptions: tuple[Interruption, ...] = ()
    run_state: JsonObject | None = None
    session_mode: str | None = None
    budget_ledger: LedgerRef | None = None
    cancel_with_parent: bool = True
    reconciliations: tuple[ReconciliationEntry, ...] = ()
    extra: JsonObject = attrs.field(factory=lambda: cast(JsonObject, {}))

    @property
    def parent_run_id(self) -> str | None:
        """The parent scope's run id."""
        run_id = self.parent.get("runId")
        return run_id if isinstance(run_id, str) else None

    @property
    def terminal(self) -> bool:
        """``completed``, ``failed`` or ``cancelled``: the record never changes again."""
        return self.status in TERMINAL_STATUSES

    @property
    def replay_safe(self) -> bool:
        """A stale run may be replayed: a ``read`` child, or a keyed ``idempotent-write``."""
        if self.effect == "read":
            return True
        return self.effect == "idempotent-write" and bool(
            self.idempotency_key and self.idempotency_key.strip()
        )

    def run_result(self) -> RunResult[Any] | None:
        """The stored result as a :class:`~actoviq.core.RunResult` (None until completed)."""
        if self.result is None:
            return None
        return from_json(RunResult[Any], self.result)

    def next(self, **changes: Any) -> DurableChildRecord:
        """The record one revision later with ``changes`` applied."""
        return attrs.evolve(self, revision=self.revision + 1, **changes)

    def to_json(self) -> JsonObject:
        """The persisted JSON (reference keys, then the Python additions when set)."""
        data: JsonObject = {
            **self.extra,
            "schemaVersion": DURABLE_CHILD_SCHEMA_VERSION,
            "childId": self.child_id,
            "revision": self.revision,
            "parent": self.parent,
            "agentId": self.agent_id,
            "input": cast(JsonValue, items_to_json(self.input)),
        }
        if not isinstance(self.context, Unset):
            data["context"] = self.context
        data["metadata"] = self.metadata
        data["effect"] = self.effect
        if self.idempotency_key is not None:
            data["idempotencyKey"] = self.idempotency_key
        data["failurePolicy"] = self.failure_policy.to_json()
        data["status"] = self.status
        data["attempts"] = self.attempts
        data["createdAt"] = self.created_at
        data["updatedAt"] = self.updated_at
        optional: dict[str, JsonValue | None] = {
            "leaseOwner": self.lease_owner,
            "leaseExpiresAt": self.lease_expires_at,
            "heartbeatAt": self.heartbeat_at,
            "result": self.result,
            "error": None if self.error is None else self.error.to_json(),
            "interruptions": [cast(JsonObject, to_json(i)) for i in self.interruptions] or None,
            "runState": self.run_state,
            "sessionMode": self.session_mode,
            "budgetLedger": None if self.budget_ledger is None else self.budget_ledger.to_json(),
            "cancelWithParent": None if self.cancel_with_parent else False,
            "reconciliations": [r.to_json() for r in self.reconciliations] or None,
        }
        for key, value in optional.items():
            if value is not None:
                data[key] = value
        return data

    @classmethod
    def from_json(cls, data: object) -> Self:
        """Read a stored record (this version's or the reference's).

        Raises:
            OrchestrationConfigError: not a durable child record (missing or invalid fields).
        """
        if not isinstance(data, Mapping):
            raise _invalid("A durable child record must be a JSON object.")
        m = cast(Mapping[str, Any], data)
        version = m.get("schemaVersion")
        if version != DURABLE_CHILD_SCHEMA_VERSION:
            raise _invalid(f"Unsupported durable child schemaVersion {version!r}.")
        child_id, agent_id, status = m.get("childId"), m.get("agentId"), m.get("status")
        if not isinstance(child_id, str) or not child_id:
            raise _invalid("A durable child record needs a childId.")
        if not isinstance(agent_id, str) or not agent_id:
            raise _invalid(f'Durable child "{child_id}" needs an agentId.')
        if status not in _STATUSES:
            raise _invalid(f'Durable child "{child_id}" has an unknown status {status!r}.')
        effect = m.get("effect", "side-effect")
        if effect not in _EFFECTS:
            raise _invalid(f'Durable child "{child_id}" has an unknown effect {effect!r}.')
        revision, attempts = m.get("revision"), m.get("attempts", 0)
        if type(revision) is not int or revision < 0 or type(attempts) is not int or attempts < 0:
            raise _invalid(f'Durable child "{child_id}" has an invalid revision or attempts.')
        raw_input = m.get("input")
        if not isinstance(raw_input, list):
            raise _invalid(f'Durable child "{child_id}" input must be a list of items.')
        error = m.get("error")
        interruptions = cast(list[Any], m.get("interruptions") or [])
        return cls(
            child_id=child_id,
            revision=revision,
            parent=assert_json_object(m.get("parent"), "parent"),
            agent_id=agent_id,
            input=tuple(items_from_json(cast(list[Any], raw_input))),
            context=cast(JsonValue, m["context"]) if "context" in m else UNSET,
            metadata=assert_json_object(m.get("metadata") or {}, "metadata"),
            effect=effect,
            idempotency_key=m.get("idempotencyKey"),
            failure_policy=policy_from_json(m.get("failurePolicy")),
            status=status,
            attempts=attempts,
            created_at=m["createdAt"],
            updated_at=m["updatedAt"],
            lease_owner=m.get("leaseOwner"),
            lease_expires_at=_opt_int(m, "leaseExpiresAt"),
            heartbeat_at=_opt_int(m, "heartbeatAt"),
            # The result and the run state carry canonical items: the wire depth applies (D2).
            result=None
            if m.get("result") is None
            else assert_json_object(m["result"], "result", max_depth=MAX_WIRE_DEPTH),
            error=None
            if not isinstance(error, Mapping)
            else ChildError(
                name=str(cast(Mapping[str, Any], error).get("name", "Error")),
                message=str(cast(Mapping[str, Any], error).get("message", "")),
                code=cast(Mapping[str, Any], error).get("code"),
            ),
            interruptions=tuple(from_json(Interruption, i) for i in interruptions),
            run_state=None
            if m.get("runState") is None
            else assert_json_object(m["runState"], "runState", max_depth=MAX_WIRE_DEPTH),
            session_mode=m.get("sessionMode"),
            budget_ledger=None
            if m.get("budgetLedger") is None
            else LedgerRef.from_json(m["budgetLedger"]),
            cancel_with_parent=m.get("cancelWithParent", True) is not False,
            reconciliations=tuple(
                ReconciliationEntry.from_json(r)
                for r in cast(list[Any], m.get("reconciliations") or [])
            ),
            extra={k: cast(JsonValue, v) for k, v in m.items() if k not in _KNOWN_KEYS},
        )
