"""``OrchestrationScope``: everything a child inherits, and narrowing that never widens.

A scope is an immutable value shared by reference down the tree: the runtime services, one budget
ledger, one concurrency controller, the deadline, the security/tenant/workspace policy, the tool
allow-list and the trace context (spec 04 §1.2, D8). :class:`ScopeNarrowing` lets a child be
stricter than its parent (§8.2-18): an earlier deadline, fewer roots (compared after
``realpath``), ``read-only`` instead of ``read-write``, fewer tools, a sub-budget within what the
parent has left. Anything looser raises :class:`~actoviq.orchestration.errors.ScopeWideningError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

import attrs

from actoviq.core import AbortSignal, JsonObject
from actoviq.events import TraceContext
from actoviq.orchestration._drafts import check_draft
from actoviq.orchestration.budget import (
    BudgetLedger,
    BudgetLimits,
    BudgetSnapshot,
    InMemoryBudgetLedger,
    SubBudgetLedger,
)
from actoviq.orchestration.concurrency import ConcurrencyController
from actoviq.orchestration.errors import OrchestrationConfigError, ScopeWideningError
from actoviq.orchestration.policies import (
    SecurityPolicyRef,
    TenantSessionNamespace,
    WorkspaceAccess,
    WorkspacePolicy,
    check_deadline,
    freeze_object,
    tool_names,
    within,
)
from actoviq.runtime import FrozenJson, RuntimeServices, thaw_json

__all__ = ["OrchestrationScope", "ScopeNarrowing", "child_scope", "narrow_scope_values"]


# No ``__weakref__`` slot: it would follow the fields in the layout, and :func:`child_scope`
# needs a layout that a guard-free twin shares (see there).
@attrs.frozen(kw_only=True, slots=True, eq=False, weakref_slot=False)
class OrchestrationScope:
    """One node of a run tree and everything its runs inherit (compare by identity).

    Attributes:
        run_id: the node's run id (a child run uses it as its own run id).
        parent_run_id: the parent node (None for a root).
        depth: 0 for a root, parent + 1 below.
        lineage: the ancestors' run ids, root first (what concurrency lends along).
        trace: the node's trace context; the runtime adopts it verbatim for the node's run.
        signal: aborted when the node, an ancestor or the deadline cancels it.
        deadline: absolute epoch milliseconds, or None.
        security_policy / tenant_session / workspace_policy: frozen policy values.
        allowed_tools: the tools an agent run in this scope may declare (None: any).
        budget: the tree's ledger (or a narrowed sub-ledger).
        concurrency: the tree's permits.
        services: the runtime's service container (the same object everywhere in the tree).
        metadata: a frozen JSON object.
    """

    run_id: str
    parent_run_id: str | None = None
    depth: int = 0
    lineage: tuple[str, ...] = ()
    trace: TraceContext
    signal: AbortSignal
    deadline: float | None = None
    security_policy: SecurityPolicyRef
    tenant_session: TenantSessionNamespace
    workspace_policy: WorkspacePolicy
    allowed_tools: frozenset[str] | None = None
    budget: BudgetLedger
    concurrency: ConcurrencyController
    services: RuntimeServices
    metadata: Mapping[str, FrozenJson]

    def metadata_json(self) -> JsonObject:
        """The metadata as a plain JSON object (a copy)."""
        return thaw_json(self.metadata)  # type: ignore[return-value]

    def remaining_ms(self, now_ms: float) -> float | None:
        """Milliseconds left before the deadline (None without one; never negative)."""
        return None if self.deadline is None else max(0.0, self.deadline - now_ms)


class _ScopeDraft:
    """:class:`OrchestrationScope`'s slot layout without its frozen guard (never handed out).

    attrs' frozen ``__init__`` stores each of the 15 fields through ``object.__setattr__`` (a
    call per field, about 1.4 k instructions each); a draft is filled with plain slot stores
    and then becomes an :class:`OrchestrationScope` by assigning ``__class__``, which CPython
    allows because the two layouts are the same (checked below).
    """

    __slots__ = tuple(field.name for field in attrs.fields(OrchestrationScope))

    run_id: str
    parent_run_id: str | None
    depth: int
    lineage: tuple[str, ...]
    trace: TraceContext
    signal: AbortSignal
    deadline: float | None
    security_policy: SecurityPolicyRef
    tenant_session: TenantSessionNamespace
    workspace_policy: WorkspacePolicy
    allowed_tools: frozenset[str] | None
    budget: BudgetLedger
    concurrency: ConcurrencyController
    services: RuntimeServices
    metadata: Mapping[str, FrozenJson]


# Refuse, at import, a class the draft can no longer stand for.
check_draft(OrchestrationScope, _ScopeDraft)


def child_scope(
    parent: OrchestrationScope,
    run_id: str,
    trace: TraceContext,
    signal: AbortSignal,
) -> OrchestrationScope:
    """A child of ``parent`` inheriting every policy field as it is (no narrowing).

    Equal, field by field, to ``OrchestrationScope(run_id=run_id, parent_run_id=parent.run_id,
    depth=parent.depth + 1, lineage=(*parent.lineage, parent.run_id), trace=trace,
    signal=signal, <every other field of parent>)``, built without attrs' per-field
    ``object.__setattr__`` (what a fan-out pays once per child).
    """
    draft = _ScopeDraft()
    draft.run_id = run_id
    draft.parent_run_id = parent.run_id
    draft.depth = parent.depth + 1
    draft.lineage = (*parent.lineage, parent.run_id)
    draft.trace = trace
    draft.signal = signal
    draft.deadline = parent.deadline
    draft.security_policy = parent.security_policy
    draft.tenant_session = parent.tenant_session
    draft.workspace_policy = parent.workspace_policy
    draft.allowed_tools = parent.allowed_tools
    draft.budget = parent.budget
    draft.concurrency = parent.concurrency
    draft.services = parent.services
    draft.metadata = parent.metadata
    draft.__class__ = OrchestrationScope  # pyright: ignore[reportAttributeAccessIssue]
    return cast(OrchestrationScope, draft)


def _tools(value: Iterable[str] | None) -> frozenset[str] | None:
    return tool_names(value)


def _narrow_roots(value: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if value is None else WorkspacePolicy(allowed_roots=value).allowed_roots


def _root(_: object, __: object, value: object) -> None:
    if value is not None:
        WorkspacePolicy(root=cast(str, value))  # the same check as a policy's root


def _limits(_: object, __: object, value: object) -> None:
    if value is not None and not isinstance(value, BudgetLimits):
        raise OrchestrationConfigError(
            "ScopeNarrowing budget must be BudgetLimits.", details={"field": "budget"}
        )


def _narrow_metadata(_: object, __: object, value: object) -> None:
    if value is not None and not isinstance(value, Mapping):
        raise OrchestrationConfigError(
            "ScopeNarrowing metadata must be a JSON object.", details={"field": "metadata"}
        )


@attrs.frozen(kw_only=True, slots=True)
class ScopeNarrowing:
    """How a child is stricter than its parent; every field left ``None`` is inherited.

    Attributes:
        deadline: an earlier absolute deadline (epoch ms).
        access: ``"read-only"`` (a read-write child of a read-only parent is refused).
        root: the child's workspace root (must be inside the parent's roots).
        allowed_roots: the child's roots (each inside one of the parent's, after realpath).
        allowed_tools: a subset of the parent's tools.
        budget: limits of a sub-budget, each within what the parent has left.
        metadata: keys added to the inherited metadata.
    """

    deadline: float | None = None
    access: WorkspaceAccess | None = None
    root: str | None = attrs.field(default=None, validator=_root)
    allowed_roots: tuple[str, ...] | None = attrs.field(default=None, converter=_narrow_roots)
    allowed_tools: frozenset[str] | None = attrs.field(default=None, converter=_tools)
    budget: BudgetLimits | None = attrs.field(default=None, validator=_limits)
    metadata: JsonObject | None = attrs.field(default=None, validator=_narrow_metadata)


def _widening(message: str, field: str, **details: Any) -> ScopeWideningError:
    return ScopeWideningError(message, details={"field": field, **details})


def _narrow_deadline(parent: float | None, child: float | None) -> float | None:
    child = check_deadline(child)
    if child is None:
        return parent
    if parent is not None and child > parent:
        raise _widening(
            "A child scope cannot extend its parent's deadline.",
            "deadline",
            parent=parent,
            child=child,
        )
    return child


def _narrow_workspace(parent: WorkspacePolicy, narrow: ScopeNarrowing) -> WorkspacePolicy:
    access = parent.access
    if narrow.access is not None:
        if narrow.access not in ("read-only", "read-write"):
            raise OrchestrationConfigError(
                'access must be "read-only" or "read-write".', details={"field": "access"}
            )
        if parent.access == "read-only" and narrow.access == "read-write":
            raise _widening(
                "A child scope of a read-only workspace cannot be read-write.", "workspace.access"
            )
        access = narrow.access
    parent_roots = parent.effective_roots()
    root = parent.root
    if narrow.root is not None:
        if parent_roots is not None and not within(narrow.root, parent_roots):
            raise _widening(
                f'Workspace root "{narrow.root}" is outside the parent scope\'s roots.',
                "workspace.root",
            )
        root = narrow.root
    allowed = parent.allowed_roots
    if narrow.allowed_roots is not None:
        outside = [
            path
            for path in narrow.allowed_roots
            if parent_roots is not None and not within(path, parent_roots)
        ]
        if outside:
            raise _widening(
                f"Allowed roots {outside} are outside the parent scope's roots.",
                "workspace.allowedRoots",
            )
        allowed = narrow.allowed_roots
    if (
        root is not None
        and narrow.allowed_roots is not None
        and not within(root, list(WorkspacePolicy(allowed_roots=allowed).effective_roots() or ()))
    ):
        raise _widening(
            f'Workspace root "{root}" is outside the child\'s allowed roots.', "workspace.root"
        )
    return WorkspacePolicy(
        workspace_id=parent.workspace_id, root=root, access=access, allowed_roots=allowed
    )


def _narrow_tools(
    parent: frozenset[str] | None, child: frozenset[str] | None
) -> frozenset[str] | None:
    if child is None:
        return parent
    if parent is not None and not child <= parent:
        extra = sorted(child - parent)
        raise _widening(
            f"Tools {extra} are not allowed in the parent scope.", "allowedTools", tools=extra
        )
    return child


_BUDGET_FIELDS = (
    ("max_child_runs", "maxChildRuns"),
    ("max_depth", "maxDepth"),
    ("max_total_tokens", "maxTotalTokens"),
    ("max_cost_usd", "maxCostUsd"),
)


def _available(parent: BudgetLedger) -> dict[str, float | None]:
    """What is left of each limit along ``parent``'s chain of sub-budgets (the tightest wins).

    A sub-budget's own counters say nothing of what its siblings spent on the ledgers above
    it, so every ledger up the chain is read; a ledger that cannot be read synchronously (a
    durable one) contributes its limits.
    """
    left: dict[str, float | None] = {name: None for name, _ in _BUDGET_FIELDS}
    ledger: BudgetLedger | None = parent
    while ledger is not None:
        snapshot: BudgetSnapshot | None = None
        if isinstance(ledger, InMemoryBudgetLedger | SubBudgetLedger):
            snapshot = ledger.snapshot_now()
        remaining = snapshot.remaining() if snapshot is not None else ledger.limits
        for name, _ in _BUDGET_FIELDS:
            value: float | None = getattr(remaining, name)
            current = left[name]
            if value is not None and (current is None or value < current):
                left[name] = value
        ledger = ledger.parent if isinstance(ledger, SubBudgetLedger) else None
    return left


def _narrow_budget(parent: BudgetLedger, limits: BudgetLimits | None) -> BudgetLedger:
    if limits is None:
        return parent
    available = _available(parent)
    for name, wire in _BUDGET_FIELDS:
        own: float | None = getattr(limits, name)
        left = available[name]
        if own is not None and left is not None and own > left:
            raise _widening(
                f"Sub-budget {wire} {own} exceeds what the parent scope has left ({left}).",
                f"budget.{wire}",
                limit=own,
                available=left,
            )
    return SubBudgetLedger(parent, limits)


def narrow_scope_values(
    parent: OrchestrationScope, narrow: ScopeNarrowing | None
) -> dict[str, Any]:
    """The inherited fields of a child of ``parent`` with ``narrow`` applied (checked).

    Raises:
        ScopeWideningError: a narrowing would loosen the parent (``details["field"]`` says what).
        OrchestrationConfigError: an invalid deadline or access value.
    """
    values: dict[str, Any] = {
        "deadline": parent.deadline,
        "security_policy": parent.security_policy,
        "tenant_session": parent.tenant_session,
        "workspace_policy": parent.workspace_policy,
        "allowed_tools": parent.allowed_tools,
        "budget": parent.budget,
        "concurrency": parent.concurrency,
        "services": parent.services,
        "metadata": parent.metadata,
    }
    if narrow is None:
        return values
    values["deadline"] = _narrow_deadline(parent.deadline, narrow.deadline)
    if narrow.access is not None or narrow.root is not None or narrow.allowed_roots is not None:
        values["workspace_policy"] = _narrow_workspace(parent.workspace_policy, narrow)
    values["allowed_tools"] = _narrow_tools(parent.allowed_tools, narrow.allowed_tools)
    values["budget"] = _narrow_budget(parent.budget, narrow.budget)
    if narrow.metadata:
        merged: dict[str, object] = {
            **cast(dict[str, object], thaw_json(parent.metadata)),
            **narrow.metadata,
        }
        values["metadata"] = freeze_object(merged, "metadata")
    return values
