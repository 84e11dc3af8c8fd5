"""``PersistedScope``: a scope as JSON, and a scope rebuilt from it (spec 04 §1.2, §1.5).

A persisted scope is the scope minus what cannot cross a process: the signal, the permits and the
services; the budget is replaced by a :class:`~actoviq.orchestration.budget.BudgetSnapshot`. The
JSON keeps the reference camelCase keys (D2), so a durable child record written here is readable
by the reference and the reverse.

Example:
    >>> import asyncio
    >>> from actoviq.runtime import RuntimeServices
    >>> from actoviq.orchestration.tree import RunTree
    >>> async def roundtrip() -> str:
    ...     root = RunTree().create_root(services=RuntimeServices(), run_id="root")
    ...     persisted = await persist_scope(root)
    ...     restored = restore_scope(PersistedScope.from_json(persisted.to_json()),
    ...                              services=root.services)
    ...     return restored.run_id
    >>> asyncio.run(roundtrip())
    'root'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, cast

import attrs

from actoviq.core import AbortController, AbortSignal, JsonObject, JsonValue
from actoviq.events import TraceContext
from actoviq.orchestration.budget import BudgetLedger, BudgetSnapshot, InMemoryBudgetLedger
from actoviq.orchestration.concurrency import ConcurrencyController
from actoviq.orchestration.errors import OrchestrationConfigError
from actoviq.orchestration.policies import (
    SecurityPolicyRef,
    TenantSessionNamespace,
    WorkspacePolicy,
    check_deadline,
    freeze_object,
    policy_from_json,
)
from actoviq.orchestration.scope import OrchestrationScope
from actoviq.runtime import FrozenJson, RuntimeServices, thaw_json, trace_from_json, trace_to_json

__all__ = ["PersistedScope", "persist_scope", "restore_scope"]


@attrs.frozen(kw_only=True, slots=True)
class PersistedScope:
    """A scope's JSON-safe part (no signal, permits or services; the budget as a snapshot)."""

    run_id: str
    parent_run_id: str | None = None
    depth: int = 0
    lineage: tuple[str, ...] = ()
    trace: TraceContext
    deadline: float | None = None
    security_policy: SecurityPolicyRef
    tenant_session: TenantSessionNamespace
    workspace_policy: WorkspacePolicy
    allowed_tools: frozenset[str] | None = None
    budget: BudgetSnapshot
    metadata: Mapping[str, FrozenJson]

    def to_json(self) -> JsonObject:
        """The reference ``PersistedScope`` JSON (plus ``lineage``/``allowedTools`` when set)."""
        data: JsonObject = {"runId": self.run_id}
        if self.parent_run_id is not None:
            data["parentRunId"] = self.parent_run_id
        data["depth"] = self.depth
        data["trace"] = trace_to_json(self.trace)
        if self.deadline is not None:
            data["deadline"] = self.deadline
        data["securityPolicy"] = self.security_policy.to_json()
        data["tenantSession"] = self.tenant_session.to_json()
        data["workspacePolicy"] = self.workspace_policy.to_json()
        data["budget"] = self.budget.to_json()
        data["metadata"] = thaw_json(self.metadata)
        if self.lineage:
            data["lineage"] = cast(JsonValue, list(self.lineage))
        if self.allowed_tools is not None:
            data["allowedTools"] = cast(JsonValue, sorted(self.allowed_tools))
        return data

    @classmethod
    def from_json(cls, data: object) -> Self:
        """Read :meth:`to_json` output (or the reference shape).

        Raises:
            OrchestrationConfigError: a missing or invalid field.
        """
        if not isinstance(data, Mapping):
            raise OrchestrationConfigError("Persisted scope must be a JSON object.")
        mapping: Mapping[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
        run_id = mapping.get("runId")
        depth = mapping.get("depth", 0)
        if not isinstance(run_id, str) or not run_id.strip():
            raise OrchestrationConfigError("Persisted scope runId must be a non-empty string.")
        if type(depth) is not int or depth < 0:
            raise OrchestrationConfigError("Persisted scope depth must be a non-negative integer.")
        policy, tenant, workspace = policy_from_json(mapping)
        tools = mapping.get("allowedTools")
        parent = mapping.get("parentRunId")
        lineage = mapping.get("lineage")
        return cls(
            run_id=run_id,
            parent_run_id=parent,
            depth=depth,
            lineage=tuple(lineage) if lineage else ((parent,) if parent else ()),
            trace=trace_from_json(mapping.get("trace")),
            deadline=check_deadline(mapping.get("deadline")),
            security_policy=policy,
            tenant_session=tenant,
            workspace_policy=workspace,
            allowed_tools=None if tools is None else frozenset(tools),
            budget=BudgetSnapshot.from_json(mapping.get("budget")),
            metadata=freeze_object(mapping.get("metadata") or {}, "metadata"),
        )


async def persist_scope(scope: OrchestrationScope) -> PersistedScope:
    """What of ``scope`` survives a process (its budget as a snapshot)."""
    return PersistedScope(
        run_id=scope.run_id,
        parent_run_id=scope.parent_run_id,
        depth=scope.depth,
        lineage=scope.lineage,
        trace=scope.trace,
        deadline=scope.deadline,
        security_policy=scope.security_policy,
        tenant_session=scope.tenant_session,
        workspace_policy=scope.workspace_policy,
        allowed_tools=scope.allowed_tools,
        budget=await scope.budget.snapshot(),
        metadata=scope.metadata,
    )


def restore_scope(
    persisted: PersistedScope,
    *,
    services: RuntimeServices,
    signal: AbortSignal | None = None,
    concurrency: ConcurrencyController | None = None,
    budget: BudgetLedger | None = None,
) -> OrchestrationScope:
    """A live scope rebuilt from ``persisted``.

    It takes the given signal (default: never aborted), permits (default: a new controller of
    8) and ``budget`` (default: a detached in-memory ledger from the snapshot; pass a shared
    durable ledger to keep one budget across processes).

    A restored scope keeps its absolute deadline: once it passed, any derived child aborts.
    """
    return OrchestrationScope(
        run_id=persisted.run_id,
        parent_run_id=persisted.parent_run_id,
        depth=persisted.depth,
        lineage=persisted.lineage,
        trace=persisted.trace,
        signal=signal if signal is not None else AbortController().signal,
        deadline=persisted.deadline,
        security_policy=persisted.security_policy,
        tenant_session=persisted.tenant_session,
        workspace_policy=persisted.workspace_policy,
        allowed_tools=persisted.allowed_tools,
        budget=budget
        if budget is not None
        else InMemoryBudgetLedger.from_snapshot(persisted.budget),
        concurrency=concurrency if concurrency is not None else ConcurrencyController(),
        services=services,
        metadata=persisted.metadata,
    )
