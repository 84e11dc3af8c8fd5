"""Workflow profiles as ``WorkflowGraph`` nodes (the ``WorkflowGraph``, ``workflow.reducer`` refs).

:func:`profile_workflow_node` runs a built profile as one node of an orchestration
:class:`~actoviq.orchestration.WorkflowGraph`: a child run of the graph's scope on the same
runtime, checked against the profile's dependencies when the node is made (so a graph never
starts with a node that would be refused). :func:`reducer_workflow_node` is the
``workflow.reducer``: it merges its predecessors' outputs with :func:`reduce_node_outputs`, in
node-id order, whatever order they finished in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actoviq.orchestration import ChildRunner, NodeContext, WorkflowNode, agent_workflow_node
from actoviq.profiles.coordination import reduce_node_outputs
from actoviq.profiles.run import assert_profile_runtime
from actoviq.profiles.types import BuiltAgentProfile
from actoviq.runtime import AgentInput

__all__ = ["profile_workflow_node", "reducer_workflow_node"]


def profile_workflow_node(
    node_id: str,
    runner: ChildRunner,
    profile: BuiltAgentProfile,
    *,
    input: Callable[[NodeContext], AgentInput],
    workspace_id: str | None = None,
) -> WorkflowNode:
    """A graph node running ``profile`` as a child of the graph's scope (output: the agent's).

    Raises:
        ProfileRuntimeConfigurationError: the runner's runtime lacks what the profile needs.
    """
    assert_profile_runtime(profile, runner.runtime, workspace_id=workspace_id)
    return agent_workflow_node(node_id, runner, profile.spec, input=input, output="value")


def reducer_workflow_node(node_id: str) -> WorkflowNode:
    """A reducer node: ``[{node, output}]`` of its completed predecessors, in node-id order."""

    def reduce(ctx: NodeContext) -> Any:
        return reduce_node_outputs(dict(ctx.inputs))

    return WorkflowNode(id=node_id, reduce=reduce)
