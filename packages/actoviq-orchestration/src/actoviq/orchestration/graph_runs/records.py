"""Durable graph-run records (persisted JSON, camelCase, D2).

A :class:`WorkflowRunRecord` is the run: its graph (id and structure digest), input, status,
lease and, once settled, the order and every node's status. A :class:`WorkflowNodeRecord` is one
execution of one node at one loop iteration: status, attempts, output or error, and the audit of
a reconciliation. Keys this version does not know are kept (``extra``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, Self, TypeAlias, cast

import attrs

from actoviq.core import UNSET, JsonObject, JsonValue, Unset
from actoviq.orchestration.errors import OrchestrationConfigError
from actoviq.orchestration.outcomes import ChildError

__all__ = [
    "WORKFLOW_RUN_SCHEMA_VERSION",
    "NodeStatus",
    "RunStatus",
    "WorkflowNodeRecord",
    "WorkflowRunRecord",
]

WORKFLOW_RUN_SCHEMA_VERSION: Final = 1
"""The version of the durable workflow-run record this package writes."""
RunStatus: TypeAlias = Literal["running", "completed", "failed", "cancelled"]
NodeStatus: TypeAlias = Literal["running", "completed", "failed", "skipped", "cancelled"]


def _error_json(error: ChildError | None) -> JsonObject | None:
    return None if error is None else error.to_json()


def _error(data: object) -> ChildError | None:
    if not isinstance(data, Mapping):
        return None
    m = cast(Mapping[str, Any], data)
    return ChildError(
        name=str(m.get("name", "Error")), message=str(m.get("message", "")), code=m.get("code")
    )


def _mapping(data: object, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise OrchestrationConfigError(f"A workflow {what} record must be a JSON object.")
    m = cast(Mapping[str, Any], data)
    if m.get("schemaVersion") != WORKFLOW_RUN_SCHEMA_VERSION:
        raise OrchestrationConfigError(
            f"Unsupported workflow {what} schemaVersion {m.get('schemaVersion')!r}."
        )
    return m


_RUN_KEYS: Final = frozenset(
    {
        "schemaVersion", "runId", "graphId", "graphDigest", "revision", "status", "input",
        "metadata", "attempts", "leaseOwner", "leaseExpiresAt", "heartbeatAt", "createdAt",
        "updatedAt", "order", "statuses", "error", "needsReconciliation",
    }
)  # fmt: skip
_NODE_KEYS: Final = frozenset(
    {
        "schemaVersion", "runId", "nodeId", "iteration", "revision", "status", "effect",
        "attempts", "output", "error", "startedAt", "completedAt", "createdAt", "updatedAt",
        "final", "reconciliation",
    }
)  # fmt: skip


@attrs.frozen(kw_only=True, slots=True, eq=False)
class WorkflowRunRecord:
    """One durable graph run.

    Attributes:
        run_id / graph_id / graph_digest: which run of which graph (structure digest).
        revision: 0 on create, +1 on every compare-and-set (the fencing token).
        status: ``running``, ``completed``, ``failed`` or ``cancelled``.
        input: the graph input (strict JSON).
        attempts: how many times a worker took the run.
        lease_owner / lease_expires_at / heartbeat_at: the executing worker's lease.
        order / statuses: the graph order and every node's status, once settled.
        error: why it failed or was cancelled.
        needs_reconciliation: ``[{nodeId, iteration}]`` of nodes that may have committed.
    """

    run_id: str
    graph_id: str
    graph_digest: str
    revision: int = 0
    status: RunStatus = "running"
    input: JsonValue = None
    metadata: JsonObject = attrs.field(factory=lambda: cast(JsonObject, {}))
    attempts: int = 0
    lease_owner: str | None = None
    lease_expires_at: int | None = None
    heartbeat_at: int | None = None
    created_at: str
    updated_at: str
    order: tuple[str, ...] = ()
    statuses: Mapping[str, str] = attrs.field(factory=lambda: cast(Mapping[str, str], {}))
    error: ChildError | None = None
    needs_reconciliation: tuple[tuple[str, int], ...] = ()
    extra: JsonObject = attrs.field(factory=lambda: cast(JsonObject, {}))

    def next(self, **changes: Any) -> WorkflowRunRecord:
        """The record one revision later."""
        return attrs.evolve(self, revision=self.revision + 1, **changes)

    def to_json(self) -> JsonObject:
        """The persisted JSON."""
        data: JsonObject = {
            **self.extra,
            "schemaVersion": WORKFLOW_RUN_SCHEMA_VERSION,
            "runId": self.run_id,
            "graphId": self.graph_id,
            "graphDigest": self.graph_digest,
            "revision": self.revision,
            "status": self.status,
            "input": self.input,
            "metadata": self.metadata,
            "attempts": self.attempts,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }
        optional: dict[str, JsonValue | None] = {
            "leaseOwner": self.lease_owner,
            "leaseExpiresAt": self.lease_expires_at,
            "heartbeatAt": self.heartbeat_at,
            "order": list(self.order) or None,
            "statuses": cast(JsonObject, dict(self.statuses)) or None,
            "error": _error_json(self.error),
            "needsReconciliation": [
                {"nodeId": n, "iteration": i} for n, i in self.needs_reconciliation
            ]
            or None,
        }
        data.update({k: v for k, v in optional.items() if v is not None})
        return data

    @classmethod
    def from_json(cls, data: object) -> Self:
        """Read a stored run record.

        Raises:
            OrchestrationConfigError: not a workflow run record.
        """
        m = _mapping(data, "run")
        pending = cast(list[Mapping[str, Any]], m.get("needsReconciliation") or [])
        return cls(
            run_id=m["runId"],
            graph_id=m["graphId"],
            graph_digest=m.get("graphDigest", ""),
            revision=m["revision"],
            status=m["status"],
            input=cast(JsonValue, m.get("input")),
            metadata=dict(m.get("metadata") or {}),
            attempts=m.get("attempts", 0),
            lease_owner=m.get("leaseOwner"),
            lease_expires_at=m.get("leaseExpiresAt"),
            heartbeat_at=m.get("heartbeatAt"),
            created_at=m["createdAt"],
            updated_at=m["updatedAt"],
            order=tuple(m.get("order") or ()),
            statuses=dict(m.get("statuses") or {}),
            error=_error(m.get("error")),
            needs_reconciliation=tuple((p["nodeId"], p["iteration"]) for p in pending),
            extra={k: cast(JsonValue, v) for k, v in m.items() if k not in _RUN_KEYS},
        )


@attrs.frozen(kw_only=True, slots=True, eq=False)
class WorkflowNodeRecord:
    """One execution of one node (``node_id`` is its path, ``iteration`` its loop round).

    Attributes:
        status: ``running``, ``completed``, ``failed``, ``skipped`` or ``cancelled``
            (``cancelled``: abandoned, may run again).
        effect: what a crash mid-node may have done (``read``, ``idempotent-write``,
            ``side-effect``, or ``composite`` for nodes whose inner nodes are journaled).
        output: the stored output (see :mod:`~actoviq.orchestration.graph_runs.codec`).
        final: a ``failed`` node that must not run again (a reconciliation said so).
        reconciliation: ``{resolution, actor, note?, at, previousStatus}``.
    """

    run_id: str
    node_id: str
    iteration: int = 0
    revision: int = 0
    status: NodeStatus
    effect: str = "side-effect"
    attempts: int = 1
    output: JsonValue | Unset = UNSET
    error: ChildError | None = None
    final: bool = False
    started_at: str | None = None
    completed_at: str | None = None
    created_at: str
    updated_at: str
    reconciliation: JsonObject | None = None
    extra: JsonObject = attrs.field(factory=lambda: cast(JsonObject, {}))

    @property
    def key(self) -> tuple[str, int]:
        """``(node_id, iteration)``."""
        return (self.node_id, self.iteration)

    def next(self, **changes: Any) -> WorkflowNodeRecord:
        """The record one revision later."""
        return attrs.evolve(self, revision=self.revision + 1, **changes)

    def to_json(self) -> JsonObject:
        """The persisted JSON."""
        data: JsonObject = {
            **self.extra,
            "schemaVersion": WORKFLOW_RUN_SCHEMA_VERSION,
            "runId": self.run_id,
            "nodeId": self.node_id,
            "iteration": self.iteration,
            "revision": self.revision,
            "status": self.status,
            "effect": self.effect,
            "attempts": self.attempts,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }
        if not isinstance(self.output, Unset):
            data["output"] = self.output
        optional: dict[str, JsonValue | None] = {
            "error": _error_json(self.error),
            "final": True if self.final else None,
            "startedAt": self.started_at,
            "completedAt": self.completed_at,
            "reconciliation": self.reconciliation,
        }
        data.update({k: v for k, v in optional.items() if v is not None})
        return data

    @classmethod
    def from_json(cls, data: object) -> Self:
        """Read a stored node record.

        Raises:
            OrchestrationConfigError: not a workflow node record.
        """
        m = _mapping(data, "node")
        return cls(
            run_id=m["runId"],
            node_id=m["nodeId"],
            iteration=m["iteration"],
            revision=m["revision"],
            status=m["status"],
            effect=m.get("effect", "side-effect"),
            attempts=m.get("attempts", 1),
            output=cast(JsonValue, m["output"]) if "output" in m else UNSET,
            error=_error(m.get("error")),
            final=m.get("final") is True,
            started_at=m.get("startedAt"),
            completed_at=m.get("completedAt"),
            created_at=m["createdAt"],
            updated_at=m["updatedAt"],
            reconciliation=cast(JsonObject | None, m.get("reconciliation")),
            extra={k: cast(JsonValue, v) for k, v in m.items() if k not in _NODE_KEYS},
        )
