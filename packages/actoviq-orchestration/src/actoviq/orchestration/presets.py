"""Presets: factories of :class:`~actoviq.orchestration.graph.WorkflowGraph` (spec 04 §1.11).

They are shapes, not engines: each returns a graph whose nodes you supply (usually
:func:`agent_workflow_node`), executed with ``graph.execute(input=..., scope=...)``. Every agent
node runs through the one :class:`~actoviq.orchestration.child_runner.ChildRunner`, so members
share the runtime, its providers and services, the budget, the permits and the trace.

* ``panel_preset(panelists, synthesize)``: each panelist -> synthesize.
* ``team_preset(members, reducer)``: each member -> reducer.
* ``reviewer_preset(author, reviewers, reducer)``: author -> each reviewer -> reducer, and
  author -> reducer.
* ``router_preset(router, routes, reducer?)``: router -> each route (its ``when``); every
  route -> reducer (activation ``any``).
* ``swarm_preset(agents, routes, reducer?)``: the routes; each leaf -> reducer (``any``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

import attrs

from actoviq.core import AgentSpec, JsonObject
from actoviq.orchestration.child_runner import ChildRunner
from actoviq.orchestration.child_support import check_policy_declaration
from actoviq.orchestration.errors import OrchestrationError
from actoviq.orchestration.graph import (
    NodeContext,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowNode,
)
from actoviq.orchestration.graph_build import listed_of
from actoviq.orchestration.graph_model import RouteFn
from actoviq.orchestration.outcomes import ChildFailurePolicy, ChildRunOutcome
from actoviq.runtime import AgentInput, ToolEffect

__all__ = [
    "PresetError",
    "RouterRoute",
    "agent_workflow_node",
    "panel_preset",
    "reviewer_preset",
    "router_preset",
    "swarm_preset",
    "team_preset",
]


class PresetError(OrchestrationError, ValueError):
    """A preset's shape is invalid (e.g. a panel without members)."""

    default_code: ClassVar[str] = "PRESET_INVALID"


@attrs.frozen(kw_only=True, slots=True)
class RouterRoute:
    """One route of :func:`router_preset`: the node and when the router takes it."""

    node: WorkflowNode
    when: RouteFn


def agent_workflow_node(
    id: str,
    runner: ChildRunner,
    agent: AgentSpec[Any, Any],
    *,
    input: Callable[[NodeContext], AgentInput],
    context: Callable[[NodeContext], Any] | None = None,
    failure_policy: ChildFailurePolicy | None = None,
    effect: ToolEffect | None = None,
    idempotency_key: Callable[[NodeContext], str | None] | None = None,
    metadata: JsonObject | None = None,
    output: Literal["outcome", "value"] = "outcome",
) -> WorkflowNode:
    """A node that runs ``agent`` as a child of the graph's scope.

    With ``output="outcome"`` (the reference) the node's output is the
    :class:`~actoviq.orchestration.outcomes.ChildRunOutcome`; with ``"value"`` it is the agent's
    output. The failure policy defaults to the runner's (``fail-fast``).

    Raises:
        PresetError: ``output`` is neither ``"outcome"`` nor ``"value"``, or ``input`` is not
            callable.
        ChildPolicyError: ``retry-safe`` for a side-effect child, or for an idempotent write
            without ``idempotency_key`` (every run would refuse it).
    """
    if output not in ("outcome", "value"):
        raise PresetError(
            f'agent_workflow_node output must be "outcome" or "value", got {output!r}.'
        )
    if not callable(input):
        raise PresetError("agent_workflow_node input must be a callable of the node context.")
    check_policy_declaration(failure_policy, effect, keyed=idempotency_key is not None)

    async def execute(ctx: NodeContext) -> Any:
        outcome: ChildRunOutcome = await runner.run(
            ctx.scope,
            agent,
            input(ctx),
            context=context(ctx) if context is not None else None,
            failure_policy=failure_policy,
            effect=effect,
            idempotency_key=idempotency_key(ctx) if idempotency_key is not None else None,
            metadata={**(metadata or {}), "workflowNodeId": ctx.node_id},
        )
        return outcome.output if output == "value" else outcome

    return WorkflowNode(id=id, execute=execute)


def _nodes_of(values: object, kind: type[Any], label: str) -> list[Any]:
    """``values`` as a list of ``kind`` (else :class:`PresetError` naming ``label``)."""
    return listed_of(values, kind, f"Orchestration preset {label}", PresetError)


def _members(members: Sequence[WorkflowNode]) -> list[WorkflowNode]:
    listed: list[WorkflowNode] = _nodes_of(members, WorkflowNode, "members")
    if not listed:
        raise PresetError("Parallel orchestration preset requires a member.")
    return listed


def panel_preset(panelists: Sequence[WorkflowNode], synthesize: WorkflowNode) -> WorkflowGraph:
    """Panelists in parallel, then ``synthesize`` (keeps its own activation, default ``all``).

    Raises:
        PresetError: no panelist ("requires a member").
    """
    members = _members(panelists)
    return WorkflowGraph(
        id="panel",
        nodes=[*members, synthesize],
        edges=[WorkflowEdge(source=member.id, target=synthesize.id) for member in members],
    )


def team_preset(members: Sequence[WorkflowNode], reducer: WorkflowNode) -> WorkflowGraph:
    """Members in parallel, then ``reducer`` (same shape as the panel).

    Raises:
        PresetError: no member ("requires a member").
    """
    listed = _members(members)
    return WorkflowGraph(
        id="team",
        nodes=[*listed, reducer],
        edges=[WorkflowEdge(source=member.id, target=reducer.id) for member in listed],
    )


def reviewer_preset(
    author: WorkflowNode, reviewers: Sequence[WorkflowNode], reducer: WorkflowNode
) -> WorkflowGraph:
    """The author, then the reviewers in parallel, then ``reducer`` (zero reviewers is valid)."""
    listed: list[WorkflowNode] = _nodes_of(reviewers, WorkflowNode, "reviewers")
    edges = [WorkflowEdge(source=author.id, target=reviewer.id) for reviewer in listed]
    edges += [WorkflowEdge(source=reviewer.id, target=reducer.id) for reviewer in listed]
    edges.append(WorkflowEdge(source=author.id, target=reducer.id))
    return WorkflowGraph(id="reviewer", nodes=[author, *listed, reducer], edges=edges)


def router_preset(
    router: WorkflowNode,
    routes: Sequence[RouterRoute],
    reducer: WorkflowNode | None = None,
) -> WorkflowGraph:
    """``router``, then each route whose ``when`` holds; an optional ``any`` reducer joins them.

    Raises:
        PresetError: ``routes`` is not a list of :class:`RouterRoute`.
    """
    routes = _nodes_of(routes, RouterRoute, "routes")
    nodes = [router, *(route.node for route in routes)]
    edges = [
        WorkflowEdge(source=router.id, target=route.node.id, when=route.when) for route in routes
    ]
    if reducer is not None:
        nodes.append(attrs.evolve(reducer, activation="any"))
        edges += [WorkflowEdge(source=route.node.id, target=reducer.id) for route in routes]
    return WorkflowGraph(id="router", nodes=nodes, edges=edges)


def swarm_preset(
    agents: Sequence[WorkflowNode],
    routes: Sequence[WorkflowEdge] = (),
    reducer: WorkflowNode | None = None,
) -> WorkflowGraph:
    """Agents joined by conditional ``routes``; an optional ``any`` reducer after each leaf.

    Cycles are rejected like in any graph (a swarm cannot loop; use a handoff loop for that).

    Raises:
        PresetError: no agent ("requires a member").
    """
    listed = _members(agents)
    nodes = list(listed)
    routes = _nodes_of(routes, WorkflowEdge, "routes")
    edges = list(routes)
    if reducer is not None:
        sources = {route.source.strip() for route in routes}
        leaves = sorted(node.id for node in listed if node.id not in sources)
        nodes.append(attrs.evolve(reducer, activation="any"))
        edges += [WorkflowEdge(source=leaf, target=reducer.id) for leaf in leaves]
    return WorkflowGraph(id="swarm", nodes=nodes, edges=edges)
