"""Registered agents: config digests, the cached :class:`AgentEntry` of each and its run limits.

``AgentRuntime.register_agent`` stores one entry per agent id; the entry caches what every run of
the agent would otherwise recompute (composed middleware, tool order, system message, output
schema, merged limits).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actoviq.core import AgentSpec, AgentSpecError, RunLimits, RunLimitsPatch, TextItem
from actoviq.providers import ModelOutputSchema
from actoviq.runtime.handoff_tools import handoff_tools
from actoviq.runtime.middleware import MiddlewarePipeline, MiddlewareRegistry
from actoviq.runtime.parts import AgentEntry
from actoviq.runtime.tools import ToolDefinitionError, ToolRegistry, compile_json_schema

__all__ = ["agent_digest", "build_agent_entry", "resolve_limits"]


def agent_digest(agent: AgentSpec[Any, Any], tools: ToolRegistry) -> str:
    """The agent's config digest: its declaration plus its registered tools' contracts (D3)."""
    names = [ref if isinstance(ref, str) else ref.id for ref in agent.tools]
    descriptors: list[Mapping[str, Any]] = []
    for name in names:
        tool = tools.resolve(name)
        if tool is not None:
            descriptors.append(tool.descriptor.to_json())
    return agent.digest(descriptors)


def build_agent_entry(
    agent: AgentSpec[Any, Any],
    digest: str,
    *,
    middleware: MiddlewarePipeline,
    registry: MiddlewareRegistry,
) -> AgentEntry:
    """The entry of ``agent``: runtime middleware composed with the agent's references.

    Raises:
        MiddlewareRegistryError: an unknown middleware reference.
        MiddlewarePriorityConflictError: agent and runtime middleware clash.
        HandoffToolError: a handoff id is not a tool name, is duplicated or names a tool.
    """
    if agent.middleware:
        pipeline = middleware.compose(registry.resolve(agent.middleware))
    else:
        pipeline = middleware
    order = tuple(ref if isinstance(ref, str) else ref.id for ref in agent.tools)
    handoffs = handoff_tools(agent.id, agent.handoffs, order) if agent.handoffs else {}
    output = agent.output
    instructions = agent.instructions
    validator = None
    if output is not None:
        try:
            validator = compile_json_schema(output.schema)
        except ToolDefinitionError as error:
            raise AgentSpecError(
                f'Agent "{agent.id}" output schema "{output.name}" is not a valid JSON Schema: '
                f"{error}",
                field="output",
            ) from None
    return AgentEntry(
        spec=agent,
        digest=digest,
        pipeline=pipeline,
        tool_names=frozenset(order),
        tool_order=order,
        handoffs=handoffs,
        system_item=TextItem(role="system", text=instructions)
        if isinstance(instructions, str) and instructions
        else None,
        output_validator=validator,
        output_schema=None
        if output is None
        else ModelOutputSchema(
            name=output.name,
            schema=output.schema,
            description=output.description,
            strict=output.strict,
        ),
    )


def resolve_limits(entry: AgentEntry, base: RunLimits, limits: RunLimitsPatch | None) -> RunLimits:
    """The run's limits; the agent's merge over ``base`` is cached on its entry."""
    if entry.limits is None or entry.limits_base is not base:
        entry.limits = base.merged(entry.spec.limits)
        entry.limits_base = base
    if limits is None:
        return entry.limits
    return entry.limits.merged(limits)
