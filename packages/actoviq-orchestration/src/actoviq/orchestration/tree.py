"""``RunTree``: the cancellation tree of scopes (spec 04 §1.5); it owns no runtime.

Each node holds an abort controller linked to its parent's (and to its deadline), its children and
a completed flag. ``cancel_tree`` aborts a node and every descendant with one reason;
``complete`` prunes a node once it and all its children are done.

Example:
    >>> import asyncio
    >>> from actoviq.runtime import RuntimeServices
    >>> async def main() -> list[str]:
    ...     tree = RunTree()
    ...     root = tree.create_root(services=RuntimeServices(), run_id="root")
    ...     child = tree.derive_child(root, "child")
    ...     tree.cancel_tree("root")
    ...     return [str(child.signal.aborted), child.trace.parent_run_id or ""]
    >>> asyncio.run(main())
    ['True', 'root']
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping

import attrs

from actoviq.core import AbortController, AbortSignal, JsonObject
from actoviq.events import (
    IdFactory,
    RandomIdFactory,
    TraceContext,
    create_child_trace_context,
    create_root_trace_context,
)
from actoviq.orchestration.budget import BudgetLedger, InMemoryBudgetLedger
from actoviq.orchestration.concurrency import ConcurrencyController
from actoviq.orchestration.errors import (
    OrchestrationConfigError,
    OrchestrationError,
    RunTreeConflictError,
)
from actoviq.orchestration.policies import (
    SecurityPolicyRef,
    TenantSessionNamespace,
    WorkspacePolicy,
    check_deadline,
    freeze_object,
    tool_names,
)
from actoviq.orchestration.scope import (
    OrchestrationScope,
    ScopeNarrowing,
    child_scope,
    narrow_scope_values,
)
from actoviq.runtime import RunCancelledError, RuntimeServices

__all__ = ["OrchestrationDeadlineExceededError", "RunTree", "RunTreeNodeInfo"]


class OrchestrationDeadlineExceededError(OrchestrationError):
    """The abort reason of a scope whose deadline passed ("Orchestration deadline exceeded.")."""

    default_code = "ORCHESTRATION_DEADLINE_EXCEEDED"


@attrs.frozen(kw_only=True, slots=True)
class RunTreeNodeInfo:
    """One node as :meth:`RunTree.inspect` reports it."""

    run_id: str
    parent_run_id: str | None
    child_run_ids: tuple[str, ...]
    aborted: bool
    completed: bool

    def to_json(self) -> JsonObject:
        """``{runId, parentRunId?, childRunIds, aborted, completed}``."""
        data: JsonObject = {"runId": self.run_id}
        if self.parent_run_id is not None:
            data["parentRunId"] = self.parent_run_id
        data["childRunIds"] = list(self.child_run_ids)
        data["aborted"] = self.aborted
        data["completed"] = self.completed
        return data


class _Node:
    __slots__ = (
        "children",
        "completed",
        "controller",
        "disposers",
        "fans_out",
        "parent",
        "scope",
        "timed",
    )

    def __init__(self, scope: OrchestrationScope, controller: AbortController, parent: str | None):
        self.scope = scope
        self.controller = controller
        self.parent = parent
        self.children: dict[str, _Node] = {}  # live children in creation order
        self.completed = False
        self.fans_out = False  # one listener on this node's signal aborts every child
        self.timed = False  # its deadline is enforced (a timer armed here or on an ancestor)
        self.disposers: list[Callable[[], object]] | None = None  # made at the first one

    def adopt_child(self, child: _Node) -> None:
        """Link ``child``'s controller to this node's signal (no listener per child)."""
        self.children[child.scope.run_id] = child
        signal = self.controller.signal
        if signal.aborted:
            child.controller.abort(signal.reason)
        elif not self.fans_out:
            self.fans_out = True
            self.on_dispose(signal.add_listener(self._abort_children))

    def _abort_children(self, reason: object) -> None:
        for child in list(self.children.values()):  # creation order, each cascades below it
            child.controller.abort(reason)

    def on_dispose(self, disposer: Callable[[], object]) -> None:
        """Call ``disposer`` when the node is pruned (a listener removed, a timer cancelled)."""
        if self.disposers is None:
            self.disposers = [disposer]
        else:
            self.disposers.append(disposer)

    def dispose(self) -> None:
        disposers = self.disposers
        if disposers is not None:
            for disposer in disposers:
                disposer()
            self.disposers = None


def _boundary(
    node: _Node,
    controller: AbortController,
    parent: AbortSignal | None,
    deadline: float | None,
) -> bool:
    """Link ``controller`` to ``parent`` and arm the deadline timer (disposers collected).

    Returns whether the deadline is enforced (a timer armed, or already aborted).
    """
    if parent is not None:
        node.on_dispose(parent.add_listener(controller.abort))
    if deadline is None or controller.signal.aborted:
        return controller.signal.aborted
    delay = max(0.0, deadline - time.time() * 1000) / 1000.0
    reason = OrchestrationDeadlineExceededError("Orchestration deadline exceeded.")
    if delay == 0.0:
        controller.abort(reason)
        return True
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False  # no loop yet: ChildRunner still refuses to start a child past the deadline
    handle = loop.call_later(delay, controller.abort, reason)
    node.on_dispose(handle.cancel)
    return True


def _check_run_id(run_id: object) -> None:
    if type(run_id) is not str or not run_id.strip() or "\x00" in run_id:
        raise OrchestrationConfigError(
            "A run id must be a non-empty string without NUL characters.",
            details={"field": "runId"},
        )


class RunTree:
    """The run tree of one orchestration (the reference ``RunTreeController``).

    Args:
        ids: trace/span id factory (inject a deterministic one in tests).
    """

    def __init__(self, *, ids: IdFactory | None = None) -> None:
        self._ids = ids if ids is not None else RandomIdFactory()
        self._nodes: dict[str, _Node] = {}

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._nodes

    def new_run_id(self) -> str:
        """A fresh run id (from the tree's id factory: deterministic in tests)."""
        return self._ids.event_id()

    def scope(self, run_id: str) -> OrchestrationScope | None:
        """The live scope of ``run_id`` in this tree, or None."""
        node = self._nodes.get(run_id)
        return node.scope if node is not None else None

    def create_root(
        self,
        *,
        services: RuntimeServices,
        run_id: str | None = None,
        signal: AbortSignal | None = None,
        deadline: float | None = None,
        security_policy: SecurityPolicyRef | None = None,
        tenant_session: TenantSessionNamespace | None = None,
        workspace_policy: WorkspacePolicy | None = None,
        allowed_tools: Iterable[str] | None = None,
        budget: BudgetLedger | None = None,
        concurrency: ConcurrencyController | None = None,
        metadata: Mapping[str, object] | None = None,
        trace: TraceContext | None = None,
    ) -> OrchestrationScope:
        """A new root scope (depth 0, a new trace unless ``trace`` is given).

        Everything is validated before the tree changes, so a refused root leaves nothing.

        Raises:
            OrchestrationConfigError: bad deadline ("deadline"), blank policy id ("policy id"),
                blank tenant/namespace ("Tenant id"), non-JSON metadata.
            RunTreeConflictError: ``run_id`` is already in the tree ("already contains").
        """
        run_id = run_id if run_id is not None else self.new_run_id()
        _check_run_id(run_id)
        deadline = check_deadline(deadline)
        frozen = freeze_object(metadata, "metadata")
        tools = tool_names(allowed_tools)
        if run_id in self._nodes:
            raise RunTreeConflictError(f'Run tree already contains "{run_id}".')
        if trace is not None and trace.run_id != run_id:
            raise RunTreeConflictError(f'trace.run_id must be the root run id "{run_id}".')
        controller = AbortController()
        scope = OrchestrationScope(
            run_id=run_id,
            trace=trace if trace is not None else create_root_trace_context(run_id, ids=self._ids),
            signal=controller.signal,
            deadline=deadline,
            security_policy=security_policy or SecurityPolicyRef(),
            tenant_session=tenant_session or TenantSessionNamespace(),
            workspace_policy=workspace_policy or WorkspacePolicy(),
            allowed_tools=tools,
            budget=budget if budget is not None else InMemoryBudgetLedger(),
            concurrency=concurrency if concurrency is not None else ConcurrencyController(),
            services=services,
            metadata=frozen,
        )
        node = _Node(scope, controller, None)
        node.timed = _boundary(node, controller, signal, deadline)
        self._nodes[run_id] = node
        return scope

    def adopt(self, scope: OrchestrationScope) -> None:
        """Register an external scope (e.g. restored); a no-op when its id is known."""
        if scope.run_id in self._nodes:
            return
        controller = AbortController()
        node = _Node(attrs.evolve(scope, signal=controller.signal), controller, None)
        node.timed = _boundary(node, controller, scope.signal, scope.deadline)
        self._nodes[scope.run_id] = node

    def derive_child(
        self,
        parent: OrchestrationScope,
        child_run_id: str | None = None,
        *,
        narrow: ScopeNarrowing | None = None,
    ) -> OrchestrationScope:
        """A child of ``parent``: same services, ledger, permits, trace id; may only narrow.

        Raises:
            RunTreeConflictError: ``child_run_id`` is already in the tree
                ("already contains child").
            ScopeWideningError: ``narrow`` would loosen the parent (§8.2-18).
        """
        if child_run_id is None:
            child_run_id = self.new_run_id()
        elif type(child_run_id) is not str or not child_run_id.strip() or "\x00" in child_run_id:
            _check_run_id(child_run_id)
        nodes = self._nodes
        parent_run_id = parent.run_id
        parent_node = nodes.get(parent_run_id)
        # Checked before the tree changes; None: everything inherited as it is.
        values = None if narrow is None else narrow_scope_values(parent, narrow)
        if parent_node is None:
            self.adopt(parent)
            parent_node = nodes[parent_run_id]
        if child_run_id in nodes:
            raise RunTreeConflictError(f'Run tree already contains child "{child_run_id}".')
        controller = AbortController()
        trace = create_child_trace_context(child_run_id, parent=parent.trace, ids=self._ids)
        if values is None:  # the common case: every policy field inherited as it is
            scope = child_scope(parent, child_run_id, trace, controller.signal)
        else:
            scope = OrchestrationScope(
                run_id=child_run_id,
                parent_run_id=parent_run_id,
                depth=parent.depth + 1,
                lineage=(*parent.lineage, parent_run_id),
                trace=trace,
                signal=controller.signal,
                **values,
            )
        node = _Node(scope, controller, parent.run_id)
        parent_node.adopt_child(node)
        if scope.deadline is not None:
            if scope.deadline == parent.deadline and parent_node.timed:
                node.timed = True  # the parent's timer aborts it through the link
            else:
                node.timed = _boundary(node, controller, None, scope.deadline)
        self._nodes[child_run_id] = node
        return scope

    def cancel_tree(self, run_id: str, reason: object = None) -> None:
        """Abort ``run_id`` and every descendant with the same reason; unknown ids are a no-op."""
        node = self._nodes.get(run_id)
        if node is None:
            return
        if reason is None:
            reason = RunCancelledError(f'Run tree "{run_id}" cancelled.', run_id=run_id)
        stack = [run_id]
        while stack:
            current = self._nodes.get(stack.pop())
            if current is None:
                continue
            current.controller.abort(reason)
            stack.extend(sorted(current.children, reverse=True))

    def complete(self, run_id: str) -> None:
        """Mark ``run_id`` completed and prune it (and completed ancestors) once childless."""
        node = self._nodes.get(run_id)
        if node is None:
            return
        node.completed = True
        current: str | None = run_id
        while current is not None:
            entry = self._nodes.get(current)
            if entry is None or not entry.completed or entry.children:
                return
            entry.dispose()
            del self._nodes[current]
            parent = self._nodes.get(entry.parent) if entry.parent is not None else None
            if parent is None:
                return
            parent.children.pop(current, None)
            current = entry.parent

    def inspect(self) -> list[RunTreeNodeInfo]:
        """Every node, sorted by run id."""
        return [
            RunTreeNodeInfo(
                run_id=run_id,
                parent_run_id=node.parent,
                child_run_ids=tuple(sorted(node.children)),
                aborted=node.controller.signal.aborted,
                completed=node.completed,
            )
            for run_id, node in sorted(self._nodes.items())
        ]
