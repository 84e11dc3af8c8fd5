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
import time
from collections import deque
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

from actoviq.core import AbortController, JsonObject
from actoviq.orchestration.errors import OrchestrationError
from actoviq.orchestration.graph_build import (
    async_def,
    call,
    check_edges,
    check_nodes,
    clean_id,
    topological,
)
from actoviq.orchestration.graph_events import NODE_FRAME, GraphEvents, NodeEventFrame
from actoviq.orchestration.graph_model import (
    MAX_SAFE,
    Activation,
    FailurePolicy,
    NodeContext,
    RouteContext,
    WorkflowEdge,
    WorkflowGraphError,
    WorkflowGraphResult,
    WorkflowNode,
    WorkflowNodeExecutionError,
    WorkflowNodeFailure,
    WorkflowNodeStatus,
    node_context,
)
from actoviq.orchestration.outcomes import ChildError
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


class WorkflowGraph:
    """A validated DAG (see the module doc); ``id`` names it in its events.

    Raises:
        WorkflowGraphError: no nodes ("at least one"), a blank id ("id"), a duplicate node
            ("Duplicate"), not exactly one of execute/reduce ("exactly one"), an unknown edge end
            ("unknown node"), a self edge ("cannot depend on itself"), a duplicate edge
            ("Duplicate workflow edge"), a reducer without predecessor ("requires at least one
            predecessor") or a cycle ("contains a cycle").
    """

    def __init__(
        self,
        *,
        nodes: Iterable[WorkflowNode],
        edges: Iterable[WorkflowEdge] = (),
        id: str = "workflow",
    ) -> None:
        self._id = clean_id(id, "graph")
        self._attempts: Mapping[str, int] = {}  # a durable run's attempt per node (events)
        self._replayed: frozenset[str] = frozenset()  # a durable run's stored nodes (events)
        self._nodes = check_nodes(nodes)
        self._edges = check_edges(edges, self._nodes)
        self._incoming: dict[str, list[WorkflowEdge]] = {node: [] for node in self._nodes}
        for edge in self._edges:
            self._incoming[edge.target].append(edge)
        for node_id, node in self._nodes.items():
            if node.reduce is not None and not self._incoming[node_id]:
                raise WorkflowGraphError(
                    f'Workflow reducer "{node_id}" requires at least one predecessor.'
                )
        self._order = topological(self._nodes, self._edges)
        # Static tables every execution reads (never written by one).
        self._rank = {node: index for index, node in enumerate(self._order)}
        self._waiting = {node: len(self._incoming[node]) for node in self._order}
        self._outgoing: dict[str, list[WorkflowEdge]] = {node: [] for node in self._order}
        for edge in self._edges:
            self._outgoing[edge.source].append(edge)
        # The successors of each node whose edges all are plain (no ``when``) into ``all``/``any``
        # joins: its completion only counts down their predecessors (see ``_Execution._done``).
        self._plain_targets: dict[str, tuple[str, ...] | None] = {}
        for node_id in self._nodes:
            outgoing = self._outgoing[node_id]
            plain = all(
                edge.when is None and self._nodes[edge.target].activation != "first"
                for edge in outgoing
            )
            self._plain_targets[node_id] = (
                tuple(edge.target for edge in outgoing) if plain else None
            )
        # Nodes whose function is a plain ``async def``: their task runs its coroutine directly.
        self._coroutine_nodes = frozenset(
            node_id
            for node_id, node in self._nodes.items()
            if async_def(node.execute or node.reduce)
        )

    @property
    def id(self) -> str:
        """The graph's id (in its events; default ``"workflow"``)."""
        return self._id

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
        if type(max_concurrency) is not int or not 1 <= max_concurrency <= MAX_SAFE:
            raise WorkflowGraphError("Workflow maxConcurrency must be a positive safe integer.")
        scope.signal.throw_if_aborted()
        run = _Execution(self, input, scope, max_concurrency)
        return await run.execute()


_SETTLED: Final = frozenset({"completed", "skipped", "failed", "cancelled"})
_NO_OUTPUTS: Final[Mapping[str, Any]] = MappingProxyType({})  # read-only: one for every node
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
        self.order = order
        self.nodes: dict[str, WorkflowNode] = graph._nodes  # pyright: ignore[reportPrivateUsage]
        self.rank = graph._rank  # pyright: ignore[reportPrivateUsage]
        self.status: dict[str, WorkflowNodeStatus] = dict.fromkeys(order, "pending")
        self.outputs: dict[str, Any] = {}
        self.incoming: dict[str, list[WorkflowEdge]] = graph._incoming  # pyright: ignore[reportPrivateUsage]
        self.coroutine_nodes: frozenset[str] = graph._coroutine_nodes  # pyright: ignore[reportPrivateUsage]
        self.plain_targets = graph._plain_targets  # pyright: ignore[reportPrivateUsage]
        self.waiting = graph._waiting.copy()  # pyright: ignore[reportPrivateUsage]
        self.outgoing: dict[str, list[WorkflowEdge]] = graph._outgoing  # pyright: ignore[reportPrivateUsage]
        self.edges: dict[tuple[str, str], bool] = {}  # each edge decided once
        self.settled: list[str] = []  # nodes whose successors still have to be told
        self.ready: list[int] = []  # heap of topological ranks
        self.running: dict[asyncio.Task[Any], str] = {}
        self.raced: set[str] = set()  # running nodes a first-join cancelled
        self.events = GraphEvents(graph.id, scope)
        self.skipped: list[tuple[str, str]] = []  # (node, route|race) not yet announced
        self.finished: deque[asyncio.Task[Any]] = deque()  # done, not yet settled
        self.wake: asyncio.Future[None] | None = None  # set while waiting for a completion
        self.controller = AbortController()

    def _ordered_outputs(self) -> Mapping[str, Any]:
        if not self.outputs:
            return _NO_OUTPUTS
        return MappingProxyType(
            {node: self.outputs[node] for node in self.order if node in self.outputs}
        )

    def _plain_edge(self, edge: WorkflowEdge) -> bool:
        """:meth:`_edge` of an edge without ``when`` (no coroutine: a join may have hundreds)."""
        key = (edge.source, edge.target)
        known = self.edges.get(key)
        if known is None:
            known = self.edges[key] = self.status[edge.source] in _PRODUCED
        return known

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
            active = bool(await call(edge.when, route))
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
        if not incoming:
            self._ready(node_id)
            return
        flags = [
            self._plain_edge(edge) if edge.when is None else await self._edge(edge)
            for edge in incoming
        ]
        node = self.nodes[node_id]
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
            self.skipped.append((node_id, "route"))

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
                self.skipped.append((loser, "race"))

    async def _propagate(self) -> None:
        """Tell the successors of every settled node; decide those now fully settled."""
        while self.settled:
            self.settled.sort(key=self.rank.__getitem__, reverse=True)
            node_id = self.settled.pop()
            decided: list[str] = []
            for edge in self.outgoing[node_id]:
                self.waiting[edge.target] -= 1
                if self.nodes[edge.target].activation == "first":
                    await self._first(edge)
                if self.waiting[edge.target] == 0:
                    decided.append(edge.target)
            for target in sorted(decided, key=self.rank.__getitem__):
                await self._decide(target)

    def _start(self) -> None:
        ready = self.ready
        if not ready:
            return
        order, status, running, limit = self.order, self.status, self.running, self.limit
        create_task = asyncio.get_running_loop().create_task
        observed = self.events.enabled
        signal = self.controller.signal
        while ready and len(running) < limit:
            node_id = order[heapq.heappop(ready)]
            if status[node_id] != "ready":
                continue  # a first-join cancelled it before it started
            node = self.nodes[node_id]
            inputs: Mapping[str, Any] = _NO_OUTPUTS
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
            context = node_context(
                node_id,
                self.input,
                self.scope,
                signal,
                self._ordered_outputs() if self.outputs else _NO_OUTPUTS,
                inputs,
            )
            fn = node.execute if node.execute is not None else node.reduce
            assert fn is not None
            if observed:
                run = self._observed(node, context)
            elif node_id in self.coroutine_nodes:
                run = fn(context)  # one coroutine less than call
            else:
                run = call(fn, context)
            task = create_task(run)
            task.add_done_callback(self._done)
            running[task] = node_id
            status[node_id] = "running"

    def _settle(self, node_id: str, task: asyncio.Task[Any]) -> None:
        """Record a finished node: completed, collected failure, race loser, or raise."""
        if task.cancelled():
            if node_id not in self.raced:
                # Only a race cancels a running node here, so the node raised CancelledError
                # itself: a node failure (typed), not a cancellation of the graph's caller.
                error = asyncio.CancelledError(f'Workflow node "{node_id}" cancelled itself.')
                self.controller.abort(error)
                raise WorkflowNodeExecutionError(node_id, error)
            self.status[node_id] = "cancelled"
        elif (error := task.exception()) is not None:
            node = self.nodes[node_id]
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

    async def _observed(self, node: WorkflowNode, context: NodeContext) -> Any:
        """Run ``node`` in its event frame: started, then completed/failed/cancelled."""
        events = self.events
        attempt = self.graph._attempts.get(node.id, 1)  # pyright: ignore[reportPrivateUsage]
        frame = NodeEventFrame(events.graph_run_id, node.id, attempt, self.scope.run_id)
        frame.replayed = node.id in self.graph._replayed  # pyright: ignore[reportPrivateUsage]
        NODE_FRAME.set(frame)  # the node task's own context: its child runs report to it
        fn = node.execute if node.execute is not None else node.reduce
        assert fn is not None
        started = time.perf_counter()
        await events.node_started(frame, "execute" if node.execute is not None else "reduce")
        try:
            value = await call(fn, context)
        except asyncio.CancelledError:
            reason = "race" if node.id in self.raced else "graph"
            await events.node_settled(frame, started, "cancelled", reason=reason)
            raise
        except BaseException as error:
            policy = node.failure_policy
            await events.node_settled(frame, started, "failed", error=error, policy=policy)
            raise
        await events.node_settled(frame, started, "completed")
        return value

    async def _announce_skipped(self) -> None:
        skipped, self.skipped = self.skipped, []
        if self.events.enabled:
            for node_id, reason in skipped:
                await self.events.node_skipped(node_id, reason)

    async def _cancel_running(self) -> None:
        tasks = list(self.running)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        self.running.clear()

    def _done(self, task: asyncio.Task[Any]) -> None:
        """A node task finished: settled here when that changes nothing else, else queued.

        A node that completed, whose edges are all plain into ``all``/``any`` joins that still
        wait for another predecessor, while other nodes run and none waits for a slot, only
        counts its successors down: it is settled in place, without waking the scheduler (a
        fan-out of independent nodes costs one scheduler step, not one per node). Anything
        else (a failure, a cancellation, a join it completes, a free slot for a ready node,
        the last running node) goes through the scheduler as before.
        """
        running = self.running
        node_id = running.get(task)
        if node_id is not None and len(running) > 1 and not self.ready and not task.cancelled():
            targets = self.plain_targets[node_id]
            if targets is not None and task.exception() is None:
                waiting = self.waiting
                for target in targets:
                    if waiting[target] < 2:
                        break
                else:
                    for target in targets:
                        waiting[target] -= 1
                    del running[task]
                    self.outputs[node_id] = task.result()
                    self.status[node_id] = "completed"
                    return
        self.finished.append(task)
        self._wake()

    def _wake(self, _reason: object = None) -> None:
        wake = self.wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def _next_finished(self) -> asyncio.Task[Any]:
        """The next finished node task (one future per wait; an abort wakes it and raises)."""
        while not self.finished:
            self.scope.signal.throw_if_aborted()
            self.controller.signal.throw_if_aborted()
            self.wake = asyncio.get_running_loop().create_future()
            try:
                await self.wake
            finally:
                self.wake = None
        return self.finished.popleft()

    async def execute(self) -> WorkflowGraphResult:
        remove = self.scope.signal.add_listener(self.controller.abort)
        remove_abort = self.controller.signal.add_listener(self._wake)
        events = self.events
        started = time.perf_counter()
        failure: BaseException | None = None
        if events.enabled:
            await events.graph_started(len(self.order))
        try:
            for node_id in self.order:
                if self.waiting[node_id] == 0:
                    await self._decide(node_id)
            await self._propagate()
            if self.skipped:
                await self._announce_skipped()
            while True:
                self._start()
                if not self.running:
                    if all(s in _SETTLED for s in self.status.values()):
                        break
                    raise WorkflowGraphError("Workflow scheduler reached an invalid stalled state.")
                task = await self._next_finished()
                node_id = self.running.pop(task, None)
                if node_id is None:
                    continue
                self._settle(node_id, task)
                await self._propagate()
                if self.skipped:
                    await self._announce_skipped()
        except BaseException as error:
            failure = error
            raise
        finally:
            await self._cancel_running()
            self.controller.abort(OrchestrationError("Workflow execution finished."))
            remove_abort()
            remove()
            if failure is not None and events.enabled:
                failed_node = (
                    failure.node_id if type(failure) is WorkflowNodeExecutionError else None
                )
                await events.graph_failed(started, failure, failed_node)
        if events.enabled:
            await events.graph_completed(started, self.status.values())
        return WorkflowGraphResult(
            order=self.order,
            outputs=self._ordered_outputs(),
            statuses=MappingProxyType(dict(self.status)),
        )
