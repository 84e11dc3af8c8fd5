"""``mcp_tools``: an MCP server's tools as runtime tools with effects, approvals and crash safety.

Effects come from the MCP tool annotations (hints the server declares about itself):

============================================  ====================  ==========================
annotations                                   effect                approval
============================================  ====================  ==========================
``readOnlyHint: true``                        ``read``              no
``idempotentHint: true``                      ``idempotent-write``  if ``destructiveHint: true``
anything else (``destructiveHint``, no hint)  ``side-effect``       yes
============================================  ====================  ==========================

``effects=`` and ``approval=`` override this per tool; ``trust_annotations=False`` ignores the
hints of a server you do not trust (every tool is then a side effect needing approval).

Because the tools are ordinary :class:`~actoviq.runtime.RuntimeTool` values, every call goes
through the runtime's policy, approval gate, durable pending state and reconciliation: a
side-effect call whose server died mid-call ends ``unknown`` (never replayed), and a timeout or a
cancelled run sends ``notifications/cancelled`` to the server.
"""

from __future__ import annotations

import fnmatch
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, cast, overload

from actoviq.core import JsonObject, ToolExecutionError, ToolFailure, ToolFailureKind
from actoviq.mcp.errors import (
    McpCallError,
    McpCallTimeoutError,
    McpConfigurationError,
    McpConnectionLostError,
    McpError,
    McpResultError,
    McpToolNameError,
)
from actoviq.mcp.schema_guard import without_regex
from actoviq.mcp.server import McpServer
from actoviq.runtime import (
    RuntimeTool,
    ToolBehavior,
    ToolDefinitionError,
    ToolDescriptor,
    ToolEffect,
    ToolExecutionContext,
    ToolOutput,
    ToolProgressError,
    ToolRegistry,
    ToolSchema,
    json_schema_input,
)

__all__ = ["McpToolset", "ToolFilter", "annotation_effect", "mcp_tools"]

_log = logging.getLogger("actoviq.mcp")

ToolFilter = Iterable[str] | Callable[[Any], bool]
"""Tool names or ``fnmatch`` patterns (``"read_*"``), or a predicate over the SDK ``Tool``."""

_NAME_OK: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")
_INVALID_PARAMS: Final = -32602
_EFFECTS: Final = ("read", "idempotent-write", "side-effect")


def annotation_effect(tool: Any) -> tuple[ToolEffect, bool]:
    """``(effect, requires_approval)`` for an SDK ``Tool`` from its annotations (table above)."""
    hints = getattr(tool, "annotations", None)
    if hints is not None and hints.read_only_hint is True:
        return "read", False
    if hints is not None and hints.idempotent_hint is True:
        return "idempotent-write", hints.destructive_hint is True
    return "side-effect", True


def _matcher(spec: ToolFilter | None, label: str) -> Callable[[Any], bool] | None:
    if spec is None:
        return None
    if callable(spec):
        return spec
    if isinstance(spec, str):
        raise McpConfigurationError(f"mcp_tools({label}=...) takes a list of names, not a string.")
    try:
        patterns = tuple(spec)
    except TypeError:
        raise McpConfigurationError(
            f"mcp_tools({label}=...) takes a list of names or a predicate, "
            f"got {type(spec).__name__}."
        ) from None
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise McpConfigurationError(f"mcp_tools({label}=...) entries must be non-empty names.")
    return lambda tool: any(fnmatch.fnmatchcase(tool.name, pattern) for pattern in patterns)


class McpToolset(Sequence[RuntimeTool]):
    """The runtime tools of one MCP server (a sequence: pass it to ``AgentRuntime(tools=...)``).

    Built by :func:`mcp_tools`. After :meth:`register`, tools that appear later (the server sent
    ``tools/list_changed``) are registered in the same registry; a tool the server no longer
    offers leaves this sequence and :meth:`names` (it stays registered, since a registry cannot
    forget a tool) and fails with ``not_found`` when called. An agent still calls only the tools its
    ``AgentSpec.tools`` names (see :meth:`names`).
    """

    def __init__(
        self,
        server: McpServer,
        *,
        include: Callable[[Any], bool] | None,
        exclude: Callable[[Any], bool] | None,
        prefix: str,
        effects: Mapping[str, ToolEffect],
        approval: bool | Mapping[str, bool] | None,
        trust_annotations: bool,
        timeout_ms: float | None,
    ) -> None:
        self.server = server
        self._include = include
        self._exclude = exclude
        self._prefix = prefix
        self._effects: dict[str, ToolEffect] = dict(effects)
        self._approval = approval
        self._trust = trust_annotations
        self._timeout_ms = timeout_ms
        self._tools: dict[str, RuntimeTool] = {}  # every tool built so far (registries keep them)
        self._current: tuple[RuntimeTool, ...] = ()  # the ones the server offers now, in order
        self._mcp_names: dict[str, str] = {}
        self._offered: set[str] = set()
        self._registries: list[ToolRegistry] = []
        self._remove_listener: Callable[[], None] | None = None
        self.version = 0

    # -- sequence ---------------------------------------------------------------------------------

    @overload
    def __getitem__(self, index: int) -> RuntimeTool: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[RuntimeTool]: ...
    def __getitem__(self, index: int | slice) -> RuntimeTool | Sequence[RuntimeTool]:
        return self._current[index]

    def __len__(self) -> int:
        return len(self._current)

    def __iter__(self) -> Iterator[RuntimeTool]:
        return iter(self._current)

    def __repr__(self) -> str:
        return f"McpToolset(server={self.server.name!r}, tools={list(self.names())!r})"

    def names(self) -> tuple[str, ...]:
        """The names of the tools the server offers now, in its order (for ``AgentSpec.tools``)."""
        return tuple(tool.name for tool in self._current)

    def get(self, name: str) -> RuntimeTool | None:
        """The offered runtime tool called ``name`` (prefix included), or None."""
        return next((tool for tool in self._current if tool.name == name), None)

    def mcp_name(self, name: str) -> str | None:
        """The server's name for runtime tool ``name``."""
        return self._mcp_names.get(name)

    # -- registration and refresh -----------------------------------------------------------------

    def register(self, registry: ToolRegistry) -> McpToolset:
        """Register every tool in ``registry`` and keep registering tools that appear later.

        Raises:
            ToolRegistryError: a tool of that name is already registered.
        """
        for tool in self._tools.values():
            if registry.resolve(tool.name) is not tool:
                registry.register(tool)
        if registry not in self._registries:
            self._registries.append(registry)
        return self

    async def refresh(self) -> McpToolset:
        """Re-list the server's tools now (normally ``tools/list_changed`` does it)."""
        await self.server.list_tools(refresh=True)
        self._sync(self.server)
        return self

    async def wait_for_change(self, since: int, *, timeout_ms: float = 30_000.0) -> int:
        """Wait until :attr:`version` exceeds ``since`` (a refreshed tool set was applied).

        Raises:
            TimeoutError: no change within ``timeout_ms``.
        """
        server_version = self.server.tools_version
        while self.version <= since:
            server_version = await self.server.wait_for_tools_change(
                server_version, timeout_ms=timeout_ms
            )
        return self.version

    def close(self) -> None:
        """Stop following the server's tool changes."""
        if self._remove_listener is not None:
            self._remove_listener()
            self._remove_listener = None

    def _follow(self) -> None:
        self._remove_listener = self.server.add_tools_listener(self._sync)

    def _sync(self, server: McpServer) -> None:
        try:
            self._apply(server)
        except McpError as error:
            _log.warning("MCP tool set of %s not applied: %s", server.name, error)

    def _apply(self, server: McpServer) -> None:
        catalog = server.cached_tools()
        if catalog is None:
            return
        selected = [tool for tool in catalog if self._selected(tool)]
        self._offered = {tool.name for tool in selected}
        built: dict[str, RuntimeTool] = {}
        names: dict[str, str] = {}
        for mcp_tool in selected:
            name = self._runtime_name(mcp_tool.name)
            if name in names:
                raise McpToolNameError(
                    f'MCP tools "{names[name]}" and "{mcp_tool.name}" of server "{server.name}" '
                    f'both map to "{name}"; use include=/exclude= or a prefix.'
                )
            names[name] = mcp_tool.name
            existing = self._tools.get(name)
            built[name] = existing if existing is not None else self._build(mcp_tool, name)
        added = [tool for name, tool in built.items() if name not in self._tools]
        # A tool that appears later under the name of another tool already in a registry (a
        # local "wire_money") is never registered; it must not be offered under that name either,
        # or AgentSpec(tools=toolset.names()) would hand the agent the other tool.
        taken = {
            tool.name
            for tool in added
            for registry in self._registries
            if registry.has(tool.name) and registry.resolve(tool.name) is not tool
        }
        for name in sorted(taken):
            _log.warning(
                'MCP tool "%s" of server "%s" not offered: the name is taken by another tool.',
                names[name],
                server.name,
            )
        self._current = tuple(tool for name, tool in built.items() if name not in taken)
        for name, tool in self._tools.items():
            built.setdefault(name, tool)  # removed tools stay registered; calls get not_found
            names.setdefault(name, self._mcp_names[name])
        self._tools = built
        self._mcp_names = names
        for registry in self._registries:
            for tool in added:
                if tool.name not in taken and not registry.has(tool.name):
                    registry.register(tool)
        self.version += 1

    def _selected(self, tool: Any) -> bool:
        if self._include is not None and not self._include(tool):
            return False
        return not (self._exclude is not None and self._exclude(tool))

    def _runtime_name(self, mcp_name: str) -> str:
        name = self._prefix + mcp_name
        if _NAME_OK.match(name):
            return name
        return (_UNSAFE.sub("_", name) or "_")[:64]

    # -- one tool ---------------------------------------------------------------------------------

    def _behavior(self, mcp_tool: Any, name: str) -> ToolBehavior:
        effect: ToolEffect = "side-effect"
        approval = True
        if self._trust:
            effect, approval = annotation_effect(mcp_tool)
        key = str(mcp_tool.name)
        override = self._effects[key] if key in self._effects else self._effects.get(name)
        if override is not None:
            effect = override
            approval = override == "side-effect"
        if isinstance(self._approval, bool):
            approval = self._approval
        elif self._approval is not None:
            approval = self._approval.get(mcp_tool.name, self._approval.get(name, approval))
        return ToolBehavior(effect=effect, requires_approval=approval, timeout_ms=self._timeout_ms)

    def _build(self, mcp_tool: Any, name: str) -> RuntimeTool:
        schema: JsonObject = dict(mcp_tool.input_schema or {"type": "object"})
        try:
            # The server's regular expressions never run in the host (ReDoS): validation here
            # uses the schema without them, the model sees it whole (actoviq.mcp.schema_guard).
            local = json_schema_input(cast(JsonObject, without_regex(schema)))
            input_schema = ToolSchema(parse=local.parse, json_schema=schema)
        except (ToolDefinitionError, RecursionError) as error:
            # The server validates its own input; an uncompilable schema is passed through.
            _log.warning("MCP tool %s input schema not compiled: %s", mcp_tool.name, error)
            input_schema = ToolSchema(json_schema=schema)
        hints = getattr(mcp_tool, "annotations", None)
        metadata: JsonObject = {
            "mcp": {
                "server": self.server.name,
                "tool": mcp_tool.name,
                "annotations": hints.model_dump(mode="json", by_alias=True, exclude_none=True)
                if hints is not None
                else {},
            }
        }
        descriptor = ToolDescriptor(
            name=name,
            description=mcp_tool.description or mcp_tool.title or "",
            input=input_schema,
            behavior=self._behavior(mcp_tool, name),
            metadata=metadata,
        )
        return RuntimeTool(descriptor=descriptor, execute=_Executor(self, mcp_tool.name, name))


class _Executor:
    """``execute(ctx, args)`` of one MCP tool: call, map, classify failures."""

    __slots__ = ("mcp_name", "name", "toolset")

    def __init__(self, toolset: McpToolset, mcp_name: str, name: str) -> None:
        self.toolset = toolset
        self.mcp_name = mcp_name
        self.name = name

    async def __call__(self, ctx: ToolExecutionContext, args: Any) -> ToolOutput:
        toolset = self.toolset
        server = toolset.server
        if self.mcp_name not in toolset._offered:  # pyright: ignore[reportPrivateUsage]
            raise self._failure(
                ctx, "not_found", f'MCP server "{server.name}" no longer offers "{self.mcp_name}".'
            )
        arguments: dict[str, Any] = (
            dict(cast(Mapping[str, Any], args)) if isinstance(args, Mapping) else {}
        )

        async def progress(value: float, total: float | None, message: str | None) -> None:
            try:
                await ctx.report_progress(
                    value, total, message, data={"server": server.name, "tool": self.mcp_name}
                )
            except ToolProgressError as error:
                _log.debug("dropped progress of %s: %s", self.mcp_name, error)

        meta: JsonObject = {"io.actoviq/runId": ctx.run_id, "io.actoviq/callId": ctx.call_id}
        if ctx.idempotency_key is not None:
            meta["io.actoviq/idempotencyKey"] = ctx.idempotency_key
        try:
            result = await server.call_tool(
                self.mcp_name, arguments, on_progress=progress, meta=meta
            )
        except McpConnectionLostError as error:
            # The server may have acted: "cancelled" makes a side effect ``unknown`` (D5).
            raise self._failure(ctx, "cancelled", error.message, error) from error
        except McpCallTimeoutError as error:
            # Sent and never answered: the server may have acted, so a side effect is ``unknown``.
            raise self._failure(ctx, "timeout", error.message, error) from error
        except McpResultError as error:
            raise self._failure(ctx, "validation", error.message, error) from error
        except McpCallError as error:
            details = error.details or {}
            kind: ToolFailureKind = "execution"
            if details.get("mcpCode") == _INVALID_PARAMS and "nknown tool" in error.message:
                kind = "not_found"
            raise self._failure(ctx, kind, error.message, error) from error
        except McpError as error:  # closed, could not connect, unavailable: nothing was sent
            raise self._failure(ctx, "execution", error.message, error) from error
        if result.is_error:
            text = result.text() or f'MCP tool "{self.mcp_name}" reported an error.'
            raise self._failure(ctx, "execution", text)
        return ToolOutput(value=result.value())

    def _failure(
        self,
        ctx: ToolExecutionContext,
        kind: ToolFailureKind,
        message: str,
        cause: BaseException | None = None,
    ) -> ToolExecutionError:
        return ToolExecutionError(
            ToolFailure(
                kind=kind, tool_name=self.name, call_id=ctx.call_id, message=message, cause=cause
            )
        )


async def mcp_tools(
    server: McpServer,
    *,
    include: ToolFilter | None = None,
    exclude: ToolFilter | None = None,
    prefix: str = "",
    effects: Mapping[str, ToolEffect] | None = None,
    approval: bool | Mapping[str, bool] | None = None,
    trust_annotations: bool = True,
    timeout_ms: float | None = None,
    registry: ToolRegistry | None = None,
) -> McpToolset:
    """List ``server``'s tools (starting it) and wrap them as runtime tools.

    Args:
        server: the MCP server.
        include: keep only these tools (names, ``fnmatch`` patterns or a predicate).
        exclude: drop these tools (same forms); applied after ``include``.
        prefix: prepended to every tool name (``"files_"`` → ``files_read``); names are then
            made provider-safe (``[A-Za-z0-9_-]``, at most 64 characters).
        effects: per-tool effect overrides, keyed by the MCP or the runtime name.
        approval: ``True``/``False`` for every tool, or per-tool overrides (same keys).
        trust_annotations: False treats every tool as a side effect needing approval.
        timeout_ms: per-call timeout of every tool (else the run's tool timeout).
        registry: register the tools there now, and tools that appear later too.

    Raises:
        McpConfigurationError: bad filters or overrides.
        McpToolNameError: two tools map to one name.
        ToolRegistryError: a name is already registered in ``registry``.
        McpConnectionError / McpServerUnavailableError / McpClosedError: no connection.
    """
    if not isinstance(prefix, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise McpConfigurationError("mcp_tools(prefix=...) must be a string.")
    effect_map: dict[str, ToolEffect] = dict(effects or {})
    for key, effect in effect_map.items():
        if effect not in _EFFECTS:
            raise McpConfigurationError(
                f'mcp_tools(effects=...) for "{key}" must be one of {", ".join(_EFFECTS)}.'
            )
    if approval is not None and not isinstance(approval, bool):
        approval = dict(approval)
        if not all(isinstance(value, bool) for value in approval.values()):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise McpConfigurationError("mcp_tools(approval=...) values must be booleans.")
    if timeout_ms is not None:
        ToolBehavior(timeout_ms=timeout_ms)  # same validation as every tool
    toolset = McpToolset(
        server,
        include=_matcher(include, "include"),
        exclude=_matcher(exclude, "exclude"),
        prefix=prefix,
        effects=effect_map,
        approval=approval,
        trust_annotations=trust_annotations,
        timeout_ms=timeout_ms,
    )
    await server.list_tools()
    toolset._apply(server)  # pyright: ignore[reportPrivateUsage]
    toolset._follow()  # pyright: ignore[reportPrivateUsage]
    if registry is not None:
        toolset.register(registry)
    return toolset
