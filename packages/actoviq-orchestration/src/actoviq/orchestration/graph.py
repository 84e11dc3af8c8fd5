"""``WorkflowGraph``: a deterministic, immutable DAG of nodes over one scope (spec 04 §1.10).

The in-memory core the presets build on: nodes (``execute`` or ``reduce``), edges with optional
``when`` predicates, ``all``/``any``/``first`` activation (``first``: a race join that starts at
its first active predecessor and cancels the losers), the lexically smallest topological order, a
``max_concurrency`` of ready nodes, and a per-node failure policy: ``fail-fast`` (the first node
failure fails the graph as :class:`WorkflowNodeExecutionError`) or ``collect`` (the failure is
the node's output, a :class:`WorkflowNodeFailure`, and the graph goes on). Bounded loops are
:func:`~actoviq.orchestration.graph_loops.loop_node`; durable runs are
:class:`~actoviq.orchestration.graph_runs.DurableGraphRunner`. Unlike the reference, the nodes
still running when one fails are cancelled and awaited (structured concurrency), never left
behind.

Example:
    >>> import asyncio
    >>> from actoviq.runtime import RuntimeServices
    >>> from actoviq.orchestration.tree import RunTree
    >>> graph = WorkflowGraph(
    ...     nodes=[WorkflowNode(id="a", execute=lambda ctx: ctx.input * 2),
    ...            WorkflowNode(id="b", reduce=lambda ctx: sum(ctx.inputs.values()) + 1)],
    ...     edges=[WorkflowEdge(source="a", target="b")],
    ... )
    >>> scope = RunTree().create_root(services=RuntimeServices())
    >>> asyncio.run(graph.execute(input=20, scope=scope)).outputs["b"]
    41
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal, TypeAlias

import attrs

from actoviq.core import AbortController, AbortSignal, JsonObject
from actoviq.orchestration.errors import OrchestrationError
from actoviq.orchestration.outcomes import ChildError, ChildFailurePolicy
from actoviq.orchestration.scope import OrchestrationScope

__all__ = [
    "Activation",
    "FailurePolicy",
    "NodeContext",
    "RouteContext",
    "WorkflowEdge",
    "WorkflowGraph",
    "WorkflowGraphError",
    "WorkflowGraphResult",
    "WorkflowNode",
    "WorkflowNodeExecutionError",
    "WorkflowNodeFailure",
    "WorkflowNodeStatus",
]

WorkflowNodeStatus: TypeAlias = Literal[
    "pending", "ready", "running", "completed", "skipped", "failed", "cancelled"
]
"""The state of one node of a workflow graph."""
Activation: TypeAlias = Literal["all", "any", "first"]
FailurePolicy: TypeAlias = Literal["fail-fast", "collect"]
_MAX_SAFE: Final = 2**53 - 1


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


@attrs.frozen(kw_only=True, slots=True)
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
RouteFn: TypeAlias = Callable[[RouteContext], "bool | Awaitable[bool]"]


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


def _clean_id(value: object, label: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise WorkflowGraphError(f"Workflow {label} id must not be empty.")
    return value.strip()


def _check_nodes(nodes: Iterable[WorkflowNode]) -> dict[str, WorkflowNode]:
    by_id: dict[str, WorkflowNode] = {}
    for node in nodes:
        node_id = _clean_id(node.id, "node")
        if node_id in by_id:
            raise WorkflowGraphError(f'Duplicate workflow node "{node_id}".')
        if (node.execute is None) == (node.reduce is None):
            raise WorkflowGraphError(
                f'Workflow node "{node_id}" must define exactly one of execute or reduce.'
            )
        if node.activation not in ("all", "any", "first"):
            raise WorkflowGraphError(
                f'Workflow node "{node_id}" activation must be all, any or first.'
            )
        if node.failure_policy not in ("fail-fast", "collect"):
            raise WorkflowGraphError(
                f'Workflow node "{node_id}" failure policy must be fail-fast or collect.'
            )
        by_id[node_id] = attrs.evolve(node, id=node_id)
    if not by_id:
        raise WorkflowGraphError("WorkflowGraph requires at least one node.")
    return by_id


def _check_edges(
    edges: Iterable[WorkflowEdge], nodes: Mapping[str, WorkflowNode]
) -> list[WorkflowEdge]:
    checked: list[WorkflowEdge] = []
    seen: set[tuple[str, str]] = set()
    for edge in edges:
        source = _clean_id(edge.source, "edge source")
        target = _clean_id(edge.target, "edge target")
        for end in (source, target):
            if end not in nodes:
                raise WorkflowGraphError(f'Workflow edge references unknown node "{end}".')
        if source == target:
            raise WorkflowGraphError(f'Workflow node "{source}" cannot depend on itself.')
        if (source, target) in seen:
            raise WorkflowGraphError(f'Duplicate workflow edge "{source}" -> "{target}".')
        seen.add((source, target))
        checked.append(attrs.evolve(edge, source=source, target=target))
    return sorted(checked, key=lambda edge: (edge.source, edge.target))


def _topological(nodes: Mapping[str, WorkflowNode], edges: list[WorkflowEdge]) -> tuple[str, ...]:
    indegree = dict.fromkeys(nodes, 0)
    outgoing: dict[str, list[str]] = {node: [] for node in nodes}
    for edge in edges:
        indegree[edge.target] += 1
        outgoing[edge.source].append(edge.target)
    ready = sorted(node for node, count in indegree.items() if count == 0)
    order: list[str] = []
    while ready:
        node = ready.pop(0)
        order.append(node)
        for target in sorted(outgoing[node]):
            indegree[target] -= 1
            if indegree[target] == 0:
                ready.append(target)
        ready.sort()
    if len(order) != len(nodes):
        stuck = sorted(node for node in nodes if node not in order)
        raise WorkflowGraphError(f"WorkflowGraph contains a cycle involving: {', '.join(stuck)}.")
    return tuple(order)


async def _call(fn: Callable[[Any], Any], arg: Any) -> Any:
    value = fn(arg)
    if inspect.isawaitable(value):
        value = await value
    return value


class WorkflowGraph:
    """A validated DAG (see the module doc).

    Raises:
        WorkflowGraphError: no nodes ("at least one"), a blank id ("id"), a duplicate node
            ("Duplicate"), not exactly one of execute/reduce ("exactly one"), an unknown edge end
            ("unknown node"), a self edge ("cannot depend on itself"), a duplicate edge
            ("Duplicate workflow edge"), a reducer without predecessor ("requires at least one
            predecessor") or a cycle ("contains a cycle").
    """

    def __init__(self, *, nodes: Iterable[WorkflowNode], edges: Iterable[WorkflowEdge] = ()):
        self._nodes = _check_nodes(nodes)
        self._edges = _check_edges(edges, self._nodes)
        self._incoming: dict[str, list[WorkflowEdge]] = {node: [] for node in self._nodes}
        for edge in self._edges:
            self._incoming[edge.target].append(edge)
        for node_id, node in self._nodes.items():
            if node.reduce is not None and not self._incoming[node_id]:
                raise WorkflowGraphError(
                    f'Workflow reducer "{node_id}" requires at least one predecessor.'
                )
        self._order = _topological(self._nodes, self._edges)

    @property
    def order(self) -> tuple[str, ...]:
        """The lexically smallest topological order."""
        return self._order

    @property
    def nodes(self) -> Mapping[str, WorkflowNode]:
        """The nodes by id."""
        return MappingProxyType(self._nodes)

    @property
    def edges(self) -> tuple[WorkflowEdge, ...]:
        """The edges sorted by ``(source, target)``."""
        return tuple(self._edges)

    def inspect(self) -> JsonObject:
        """``{order, nodes, edges: [{from, to, conditional}]}``."""
        return {
            "order": list(self._order),
            "nodes": list(self._order),
            "edges": [
                {"from": edge.source, "to": edge.target, "conditional": edge.when is not None}
                for edge in self._edges
            ],
        }

    async def execute(
        self, *, input: Any, scope: OrchestrationScope, max_concurrency: int = 8
    ) -> WorkflowGraphResult:
        """Run the graph (see the module doc).

        Raises:
            WorkflowGraphError: ``max_concurrency`` is not a positive safe integer ("positive").
            BaseException: the scope's abort reason when it is (or becomes) aborted.
            WorkflowNodeExecutionError: a node raised.
        """
        if type(max_concurrency) is not int or not 1 <= max_concurrency <= _MAX_SAFE:
            raise WorkflowGraphError("Workflow maxConcurrency must be a positive safe integer.")
        scope.signal.throw_if_aborted()
        run = _Execution(self, input, scope, max_concurrency)
        return await run.execute()


_SETTLED: Final = frozenset({"completed", "skipped", "failed", "cancelled"})
_PRODUCED: Final = frozenset({"completed", "failed"})  # a collected failure feeds its successors


def _collectable(error: BaseException) -> bool:
    """Errors a ``collect`` node turns into its output (never a durable run's own interrupts)."""
    return isinstance(error, Exception) and not getattr(error, "interrupts_workflow", False)


class _Execution:
    """One execution of a graph.

    Activation is incremental (each edge is decided once, when its source settles, and a node
    when its last predecessor settles, or for ``first`` at its first active edge) and
    completions arrive on one queue (no wait over every running task per step).
    """

    def __init__(
        self, graph: WorkflowGraph, input: Any, scope: OrchestrationScope, limit: int
    ) -> None:
        self.graph = graph
        self.input = input
        self.scope = scope
        self.limit = limit
        order = graph.order
        self.rank = {node: index for index, node in enumerate(order)}
        self.status: dict[str, WorkflowNodeStatus] = dict.fromkeys(order, "pending")
        self.outputs: dict[str, Any] = {}
        self.incoming: dict[str, list[WorkflowEdge]] = graph._incoming  # pyright: ignore[reportPrivateUsage]
        self.waiting = {node: len(self.incoming[node]) for node in order}
        self.outgoing: dict[str, list[WorkflowEdge]] = {node: [] for node in order}
        for edge in graph.edges:
            self.outgoing[edge.source].append(edge)
        self.edges: dict[tuple[str, str], bool] = {}  # each edge decided once
        self.settled: list[str] = []  # nodes whose successors still have to be told
        self.ready: list[int] = []  # heap of topological ranks
        self.running: dict[asyncio.Task[Any], str] = {}
        self.raced: set[str] = set()  # running nodes a first-join cancelled
        self.finished: asyncio.Queue[asyncio.Task[Any]] = asyncio.Queue()
        self.controller = AbortController()

    def _ordered_outputs(self) -> Mapping[str, Any]:
        if not self.outputs:
            return MappingProxyType({})
        return MappingProxyType(
            {node: self.outputs[node] for node in self.graph.order if node in self.outputs}
        )

    async def _edge(self, edge: WorkflowEdge) -> bool:
        """Whether ``edge`` is active (its source produced and ``when`` holds), decided once."""
        key = (edge.source, edge.target)
        known = self.edges.get(key)
        if known is not None:
            return known
        active = self.status[edge.source] in _PRODUCED
        if active and edge.when is not None:
            self.scope.signal.throw_if_aborted()
            route = RouteContext(
                input=self.input,
                scope=self.scope,
                source=edge.source,
                target=edge.target,
                source_output=self.outputs.get(edge.source),
                outputs=self._ordered_outputs(),
            )
            active = bool(await _call(edge.when, route))
        self.edges[key] = active
        return active

    def _ready(self, node_id: str) -> None:
        self.status[node_id] = "ready"
        heapq.heappush(self.ready, self.rank[node_id])

    async def _decide(self, node_id: str) -> None:
        """All predecessors settled: ready or skipped (``first`` fires earlier, see below)."""
        if self.status[node_id] != "pending":
            return
        incoming = self.incoming[node_id]
        flags = [await self._edge(edge) for edge in incoming]
        node = self.graph.nodes[node_id]
        if not incoming:
            ready = True
        elif node.activation == "all":
            ready = all(flags)
        else:
            ready = any(flags)
        if ready:
            self._ready(node_id)
        else:
            self.status[node_id] = "skipped"
            self.settled.append(node_id)

    async def _first(self, edge: WorkflowEdge) -> None:
        """A predecessor of a ``first`` node settled: fire the node at its first active edge."""
        if self.status[edge.target] != "pending" or not await self._edge(edge):
            return
        self._ready(edge.target)
        self._cancel_losers(edge.target)

    def _cancel_losers(self, winner_of: str) -> None:
        """Cancel predecessors of a fired ``first`` node that no undecided node still needs."""
        for edge in self.incoming[winner_of]:
            loser = edge.source
            if self.status[loser] in _SETTLED:
                continue
            if any(self.status[e.target] == "pending" for e in self.outgoing[loser]):
                continue
            if self.status[loser] == "running":
                self.raced.add(loser)
                for task, node_id in self.running.items():
                    if node_id == loser:
                        task.cancel()
            else:  # pending or ready: never starts
                self.status[loser] = "cancelled"
                self.settled.append(loser)

    async def _propagate(self) -> None:
        """Tell the successors of every settled node; decide those now fully settled."""
        while self.settled:
            self.settled.sort(key=self.rank.__getitem__, reverse=True)
            node_id = self.settled.pop()
            decided: list[str] = []
            for edge in self.outgoing[node_id]:
                self.waiting[edge.target] -= 1
                if self.graph.nodes[edge.target].activation == "first":
                    await self._first(edge)
                if self.waiting[edge.target] == 0:
                    decided.append(edge.target)
            for target in sorted(decided, key=self.rank.__getitem__):
                await self._decide(target)

    def _start(self) -> None:
        order = self.graph.order
        while self.ready and len(self.running) < self.limit:
            node_id = order[heapq.heappop(self.ready)]
            if self.status[node_id] != "ready":
                continue  # a first-join cancelled it before it started
            node = self.graph.nodes[node_id]
            inputs: Mapping[str, Any] = MappingProxyType({})
            if node.reduce is not None:
                first = node.activation == "first"  # a race join sees its winner(s) only
                inputs = MappingProxyType(
                    {
                        edge.source: self.outputs[edge.source]
                        for edge in self.incoming[node_id]
                        if self.status[edge.source] in _PRODUCED
                        and (not first or self.edges.get((edge.source, edge.target)) is True)
                    }
                )
            context = NodeContext(
                node_id=node_id,
                input=self.input,
                scope=self.scope,
                signal=self.controller.signal,
                outputs=self._ordered_outputs(),
                inputs=inputs,
            )
            fn = node.execute if node.execute is not None else node.reduce
            assert fn is not None
            task = asyncio.get_running_loop().create_task(_call(fn, context))
            task.add_done_callback(self.finished.put_nowait)
            self.running[task] = node_id
            self.status[node_id] = "running"

    def _settle(self, node_id: str, task: asyncio.Task[Any]) -> None:
        """Record a finished node: completed, collected failure, race loser, or raise."""
        if task.cancelled():
            if node_id not in self.raced:
                raise asyncio.CancelledError()
            self.status[node_id] = "cancelled"
        elif (error := task.exception()) is not None:
            node = self.graph.nodes[node_id]
            collect = node.failure_policy == "collect"
            if not collect or self.scope.signal.aborted or not _collectable(error):
                self.controller.abort(error)
                raise WorkflowNodeExecutionError(node_id, error)
            self.outputs[node_id] = WorkflowNodeFailure(node_id=node_id, error=ChildError.of(error))
            self.status[node_id] = "failed"
        else:
            self.outputs[node_id] = task.result()
            self.status[node_id] = "completed"
        self.settled.append(node_id)

    async def _cancel_running(self) -> None:
        tasks = list(self.running)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        self.running.clear()

    async def _next_finished(self, aborted: asyncio.Future[object]) -> asyncio.Task[Any]:
        if self.finished.qsize():
            return self.finished.get_nowait()
        getter = asyncio.ensure_future(self.finished.get())
        try:
            await asyncio.wait({getter, aborted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not getter.done():
                getter.cancel()
        if getter.done() and not getter.cancelled():
            return getter.result()
        self.scope.signal.throw_if_aborted()
        self.controller.signal.throw_if_aborted()
        raise asyncio.CancelledError()  # pragma: no cover - aborted without a reason

    async def execute(self) -> WorkflowGraphResult:
        remove = self.scope.signal.add_listener(self.controller.abort)
        aborted: asyncio.Future[object] = asyncio.get_running_loop().create_future()

        def on_abort(reason: object) -> None:
            if not aborted.done():
                aborted.set_result(reason)

        remove_abort = self.controller.signal.add_listener(on_abort)
        try:
            for node_id in self.graph.order:
                if self.waiting[node_id] == 0:
                    await self._decide(node_id)
            await self._propagate()
            while True:
                self._start()
                if not self.running:
                    if all(s in _SETTLED for s in self.status.values()):
                        break
                    raise WorkflowGraphError("Workflow scheduler reached an invalid stalled state.")
                task = await self._next_finished(aborted)
                node_id = self.running.pop(task, None)
                if node_id is None:
                    continue
                self._settle(node_id, task)
                await self._propagate()
        finally:
            await self._cancel_running()
            self.controller.abort(OrchestrationError("Workflow execution finished."))
            remove_abort()
            remove()
            if not aborted.done():
                aborted.cancel()
        return WorkflowGraphResult(
            order=self.graph.order,
            outputs=self._ordered_outputs(),
            statuses=MappingProxyType(dict(self.status)),
        )
