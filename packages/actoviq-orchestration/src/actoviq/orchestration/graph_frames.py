"""The durable-run frame a node executes in (a context variable), and composite-node marks.

A durable graph run journals every node execution (its status and output) under a key: the
node's path and loop iteration. Composite nodes (a :func:`~actoviq.orchestration.graph_loops.
loop_node` runs a body graph) must journal their inner nodes too, under their own path, so they
look up the frame of the node they run in and let its journal wrap their body graph. Outside a
durable run there is no frame and composites run their body as is.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

import attrs

if TYPE_CHECKING:
    from actoviq.orchestration.graph import WorkflowGraph

__all__ = ["NodeFrame", "NodeJournal", "current_frame", "is_composite", "mark_composite"]


class NodeJournal(Protocol):
    """What a durable run offers composite nodes: journaling for a nested graph."""

    def wrap(self, graph: WorkflowGraph, *, prefix: str, iteration: int) -> WorkflowGraph:
        """``graph`` with every node journaled under ``prefix + node id`` at ``iteration``."""
        ...


@attrs.frozen(kw_only=True, slots=True)
class NodeFrame:
    """The node being executed in a durable run: its journal, key and loop iteration."""

    journal: NodeJournal
    key: str
    iteration: int

    def body_prefix(self) -> str:
        """The key prefix of a composite node's inner nodes (``<key>#<iteration>/``)."""
        return f"{self.key}#{self.iteration}/"


FRAME: ContextVar[NodeFrame | None] = ContextVar("actoviq_orchestration_node_frame", default=None)
_COMPOSITES: weakref.WeakSet[Callable[..., Any]] = weakref.WeakSet()


def current_frame() -> NodeFrame | None:
    """The durable frame of the node running in this task (None outside durable runs)."""
    return FRAME.get()


def mark_composite(fn: Callable[..., Any]) -> None:
    """Mark a node function whose effects are all inside journaled inner nodes.

    A durable run re-runs such a node after a crash whatever its declared effect: replaying it
    replays only what its inner journal did not record as done.
    """
    _COMPOSITES.add(fn)


def is_composite(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` was marked with :func:`mark_composite`."""
    return fn in _COMPOSITES
