"""The data of a workflow graph: nodes, edges, contexts, results and errors (spec 04 §1.10).

:mod:`actoviq.orchestration.graph` validates and executes graphs built from these (and re-exports
every name here).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal, TypeAlias, cast

import attrs

from actoviq.core import AbortSignal, JsonObject
from actoviq.orchestration._drafts import check_draft
from actoviq.orchestration.errors import OrchestrationError
from actoviq.orchestration.outcomes import ChildError, ChildFailurePolicy
from actoviq.orchestration.scope import OrchestrationScope

__all__ = [
    "MAX_SAFE",
    "Activation",
    "FailurePolicy",
    "NodeContext",
    "NodeFn",
    "RouteContext",
    "RouteFn",
    "WorkflowEdge",
    "WorkflowGraphError",
    "WorkflowGraphResult",
    "WorkflowNode",
    "WorkflowNodeExecutionError",
    "WorkflowNodeFailure",
    "WorkflowNodeStatus",
    "node_context",
]

WorkflowNodeStatus: TypeAlias = Literal[
    "pending", "ready", "running", "completed", "skipped", "failed", "cancelled"
]
"""The state of one node of a workflow graph."""
Activation: TypeAlias = Literal["all", "any", "first"]
"""When a node runs once its predecessors settle (see :class:`WorkflowNode`)."""
FailurePolicy: TypeAlias = Literal["fail-fast", "collect"]
"""What a node's failure does to the graph (see :class:`WorkflowNode`)."""
MAX_SAFE: Final = 2**53 - 1
"""The largest safe integer (JavaScript ``Number.MAX_SAFE_INTEGER``)."""


class WorkflowGraphError(OrchestrationError, ValueError):
    """The graph is invalid (no nodes, blank or duplicate ids, a cycle, a bad edge...)."""

    default_code: ClassVar[str] = "WORKFLOW_GRAPH_INVALID"


class WorkflowNodeExecutionError(OrchestrationError):
    """A node raised: ``Workflow node "<id>" failed.`` (the error is the ``__cause__``)."""

    default_code: ClassVar[str] = "WORKFLOW_NODE_FAILED"

    def __init__(self, node_id: str, cause: BaseException) -> None:
        super().__init__(f'Workflow node "{node_id}" failed.', details={"nodeId": node_id})
        self.node_id = node_id
        self.cause = cause
        self.__cause__ = cause


@attrs.frozen(kw_only=True, slots=True, weakref_slot=False)
class NodeContext:
    """What a node sees: its id, the graph input, the scope, the signal, outputs so far.

    ``inputs`` (reducers only) are the outputs of its completed direct predecessors, in
    incoming-edge order.
    """

    node_id: str
    input: Any
    scope: OrchestrationScope
    signal: AbortSignal
    outputs: Mapping[str, Any]
    inputs: Mapping[str, Any] = attrs.field(factory=lambda: MappingProxyType({}))


class _ContextDraft:
    """:class:`NodeContext`'s layout without its frozen guard (see :func:`node_context`)."""

    __slots__ = tuple(field.name for field in attrs.fields(NodeContext))

    node_id: str
    input: Any
    scope: OrchestrationScope
    signal: AbortSignal
    outputs: Mapping[str, Any]
    inputs: Mapping[str, Any]


# Refuse, at import, a class the draft can no longer stand for.
check_draft(NodeContext, _ContextDraft)


def node_context(
    node_id: str,
    input: Any,
    scope: OrchestrationScope,
    signal: AbortSignal,
    outputs: Mapping[str, Any],
    inputs: Mapping[str, Any],
) -> NodeContext:
    """``NodeContext(node_id=..., ...)`` built with plain slot stores (one per node run).

    attrs' frozen ``__init__`` calls ``object.__setattr__`` once per field.
    """
    draft = _ContextDraft()
    draft.node_id = node_id
    draft.input = input
    draft.scope = scope
    draft.signal = signal
    draft.outputs = outputs
    draft.inputs = inputs
    draft.__class__ = NodeContext  # pyright: ignore[reportAttributeAccessIssue]
    return cast(NodeContext, draft)


@attrs.frozen(kw_only=True, slots=True)
class RouteContext:
    """What an edge predicate sees."""

    input: Any
    scope: OrchestrationScope
    source: str
    target: str
    source_output: Any
    outputs: Mapping[str, Any]


NodeFn: TypeAlias = Callable[[NodeContext], Any]
"""A node's ``execute`` or ``reduce`` function (sync or async)."""
RouteFn: TypeAlias = Callable[[RouteContext], "bool | Awaitable[bool]"]
"""An edge's ``when`` predicate (sync or async)."""


def _graph_policy(value: object) -> Any:
    """A node's failure policy: ``"fail-fast"``/``"collect"`` or a ``ChildFailurePolicy``.

    A node is not retried: retry a child with ``retry-safe`` inside it instead.
    """
    if isinstance(value, ChildFailurePolicy):
        if value.mode == "retry-safe":
            raise WorkflowGraphError(
                "A workflow node's failure policy is fail-fast or collect; retry a child with "
                "agent_workflow_node(failure_policy=ChildFailurePolicy.retry_safe(n))."
            )
        return value.mode
    return value


@attrs.frozen(kw_only=True, slots=True)
class WorkflowNode:
    """One node: exactly one of ``execute`` or ``reduce`` (sync or async).

    Attributes:
        activation: when the node runs once its predecessors settle: ``all`` (every incoming
            edge active), ``any`` (at least one), or ``first`` (a race join: it starts as soon
            as the first active predecessor completes; predecessors that only fed it and are
            still running are cancelled).
        failure_policy: ``fail-fast`` (an error fails the graph) or ``collect`` (the node's
            output is a :class:`WorkflowNodeFailure`, its status ``failed``, and its successors
            still run); a ``ChildFailurePolicy`` of either mode is accepted.
    """

    id: str
    execute: NodeFn | None = None
    reduce: NodeFn | None = None
    activation: Activation = "all"
    failure_policy: FailurePolicy = attrs.field(default="fail-fast", converter=_graph_policy)


@attrs.frozen(kw_only=True, slots=True)
class WorkflowNodeFailure:
    """The output of a ``collect`` node that failed: which node, and its error."""

    node_id: str
    error: ChildError

    def to_json(self) -> JsonObject:
        """``{nodeId, error: {name, message, code?}}``."""
        return {"nodeId": self.node_id, "error": self.error.to_json()}


@attrs.frozen(kw_only=True, slots=True)
class WorkflowEdge:
    """``source -> target``, taken when ``when`` (if any) returns true."""

    source: str
    target: str
    when: RouteFn | None = None


@attrs.frozen(kw_only=True, slots=True)
class WorkflowGraphResult:
    """The full topological order, the completed nodes' outputs and every node's status."""

    order: tuple[str, ...]
    outputs: Mapping[str, Any]
    statuses: Mapping[str, WorkflowNodeStatus]
