"""``WorkflowGraph``: a deterministic, immutable DAG of nodes over one scope (spec 04 §1.10).

The in-memory core the presets build on: nodes (``execute`` or ``reduce``), edges with optional
``when`` predicates, ``all``/``any`` activation, the lexically smallest topological order, a
``max_concurrency`` of ready nodes, and the first node failure failing the graph as
:class:`WorkflowNodeExecutionError`. Unlike the reference, the nodes still running when one fails
are cancelled and awaited (structured concurrency), never left behind.

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
from actoviq.orchestration.scope import OrchestrationScope

__all__ = [
    "NodeContext",
    "RouteContext",
    "WorkflowEdge",
    "WorkflowGraph",
    "WorkflowGraphError",
    "WorkflowGraphResult",
    "WorkflowNode",
    "WorkflowNodeExecutionError",
    "WorkflowNodeStatus",
]

WorkflowNodeStatus: TypeAlias = Literal["pending", "ready", "running", "completed", "skipped"]
Activation: TypeAlias = Literal["all", "any"]
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


@attrs.frozen(kw_only=True, slots=True)
class WorkflowNode:
    """One node: exactly one of ``execute`` or ``reduce`` (sync or async)."""

    id: str
    execute: NodeFn | None = None
    reduce: NodeFn | None = None
    activation: Activation = "all"


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
        if node.activation not in ("all", "any"):
            raise WorkflowGraphError(f'Workflow node "{node_id}" activation must be all or any.')
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


class _Execution:
    """One execution of a graph.

    Activation is incremental (each edge is decided once, when its target's last predecessor
    settles) and completions arrive on one queue (no wait over every running task per step).
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
        self.waiting = {node: len(graph._incoming[node]) for node in order}  # pyright: ignore[reportPrivateUsage]
        self.outgoing: dict[str, list[WorkflowEdge]] = {node: [] for node in order}
        for edge in graph.edges:
            self.outgoing[edge.source].append(edge)
        self.settled: list[str] = []  # nodes whose successors still have to be told
        self.ready: list[int] = []  # heap of topological ranks
        self.running: dict[asyncio.Task[Any], str] = {}
        self.finished: asyncio.Queue[asyncio.Task[Any]] = asyncio.Queue()
        self.controller = AbortController()

    def _ordered_outputs(self) -> Mapping[str, Any]:
        if not self.outputs:
            return MappingProxyType({})
        return MappingProxyType(
            {node: self.outputs[node] for node in self.graph.order if node in self.outputs}
        )

    async def _decide(self, node_id: str) -> None:
        """All predecessors settled: evaluate the incoming edges once, then ready or skipped."""
        incoming = self.graph._incoming[node_id]  # pyright: ignore[reportPrivateUsage]
        flags: list[bool] = []
        for edge in incoming:
            active = self.status[edge.source] == "completed"
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
            flags.append(active)
        node = self.graph.nodes[node_id]
        if not incoming:
            ready = True
        elif node.activation == "all":
            ready = all(flags)
        else:
            ready = any(flags)
        if ready:
            self.status[node_id] = "ready"
            heapq.heappush(self.ready, self.rank[node_id])
        else:
            self.status[node_id] = "skipped"
            self.settled.append(node_id)

    async def _propagate(self) -> None:
        """Tell the successors of every settled node; decide those now fully settled."""
        while self.settled:
            self.settled.sort(key=self.rank.__getitem__, reverse=True)
            node_id = self.settled.pop()
            decided: list[str] = []
            for edge in self.outgoing[node_id]:
                self.waiting[edge.target] -= 1
                if self.waiting[edge.target] == 0:
                    decided.append(edge.target)
            for target in sorted(decided, key=self.rank.__getitem__):
                await self._decide(target)

    def _start(self) -> None:
        order = self.graph.order
        while self.ready and len(self.running) < self.limit:
            node_id = order[heapq.heappop(self.ready)]
            node = self.graph.nodes[node_id]
            inputs: Mapping[str, Any] = MappingProxyType({})
            if node.reduce is not None:
                incoming = self.graph._incoming[node_id]  # pyright: ignore[reportPrivateUsage]
                inputs = MappingProxyType(
                    {
                        edge.source: self.outputs[edge.source]
                        for edge in incoming
                        if self.status[edge.source] == "completed"
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
                    if all(s in ("completed", "skipped") for s in self.status.values()):
                        break
                    raise WorkflowGraphError("Workflow scheduler reached an invalid stalled state.")
                task = await self._next_finished(aborted)
                node_id = self.running.pop(task, None)
                if node_id is None:
                    continue
                if task.cancelled():
                    raise asyncio.CancelledError()
                error = task.exception()
                if error is not None:
                    self.controller.abort(error)
                    raise WorkflowNodeExecutionError(node_id, error)
                self.outputs[node_id] = task.result()
                self.status[node_id] = "completed"
                self.settled.append(node_id)
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
