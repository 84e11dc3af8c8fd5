"""Typed graph- and node-level events of :class:`~actoviq.orchestration.graph.WorkflowGraph`.

A graph execution emits, **in the run its scope belongs to** (the orchestration root opened with
:meth:`ChildRunner.open_root <actoviq.orchestration.child_runner.ChildRunner.open_root>`, or the
manager run whose tool executes the graph, else the nearest live ancestor; the route of every
orchestration event, :class:`~actoviq.orchestration.events.ScopeEvents`), so the events reach the
runtime's sinks, subscribers and OpenTelemetry span like the run's own, after the same redaction
processor:

* ``orchestration.graph.started`` / ``.completed`` / ``.failed`` — one execution;
* ``orchestration.graph.node.started`` / ``.completed`` / ``.failed`` — one node execution, with
  its ``attempt``, its ``durationMs`` and the run ids of the agent runs it started
  (``childRunIds``); those runs' ``orchestration.child.*`` events carry ``graphRunId`` and
  ``nodeId`` back;
* ``orchestration.graph.node.skipped`` — a node that never ran: every route to it was inactive
  (``reason: "route"``) or a race join fired without it (``"race"``);
* ``orchestration.graph.node.cancelled`` — a running node stopped by a race join or by its
  graph failing.

A node a continued durable graph run did not execute (it had completed before: its stored output
is returned) has ``replayed: true`` on its node events; a node that ran has no ``replayed`` key.

No event carries content: no graph input, node input or output. What is left (ids, statuses,
counts, durations, the ``{name, message, code?}`` of an error) goes through the dispatcher's
redaction like every run event, so a secret in an error message is removed when the runtime's
policy scans text. A graph executed in a scope no runner routes (a bare ``RunTree`` scope, a root
made with ``create_root`` and never opened) emits nothing and costs nothing.

Each type has a class (a slot-free :class:`~actoviq.events.RunEvent` subclass registered with
:func:`~actoviq.events.register_event_class`) and a ``TypedDict`` for its ``data``, as the
runtime's catalogue does, so ``isinstance`` and ``match`` narrow ``data``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final, Literal, NotRequired, TypedDict

from actoviq.core import JsonObject
from actoviq.events import ErrorData, RunEvent, register_event_class, register_event_type
from actoviq.orchestration.events import ScopeEvents
from actoviq.orchestration.outcomes import ChildError
from actoviq.orchestration.scope import OrchestrationScope

__all__ = [
    "GRAPH_EVENT_TYPES",
    "GraphCompletedData",
    "GraphCompletedEvent",
    "GraphFailedData",
    "GraphFailedEvent",
    "GraphNodeCancelledData",
    "GraphNodeCancelledEvent",
    "GraphNodeCompletedData",
    "GraphNodeCompletedEvent",
    "GraphNodeFailedData",
    "GraphNodeFailedEvent",
    "GraphNodeSkippedData",
    "GraphNodeSkippedEvent",
    "GraphNodeStartedData",
    "GraphNodeStartedEvent",
    "GraphStartedData",
    "GraphStartedEvent",
    "NodeEventFrame",
    "current_node_frame",
]

GRAPH_EVENT_TYPES: Final = (
    "orchestration.graph.started",
    "orchestration.graph.completed",
    "orchestration.graph.failed",
    "orchestration.graph.node.started",
    "orchestration.graph.node.completed",
    "orchestration.graph.node.failed",
    "orchestration.graph.node.skipped",
    "orchestration.graph.node.cancelled",
)
"""Every event type a workflow graph emits."""


class GraphStartedData(TypedDict):
    """``orchestration.graph.started``: an execution of a graph began.

    ``parentGraphRunId``/``parentNodeId``/``iteration`` are set when the graph runs inside a node
    of another graph (a loop body: ``iteration`` is the round).
    """

    graphId: str
    graphRunId: str
    runId: str
    nodeCount: int
    parentGraphRunId: NotRequired[str]
    parentNodeId: NotRequired[str]
    iteration: NotRequired[int]


class GraphCompletedData(TypedDict):
    """``orchestration.graph.completed``: every node settled; node counts by status."""

    graphId: str
    graphRunId: str
    runId: str
    durationMs: float
    completed: int
    failed: int
    skipped: int
    cancelled: int


class GraphFailedData(TypedDict):
    """``orchestration.graph.failed``: a node failed the graph (``nodeId``), or it was aborted."""

    graphId: str
    graphRunId: str
    runId: str
    durationMs: float
    error: ErrorData
    nodeId: NotRequired[str]


class GraphNodeStartedData(TypedDict):
    """``orchestration.graph.node.started``: a node began (``kind``: execute or reduce)."""

    graphId: str
    graphRunId: str
    nodeId: str
    attempt: int
    kind: Literal["execute", "reduce"]
    replayed: NotRequired[bool]


class GraphNodeCompletedData(TypedDict):
    """``orchestration.graph.node.completed``: a node returned its output (not included)."""

    graphId: str
    graphRunId: str
    nodeId: str
    attempt: int
    durationMs: float
    childRunIds: list[str]
    replayed: NotRequired[bool]


class GraphNodeFailedData(TypedDict):
    """``orchestration.graph.node.failed``: a node raised; ``collect`` nodes let the graph go on."""

    graphId: str
    graphRunId: str
    nodeId: str
    attempt: int
    durationMs: float
    childRunIds: list[str]
    failurePolicy: Literal["fail-fast", "collect"]
    error: ErrorData
    replayed: NotRequired[bool]


class GraphNodeSkippedData(TypedDict):
    """``orchestration.graph.node.skipped``: a node that never ran (``route`` or ``race``)."""

    graphId: str
    graphRunId: str
    nodeId: str
    reason: Literal["route", "race"]


class GraphNodeCancelledData(TypedDict):
    """``orchestration.graph.node.cancelled``: a running node was stopped (``race``/``graph``)."""

    graphId: str
    graphRunId: str
    nodeId: str
    attempt: int
    durationMs: float
    childRunIds: list[str]
    reason: Literal["race", "graph"]
    replayed: NotRequired[bool]


class GraphStartedEvent(RunEvent):
    """``orchestration.graph.started`` (see :class:`GraphStartedData`)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["orchestration.graph.started"]
        data: GraphStartedData  # pyright: ignore[reportIncompatibleVariableOverride]


class GraphCompletedEvent(RunEvent):
    """``orchestration.graph.completed`` (see :class:`GraphCompletedData`)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["orchestration.graph.completed"]
        data: GraphCompletedData  # pyright: ignore[reportIncompatibleVariableOverride]


class GraphFailedEvent(RunEvent):
    """``orchestration.graph.failed`` (see :class:`GraphFailedData`)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["orchestration.graph.failed"]
        data: GraphFailedData  # pyright: ignore[reportIncompatibleVariableOverride]


class GraphNodeStartedEvent(RunEvent):
    """``orchestration.graph.node.started`` (see :class:`GraphNodeStartedData`)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["orchestration.graph.node.started"]
        data: GraphNodeStartedData  # pyright: ignore[reportIncompatibleVariableOverride]


class GraphNodeCompletedEvent(RunEvent):
    """``orchestration.graph.node.completed`` (see :class:`GraphNodeCompletedData`)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["orchestration.graph.node.completed"]
        data: GraphNodeCompletedData  # pyright: ignore[reportIncompatibleVariableOverride]


class GraphNodeFailedEvent(RunEvent):
    """``orchestration.graph.node.failed`` (see :class:`GraphNodeFailedData`)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["orchestration.graph.node.failed"]
        data: GraphNodeFailedData  # pyright: ignore[reportIncompatibleVariableOverride]


class GraphNodeSkippedEvent(RunEvent):
    """``orchestration.graph.node.skipped`` (see :class:`GraphNodeSkippedData`)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["orchestration.graph.node.skipped"]
        data: GraphNodeSkippedData  # pyright: ignore[reportIncompatibleVariableOverride]


class GraphNodeCancelledEvent(RunEvent):
    """``orchestration.graph.node.cancelled`` (see :class:`GraphNodeCancelledData`)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["orchestration.graph.node.cancelled"]
        data: GraphNodeCancelledData  # pyright: ignore[reportIncompatibleVariableOverride]


_CLASSES: Final[tuple[type[RunEvent], ...]] = (
    GraphStartedEvent,
    GraphCompletedEvent,
    GraphFailedEvent,
    GraphNodeStartedEvent,
    GraphNodeCompletedEvent,
    GraphNodeFailedEvent,
    GraphNodeSkippedEvent,
    GraphNodeCancelledEvent,
)

for _name, _cls in zip(GRAPH_EVENT_TYPES, _CLASSES, strict=True):
    register_event_type(_name, description="Actoviq workflow graph (actoviq.orchestration).")
    register_event_class(_name, _cls)


class NodeEventFrame:
    """The node a task runs in (a context variable): child runs started there report to it.

    ``ChildRunner`` adds the run id of each child it starts under the graph's scope
    (:attr:`run_id`) to :attr:`child_run_ids` and stamps that child's ``orchestration.child.*``
    events with :attr:`graph_run_id` and :attr:`node_id` (grandchildren started by those runs'
    own tools belong to their parents, not to the node); a graph executed inside the node (a
    loop body) names it as its parent.
    """

    __slots__ = (
        "attempt",
        "child_run_ids",
        "graph_run_id",
        "iteration",
        "node_id",
        "replayed",
        "run_id",
    )

    def __init__(self, graph_run_id: str, node_id: str, attempt: int = 1, run_id: str = "") -> None:
        self.graph_run_id = graph_run_id
        self.node_id = node_id
        self.attempt = attempt
        self.run_id = run_id  # the graph's scope: only its direct children belong to the node
        self.iteration: int | None = None
        self.child_run_ids: list[str] = []
        self.replayed = False  # a durable run returned the node's stored output (no execution)


NODE_FRAME: ContextVar[NodeEventFrame | None] = ContextVar(
    "actoviq_orchestration_graph_node", default=None
)


def current_node_frame() -> NodeEventFrame | None:
    """The workflow node the calling task runs in (None outside graphs)."""
    return NODE_FRAME.get()


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


class GraphEvents:
    """Emits one execution's events (a no-op when nothing routes the scope's run)."""

    __slots__ = ("base", "enabled", "events", "graph_run_id", "scope")

    def __init__(self, graph_id: str, scope: OrchestrationScope) -> None:
        self.scope = scope
        events = ScopeEvents.find(scope.services)
        if events is not None and not events.routes(scope.run_id, scope.lineage):
            events = None
        self.events = events
        self.enabled = events is not None
        """Whether events are delivered somewhere."""
        self.graph_run_id = str(uuid.uuid4()) if events is not None else ""
        self.base: JsonObject = {"graphId": graph_id, "graphRunId": self.graph_run_id}

    async def emit(self, type: str, data: JsonObject) -> None:
        """Emit ``type`` with the base fields and ``data`` (nothing when not enabled)."""
        events = self.events
        if events is None:
            return
        scope = self.scope
        await events.emit(scope.run_id, type, {**self.base, **data}, ancestors=scope.lineage)

    async def graph_started(self, node_count: int) -> None:
        """``orchestration.graph.started`` (with the enclosing node, when there is one)."""
        data: JsonObject = {"runId": self.scope.run_id, "nodeCount": node_count}
        parent = NODE_FRAME.get()
        if parent is not None:
            data["parentGraphRunId"] = parent.graph_run_id
            data["parentNodeId"] = parent.node_id
            if parent.iteration is not None:
                data["iteration"] = parent.iteration
        await self.emit("orchestration.graph.started", data)

    async def graph_completed(self, started: float, statuses: Iterable[str]) -> None:
        """``orchestration.graph.completed`` with the node counts."""
        counts = {"completed": 0, "failed": 0, "skipped": 0, "cancelled": 0}
        for status in statuses:
            if status in counts:
                counts[status] += 1
        await self.emit(
            "orchestration.graph.completed",
            {"runId": self.scope.run_id, "durationMs": _ms(started), **counts},
        )

    async def graph_failed(self, started: float, error: BaseException, node_id: str | None) -> None:
        """``orchestration.graph.failed``."""
        data: JsonObject = {
            "runId": self.scope.run_id,
            "durationMs": _ms(started),
            "error": ChildError.of(error).to_json(),
        }
        if node_id is not None:
            data["nodeId"] = node_id
        await self.emit("orchestration.graph.failed", data)

    async def node_started(self, frame: NodeEventFrame, kind: str) -> None:
        """``orchestration.graph.node.started``."""
        data: JsonObject = {"nodeId": frame.node_id, "attempt": frame.attempt, "kind": kind}
        if frame.replayed:
            data["replayed"] = True
        await self.emit("orchestration.graph.node.started", data)

    async def node_settled(
        self,
        frame: NodeEventFrame,
        started: float,
        status: str,
        *,
        error: BaseException | None = None,
        policy: str = "fail-fast",
        reason: str = "graph",
    ) -> None:
        """``node.completed``, ``node.failed`` or ``node.cancelled`` for a node that ran."""
        data: JsonObject = {
            "nodeId": frame.node_id,
            "attempt": frame.attempt,
            "durationMs": _ms(started),
            "childRunIds": list(frame.child_run_ids),
        }
        if status == "failed":
            data["failurePolicy"] = policy
            data["error"] = ChildError.of(error).to_json()
        elif status == "cancelled":
            data["reason"] = reason
        if frame.replayed:
            data["replayed"] = True
        await self.emit(f"orchestration.graph.node.{status}", data)

    async def node_skipped(self, node_id: str, reason: str) -> None:
        """``orchestration.graph.node.skipped``."""
        await self.emit("orchestration.graph.node.skipped", {"nodeId": node_id, "reason": reason})
