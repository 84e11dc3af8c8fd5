"""Bounded loops for workflow graphs: ``loop_node`` (spec 04 §8.2-21, issue 15 point 8).

A graph stays acyclic (its order is deterministic and every run ends); a review-revise cycle is a
node that runs a *body* graph round after round until ``until`` says the result is good, at most
``max_iterations`` rounds. Each round's body input is built by ``prepare`` from the round number
and the previous round's outputs. Past the bound the node fails with
:class:`WorkflowLoopLimitError` (``on_exhausted="fail"``, the default) or returns the last round
unconverged (``"return"``).

Inside a durable graph run every inner node is journaled under ``<loop>#<i>/<node>`` at
iteration ``i``: after a crash, the rounds that completed are not run again.

Example:
    >>> # review = loop_node(
    >>> #     "review-cycle",
    >>> #     WorkflowGraph(nodes=[revise, critique], edges=[WorkflowEdge(source="revise",
    >>> #                                                                target="critique")]),
    >>> #     until=lambda round: round.outputs["critique"]["approved"],
    >>> #     max_iterations=3,
    >>> # )
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal

import attrs

from actoviq.core import JsonObject
from actoviq.orchestration.errors import OrchestrationError
from actoviq.orchestration.graph import (
    NodeContext,
    WorkflowGraph,
    WorkflowGraphError,
    WorkflowGraphResult,
    WorkflowNode,
)
from actoviq.orchestration.graph_events import current_node_frame
from actoviq.orchestration.graph_frames import current_frame, mark_composite

__all__ = ["LoopResult", "LoopRound", "WorkflowLoopLimitError", "loop_node"]

_MAX_SAFE: Final = 2**53 - 1


class WorkflowLoopLimitError(OrchestrationError):
    """A loop did not converge within ``max_iterations`` rounds.

    ``details``: ``nodeId``, ``maxIterations``; :attr:`last` is the last round's result.
    """

    default_code: ClassVar[str] = "WORKFLOW_LOOP_LIMIT_EXCEEDED"

    def __init__(self, node_id: str, max_iterations: int, last: LoopResult) -> None:
        noun = "iteration" if max_iterations == 1 else "iterations"
        super().__init__(
            f'Workflow loop "{node_id}" did not converge within {max_iterations} {noun}.',
            details={"nodeId": node_id, "maxIterations": max_iterations},
        )
        self.node_id = node_id
        self.max_iterations = max_iterations
        self.last = last


@attrs.frozen(kw_only=True, slots=True)
class LoopRound:
    """One finished round, as ``until`` sees it.

    Attributes:
        node_id: the loop node.
        iteration: the round (0 for the first).
        input: the body input of the round.
        outputs: the body's outputs (completed nodes, topological order).
        statuses: every body node's status.
        context: the loop node's own context (graph input, scope, outer outputs).
    """

    node_id: str
    iteration: int
    input: Any
    outputs: Mapping[str, Any]
    statuses: Mapping[str, str]
    context: NodeContext


@attrs.frozen(kw_only=True, slots=True)
class LoopResult:
    """A loop node's output: how many rounds ran, whether ``until`` held, the rounds' outputs."""

    iterations: int
    converged: bool
    outputs: Mapping[str, Any]
    history: tuple[Mapping[str, Any], ...]

    def to_json(self) -> JsonObject:
        """``{iterations, converged, outputs, history}`` (the outputs must be JSON)."""
        return {
            "iterations": self.iterations,
            "converged": self.converged,
            "outputs": dict(self.outputs),
            "history": [dict(h) for h in self.history],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoopResult:
        """Read :meth:`to_json` output."""
        return cls(
            iterations=int(data["iterations"]),
            converged=bool(data["converged"]),
            outputs=MappingProxyType(dict(data["outputs"])),
            history=tuple(MappingProxyType(dict(h)) for h in data["history"]),
        )


Prepare = Callable[[NodeContext, int, "LoopResult | None"], Any]
Until = Callable[[LoopRound], "bool | Awaitable[bool]"]


def _default_prepare(ctx: NodeContext, iteration: int, previous: LoopResult | None) -> Any:
    return {
        "input": ctx.input,
        "iteration": iteration,
        "previous": None if previous is None else dict(previous.outputs),
    }


def loop_node(
    id: str,
    body: WorkflowGraph,
    *,
    until: Until,
    max_iterations: int,
    prepare: Prepare | None = None,
    on_exhausted: Literal["fail", "return"] = "fail",
    max_concurrency: int = 8,
    activation: Literal["all", "any"] = "all",
) -> WorkflowNode:
    """A node that runs ``body`` round after round until ``until`` holds (at most N rounds).

    Args:
        id: the node id.
        body: the graph of one round (e.g. revise -> critique).
        until: called after each round with a :class:`LoopRound`; true ends the loop.
        max_iterations: the bound (a positive safe integer).
        prepare: builds round ``i``'s body input from the node context and the previous
            round (default: ``{"input", "iteration", "previous": previous outputs}``).
        on_exhausted: ``"fail"`` raises :class:`WorkflowLoopLimitError`; ``"return"`` returns
            the last round with ``converged=False``.
        max_concurrency: ready body nodes run at once.
        activation: the loop node's own activation in its graph.

    Returns:
        A node whose output is a :class:`LoopResult`.

    Raises:
        WorkflowGraphError: a blank id or a bound that is not a positive safe integer
            ("positive").
    """
    node_id = id.strip() if isinstance(id, str) else ""  # pyright: ignore[reportUnnecessaryIsInstance]
    if not node_id:
        raise WorkflowGraphError("Workflow loop node id must not be empty.")
    if type(max_iterations) is not int or not 1 <= max_iterations <= _MAX_SAFE:
        raise WorkflowGraphError(
            f'Workflow loop "{node_id}" max_iterations must be a positive safe integer.'
        )
    if on_exhausted not in ("fail", "return"):
        raise WorkflowGraphError(f'Workflow loop "{node_id}" on_exhausted must be fail or return.')
    build = prepare or _default_prepare

    async def execute(ctx: NodeContext) -> Any:
        frame = current_frame()
        history: list[Mapping[str, Any]] = []
        previous: LoopResult | None = None
        for iteration in range(max_iterations):
            ctx.signal.throw_if_aborted()
            round_input = build(ctx, iteration, previous)
            graph = body
            if frame is not None:
                graph = frame.journal.wrap(body, prefix=frame.body_prefix(), iteration=iteration)
            node = current_node_frame()
            if node is not None:
                node.iteration = iteration  # the body's graph events name the round
            result: WorkflowGraphResult = await graph.execute(
                input=round_input, scope=ctx.scope, max_concurrency=max_concurrency
            )
            outputs = MappingProxyType(dict(result.outputs))
            history.append(outputs)
            done = until(
                LoopRound(
                    node_id=ctx.node_id,
                    iteration=iteration,
                    input=round_input,
                    outputs=outputs,
                    statuses=MappingProxyType(dict(result.statuses)),
                    context=ctx,
                )
            )
            if inspect.isawaitable(done):
                done = await done
            previous = LoopResult(
                iterations=iteration + 1,
                converged=bool(done),
                outputs=outputs,
                history=tuple(history),
            )
            if done:
                return previous
        assert previous is not None
        if on_exhausted == "fail":
            raise WorkflowLoopLimitError(ctx.node_id, max_iterations, previous)
        return previous

    mark_composite(execute)
    return WorkflowNode(id=node_id, execute=execute, activation=activation)
