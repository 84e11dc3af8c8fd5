"""Agents, tools and middleware from the configuration or from ``module:attribute`` references.

An agent is named by its ``[agents.<id>]`` table, by ``package.module:attribute`` (an
``AgentSpec``), or is the built-in ``assistant``. ``--model`` replaces its model. Tools come from
``tools = [...]`` and from ``module:function`` entries in an agent's ``tools`` list: a
``RuntimeTool`` (``@tool``) is used as is, a plain function is wrapped with ``@tool``.

The agent reference and the model override travel in the run's metadata
(``metadata["actoviqCli"]``) so ``actoviq resume RUN_ID`` rebuilds the same agent (same digest)
in another process.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, cast

import attrs

from actoviq.cli.config import AgentSettings, CliSettings
from actoviq.cli.errors import CliConfigError, CliReferenceError, CliUsageError
from actoviq.cli.loading import is_reference, load_reference
from actoviq.core import AgentSpec, JsonObject, JsonValue, RunLimitsPatch
from actoviq.runtime import (
    MiddlewareDefinition,
    MiddlewareRegistry,
    RuntimeTool,
    tool,
)

__all__ = [
    "BUILTIN_AGENT",
    "METADATA_KEY",
    "AgentSetup",
    "ResolvedAgent",
    "load_middleware",
    "load_tools",
    "metadata_reference",
    "resolve_agent",
    "setup_agent",
]

BUILTIN_AGENT: Final = "assistant"
METADATA_KEY: Final = "actoviqCli"
_BUILTIN_INSTRUCTIONS: Final = "You are a helpful assistant. Answer clearly and briefly."


@attrs.frozen(kw_only=True, slots=True)
class ResolvedAgent:
    """An agent ready to run, and how the user named it.

    Attributes:
        spec: the agent (its model set).
        reference: what was given (a config id, ``module:attribute`` or ``assistant``).
        source: ``config``, ``module`` or ``builtin``.
        model_override: the ``--model`` that replaced the agent's own model, if any.
    """

    spec: AgentSpec[Any, Any]
    reference: str
    source: str
    model_override: str | None = None

    def metadata(self) -> JsonObject:
        """The run metadata that lets ``actoviq resume`` rebuild this agent."""
        entry: JsonObject = {"agent": self.reference}
        if self.model_override is not None:
            entry["model"] = self.model_override
        return {METADATA_KEY: entry}


@attrs.frozen(kw_only=True, slots=True)
class AgentSetup:
    """What a runtime needs for one agent: tools, middleware and the models to route."""

    agent: ResolvedAgent
    tools: tuple[RuntimeTool, ...]
    middleware: tuple[MiddlewareDefinition, ...]
    middleware_registry: MiddlewareRegistry
    models: tuple[str, ...]


def _as_tool(value: object, reference: str) -> RuntimeTool:
    if isinstance(value, RuntimeTool):
        return value
    nested = getattr(value, "runtime_tool", None)  # a decorator that keeps the function callable
    if isinstance(nested, RuntimeTool):
        return nested
    if callable(value):
        return tool(cast(Any, value))
    raise CliReferenceError(
        f"Tool reference {reference!r} is neither a tool (@tool) nor a function.",
        details={"reference": reference},
    )


def load_tools(settings: CliSettings, extra: Iterable[str] = ()) -> dict[str, RuntimeTool]:
    """The configured tools plus ``extra`` references, by name.

    Raises:
        CliReferenceError: a reference that does not import or is not a tool.
        CliConfigError: two references give tools of the same name.
    """
    loaded: dict[str, RuntimeTool] = {}
    for reference in dict.fromkeys((*settings.tools, *extra)):
        found = _as_tool(load_reference(reference, "tool", roots=(settings.root,)), reference)
        existing = loaded.get(found.name)
        if existing is not None and existing is not found:
            raise CliConfigError(f"two tools are named {found.name!r}", key="tools")
        loaded[found.name] = found
    return loaded


def _definitions(value: object, reference: str) -> list[MiddlewareDefinition]:
    if isinstance(value, MiddlewareDefinition):
        return [value]
    if isinstance(value, Sequence) and not isinstance(value, str):
        entries = cast(Sequence[object], value)
        if all(isinstance(entry, MiddlewareDefinition) for entry in entries):
            return list(cast(Sequence[MiddlewareDefinition], entries))
    raise CliReferenceError(
        f"Middleware reference {reference!r} is not a MiddlewareDefinition (or a list of them).",
        details={"reference": reference},
    )


def load_middleware(
    settings: CliSettings,
) -> tuple[tuple[MiddlewareDefinition, ...], MiddlewareRegistry]:
    """The runtime middleware and the registry for agents' middleware references."""
    roots = (settings.root,)
    runtime: list[MiddlewareDefinition] = []
    for reference in settings.middleware:
        runtime.extend(
            _definitions(load_reference(reference, "middleware", roots=roots), reference)
        )
    registry = MiddlewareRegistry()
    for group_id, reference in settings.middleware_registry.items():
        loaded = load_reference(reference, "middleware", roots=roots)
        registry.register(group_id, _definitions(loaded, reference))
    return tuple(runtime), registry


def _limits(agent: AgentSettings) -> RunLimitsPatch | None:
    if agent.limits is None:
        return None
    try:
        return RunLimitsPatch(**dict(agent.limits))
    except (TypeError, ValueError) as error:
        raise CliConfigError(str(error), key=f"agents.{agent.id}.limits") from None


def _declared(settings: CliSettings, agent: AgentSettings) -> AgentSpec[Any, Any]:
    if agent.spec is not None:
        value = load_reference(agent.spec, "agent", roots=(settings.root,))
        if not isinstance(value, AgentSpec):
            raise CliReferenceError(
                f"Agent reference {agent.spec!r} is not an AgentSpec.",
                details={"reference": agent.spec},
            )
        spec = cast(AgentSpec[Any, Any], value)
        return attrs.evolve(spec, model=agent.model) if agent.model else spec
    roots = (settings.root,)
    names = [
        _as_tool(load_reference(ref, "tool", roots=roots), ref).name if is_reference(ref) else ref
        for ref in agent.tools
    ]
    return AgentSpec(
        id=agent.id,
        name=agent.name or agent.id,
        description=agent.description,
        instructions=cast(str, agent.instructions),
        model=agent.model,
        tools=tuple(names),
        middleware=agent.middleware,
        limits=_limits(agent),
        metadata=cast(JsonObject, dict(agent.metadata)) if agent.metadata else None,
    )


def resolve_agent(
    settings: CliSettings, reference: str, *, model: str | None = None
) -> ResolvedAgent:
    """The agent ``reference`` names, with ``model`` (``--model``) applied.

    Raises:
        CliUsageError: an unknown agent, or no model anywhere (agent, ``--model``, config).
        CliReferenceError: a ``module:attribute`` that does not import or is not an AgentSpec.
    """
    configured = settings.agents.get(reference)
    spec: AgentSpec[Any, Any]
    if configured is not None:
        spec, source = _declared(settings, configured), "config"
    elif is_reference(reference):
        value = load_reference(reference, "agent", roots=(settings.root,))
        if not isinstance(value, AgentSpec):
            raise CliReferenceError(
                f"Agent reference {reference!r} is not an AgentSpec.",
                details={"reference": reference},
            )
        spec, source = cast(AgentSpec[Any, Any], value), "module"
    elif reference == BUILTIN_AGENT:
        spec = AgentSpec(id=BUILTIN_AGENT, name="Assistant", instructions=_BUILTIN_INSTRUCTIONS)
        source = "builtin"
    else:
        known = sorted({*settings.agents, BUILTIN_AGENT})
        raise CliUsageError(
            f"Unknown agent {reference!r} (in {settings.label}: {', '.join(known)}); define "
            f"[agents.{reference}] in actoviq.toml or pass 'package.module:attribute'.",
            details={"agent": reference},
        )
    chosen = model or (spec.model if isinstance(spec.model, str) else None) or settings.model
    if spec.model is not None and not isinstance(spec.model, str) and model is None:
        chosen = f"{spec.model.provider}:{spec.model.model}"
    if chosen is None:
        raise CliUsageError(
            f"Agent {spec.id!r} has no model: pass --model provider:model (offline: "
            "--model scripted:demo) or set model in actoviq.toml.",
            details={"agent": spec.id},
        )
    if chosen != spec.model:
        spec = attrs.evolve(spec, model=chosen)
    return ResolvedAgent(spec=spec, reference=reference, source=source, model_override=model)


def setup_agent(settings: CliSettings, agent: ResolvedAgent) -> AgentSetup:
    """Load the tools and middleware ``agent`` runs with and check its tool names.

    Raises:
        CliConfigError: the agent names a tool no reference provides.
    """
    configured = settings.agents.get(agent.reference)
    extra = [ref for ref in configured.tools if is_reference(ref)] if configured else []
    tools = load_tools(settings, extra)
    for entry in agent.spec.tools:
        name = entry if isinstance(entry, str) else entry.id
        if name not in tools:
            raise CliConfigError(
                f"agent {agent.spec.id!r} uses tool {name!r}, which no reference provides: add "
                "'package.module:function' to tools in actoviq.toml",
                path=str(settings.path) if settings.path else None,
                key="tools",
            )
    middleware, registry = load_middleware(settings)
    return AgentSetup(
        agent=agent,
        tools=tuple(tools.values()),
        middleware=middleware,
        middleware_registry=registry,
        models=(cast(str, agent.spec.model),),
    )


def metadata_reference(metadata: Mapping[str, JsonValue] | None) -> tuple[str | None, str | None]:
    """``(agent reference, model override)`` recorded by :meth:`ResolvedAgent.metadata`."""
    entry = (metadata or {}).get(METADATA_KEY)
    if not isinstance(entry, dict):
        return None, None
    agent, model = entry.get("agent"), entry.get("model")
    return (
        agent if isinstance(agent, str) else None,
        model if isinstance(model, str) else None,
    )
