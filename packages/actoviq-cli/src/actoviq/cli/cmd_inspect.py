"""``actoviq inspect models|middleware|services|agent``: what the runtime would see.

Nothing here calls a model or opens the database: a runtime is built as ``actoviq run`` would
build it and asked (registry capabilities, the middleware chain in execution order with stages
and priorities, the service container, an agent's digest and resolved tools).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from actoviq.cli.agents import BUILTIN_AGENT, load_middleware, resolve_agent, setup_agent
from actoviq.cli.config import CliSettings, load_settings
from actoviq.cli.environment import CliEnvironment
from actoviq.cli.models import build_registry, describe_providers
from actoviq.cli.output import Output
from actoviq.core import JsonObject, JsonValue, to_json
from actoviq.runtime import MiddlewarePipeline

if TYPE_CHECKING:
    from actoviq.cli.invocation import Invocation

__all__ = ["agent_command", "middleware_command", "models_command", "services_command"]


def _table(output: Output, headers: list[str], rows: list[list[str]]) -> None:
    from rich.table import Table

    table = Table(*headers, box=None, header_style="bold")
    for row in rows:
        table.add_row(*row)
    output.print(table)


def _enabled(capabilities: JsonObject, prefix: str = "") -> list[str]:
    names: list[str] = []
    for key, value in capabilities.items():
        if isinstance(value, dict):
            names.extend(_enabled(cast(JsonObject, value), f"{prefix}{key}."))
        elif value is True:
            names.append(prefix + key)
    return names


async def models_command(invocation: Invocation, output: Output, *, model: str | None) -> int:
    """Providers (usable here or why not), or one model's resolved capabilities."""
    settings = load_settings(invocation.config, db=invocation.db)
    if model is None:
        providers = describe_providers(settings)
        if output.json_mode:
            output.emit({"kind": "inspect.models", "providers": providers})
            return 0
        rows = [
            [
                str(p["id"]),
                str(p["kind"]),
                "yes" if p["available"] else "no",
                str(p.get("hint") or p.get("baseUrl") or ""),
            ]
            for p in providers
        ]
        _table(output, ["provider", "kind", "usable", "note"], rows)
        return 0
    registry = build_registry(settings, [model])
    try:
        resolved = await registry.resolve(model)
        capabilities = cast(JsonObject, to_json(await registry.capabilities(model)))
    finally:
        await registry.aclose()
    document: JsonObject = {
        "kind": "inspect.model",
        "model": model,
        "provider": resolved.provider_id,
        "capabilities": capabilities,
    }
    if output.json_mode:
        output.emit(document)
    else:
        output.print(f"{model} (provider {resolved.provider_id})")
        for name in _enabled(capabilities):
            output.print(f"  {name}")
    return 0


def _chain(pipeline: MiddlewarePipeline) -> list[JsonObject]:
    return [entry.to_json() for entry in pipeline.inspect()]


async def middleware_command(invocation: Invocation, output: Output, *, agent: str | None) -> int:
    """The runtime's middleware chain, or an agent's (runtime plus its references)."""
    settings = load_settings(invocation.config, db=invocation.db)
    definitions, registry = load_middleware(settings)
    pipeline = MiddlewarePipeline(definitions)
    document: JsonObject = {"kind": "inspect.middleware", "registry": list(registry.list())}
    if agent is not None:
        spec = resolve_agent(settings, agent, model=_any_model(settings)).spec
        pipeline = pipeline.compose(registry.resolve(spec.middleware))
        document["agent"] = spec.id
    document["middleware"] = cast(JsonValue, _chain(pipeline))
    if output.json_mode:
        output.emit(document)
        return 0
    rows = [
        [str(e["stage"]), str(e["chainIndex"]), str(e["priority"]), str(e["name"])]
        for e in cast(list[JsonObject], document["middleware"])
    ]
    if not rows:
        output.note("No middleware configured (middleware = [...] in actoviq.toml).")
        return 0
    _table(output, ["stage", "order", "priority", "name"], rows)
    return 0


def _any_model(settings: CliSettings) -> str:
    """A model for resolving an agent that is only inspected (never called)."""
    return settings.model or "scripted:inspect"


async def services_command(invocation: Invocation, output: Output) -> int:
    """The service container a command's runtime gets (nothing is initialised by looking)."""
    settings = load_settings(invocation.config, db=invocation.db)
    resolved = resolve_agent(settings, BUILTIN_AGENT, model=_any_model(settings))
    setup = setup_agent(settings, resolved)
    async with CliEnvironment(settings) as env:
        runtime = env.runtime(setup)
        services = [entry.to_json() for entry in runtime.services.inspect()]
    document: JsonObject = {
        "kind": "inspect.services",
        "storage": settings.storage,
        "tenantId": settings.tenant,
        "checkpoints": "SqliteRunCheckpointAdapter (claiming: exactly-once resume)",
        "services": cast(JsonValue, services),
    }
    if output.json_mode:
        output.emit(document)
        return 0
    output.print(f"storage: {settings.storage} (tenant {settings.tenant})")
    output.print(f"checkpoints: {document['checkpoints']}")
    rows = [
        [str(s["id"]), "yes" if s["initialized"] else "no", str(s.get("description") or "")]
        for s in services
    ]
    _table(output, ["service", "initialised", "description"], rows)
    return 0


async def agent_command(
    invocation: Invocation, output: Output, *, agent: str, model: str | None
) -> int:
    """An agent's digest, declaration, model, tools and middleware as a run would use them."""
    settings = load_settings(invocation.config, db=invocation.db)
    resolved = resolve_agent(settings, agent, model=model or None)
    setup = setup_agent(settings, resolved)
    async with CliEnvironment(settings) as env:
        runtime = env.runtime(setup)
        digest = runtime.agent_digest(resolved.spec)
        names = {entry if isinstance(entry, str) else entry.id for entry in resolved.spec.tools}
        tools: list[JsonObject] = []
        for found in setup.tools:
            if found.name not in names:
                continue
            described = found.descriptor.to_json()
            if found.descriptor.timeout_ms is not None:
                described["timeoutMs"] = found.descriptor.timeout_ms
            tools.append(described)
        chain = MiddlewarePipeline(setup.middleware).compose(
            setup.middleware_registry.resolve(resolved.spec.middleware)
        )
    document: JsonObject = {
        "kind": "inspect.agent",
        "agent": resolved.spec.id,
        "reference": resolved.reference,
        "source": resolved.source,
        "model": cast(str, resolved.spec.model),
        "digest": digest,
        "declaration": resolved.spec.declaration(),
        "tools": cast(JsonValue, tools),
        "middleware": cast(JsonValue, _chain(chain)),
    }
    if output.json_mode:
        output.emit(document)
        return 0
    output.print(f"{resolved.spec.name} ({resolved.spec.id}) from {resolved.source}")
    output.print(f"model:  {resolved.spec.model}")
    output.print(f"digest: {digest}")
    rows: list[list[str]] = [
        [
            str(t["name"]),
            str(t["effect"]),
            "yes" if t["requiresApproval"] else "no",
            str(t.get("description") or "").split("\n")[0],
        ]
        for t in tools
    ]
    if rows:
        _table(output, ["tool", "effect", "approval", "description"], rows)
    else:
        output.print("tools:  none")
    return 0
