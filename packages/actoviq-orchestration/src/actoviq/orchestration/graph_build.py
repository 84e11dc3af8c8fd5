"""Validation and ordering of a :class:`~actoviq.orchestration.graph.WorkflowGraph`'s parts.

Node and edge checks (each refusal a :class:`~actoviq.orchestration.graph_model.WorkflowGraphError`
naming what is wrong), the lexically smallest topological order, and how a node's function is
called (an ``async def`` runs as its task's own coroutine; anything else through :func:`call`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from types import CoroutineType, FunctionType
from typing import Any, cast

import attrs

from actoviq.orchestration.graph_model import WorkflowEdge, WorkflowGraphError, WorkflowNode

__all__ = [
    "async_def",
    "call",
    "check_edges",
    "check_nodes",
    "clean_id",
    "listed_of",
    "topological",
]


def clean_id(value: object, label: str) -> str:
    """``value`` stripped; a blank or non-string id is refused (``label`` names it)."""
    if not isinstance(value, str) or not value.strip():
        raise WorkflowGraphError(f"Workflow {label} id must not be empty.")
    return value.strip()


def listed_of(
    values: object,
    kind: type[Any],
    what: str,
    error: Callable[[str], Exception] = WorkflowGraphError,
) -> list[Any]:
    """``values`` as a list of ``kind``, else ``error("<what> must be a list of <kind>...")``.

    A string, a mapping, a non-iterable or an element of another type is refused.
    """
    wanted = f"{what} must be a list of {kind.__name__}"
    if isinstance(values, str | bytes | Mapping):
        raise error(f"{wanted}.")
    try:
        listed = list(cast(Iterable[Any], values))
    except TypeError:
        raise error(f"{wanted}.") from None
    for value in listed:
        if not isinstance(value, kind):
            raise error(f"{wanted}, got {type(value).__name__}.")
    return listed


def check_nodes(nodes: Iterable[WorkflowNode]) -> dict[str, WorkflowNode]:
    """The nodes by their stripped id, each checked (one of execute/reduce, known policies)."""
    by_id: dict[str, WorkflowNode] = {}
    for node in listed_of(nodes, WorkflowNode, "Workflow nodes"):
        node_id = clean_id(node.id, "node")
        if node_id in by_id:
            raise WorkflowGraphError(f'Duplicate workflow node "{node_id}".')
        if (node.execute is None) == (node.reduce is None):
            raise WorkflowGraphError(
                f'Workflow node "{node_id}" must define exactly one of execute or reduce.'
            )
        if not callable(node.execute or node.reduce):
            raise WorkflowGraphError(f'Workflow node "{node_id}" execute/reduce must be callable.')
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


def check_edges(
    edges: Iterable[WorkflowEdge], nodes: Mapping[str, WorkflowNode]
) -> list[WorkflowEdge]:
    """The edges with stripped ends, checked against ``nodes``, sorted by (source, target)."""
    checked: list[WorkflowEdge] = []
    seen: set[tuple[str, str]] = set()
    for edge in listed_of(edges, WorkflowEdge, "Workflow edges"):
        source = clean_id(edge.source, "edge source")
        target = clean_id(edge.target, "edge target")
        if edge.when is not None and not callable(edge.when):
            raise WorkflowGraphError(
                f'Workflow edge "{source}" -> "{target}" when must be callable.'
            )
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


def topological(nodes: Mapping[str, WorkflowNode], edges: list[WorkflowEdge]) -> tuple[str, ...]:
    """The lexically smallest topological order (a cycle is refused)."""
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


def async_def(fn: object) -> bool:
    """A genuine ``async def`` function (``inspect.markcoroutinefunction`` ones do not count).

    Calling one only makes a coroutine: it never raises and never returns another awaitable.
    """
    return type(fn) is FunctionType and bool(fn.__code__.co_flags & inspect.CO_COROUTINE)


async def call(fn: Callable[[Any], Any], arg: Any) -> Any:
    """``fn(arg)``, awaited when it returns an awaitable."""
    value: Any = fn(arg)
    if type(value) is CoroutineType or inspect.isawaitable(value):
        return cast(Any, await value)
    return value
