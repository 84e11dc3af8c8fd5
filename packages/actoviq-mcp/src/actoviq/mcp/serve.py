"""Serve an agent over MCP: one tool that runs the agent on the host's runtime.

The tool takes ``{"input": "<message>"}`` and answers with the agent's output (text, or
``structuredContent`` when the agent declares an output schema). Progress of the run (model turns,
tool calls) is sent as ``notifications/progress`` when the caller asked for it. A run that stops
for an approval answers with an MCP error (code :data:`RUN_INTERRUPTED_CODE`) whose ``data``
carries the ``runId`` and the open interruptions: resuming stays with the host, which owns the
checkpoint. A failed or cancelled run is an ``isError`` result (messages redacted).

Example:
    >>> # asyncio.run(serve_agent_mcp(runtime, agent, name="researcher"))           # stdio
    >>> # asyncio.run(serve_agent_mcp(runtime, agent, name="researcher",
    >>> #                             transport="streamable-http", port=8765))
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal, cast

from actoviq.core import ActoviqError, AgentSpec, JsonObject, JsonValue, clone_json_value
from actoviq.events import redact_text
from actoviq.mcp.errors import McpConfigurationError
from actoviq.runtime import AgentRuntime, to_tool_json

__all__ = ["RUN_INTERRUPTED_CODE", "agent_mcp_server", "serve_agent_mcp"]

RUN_INTERRUPTED_CODE: Final = -32010
"""The MCP error code of a run waiting for a decision (``data.runId``, ``data.interruptions``)."""

_INPUT_SCHEMA: Final[JsonObject] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The message for the agent."}},
    "required": ["input"],
    "additionalProperties": False,
}
_PROGRESS_EVENTS: Final = {
    "model.completed": "model turn {turn} completed",
    "tool.started": "tool {name} started",
    "tool.completed": "tool {name} completed",
    "tool.failed": "tool {name} failed",
}


def _output_schema(agent: AgentSpec[Any, Any]) -> tuple[JsonObject | None, bool]:
    """(MCP outputSchema, wrapped): MCP structured content must be an object."""
    if agent.output is None:
        return None, False
    schema = dict(agent.output.schema)
    if schema.get("type") == "object":
        return schema, False
    wrapped: JsonObject = {
        "type": "object",
        "properties": {"result": cast(JsonValue, schema)},
        "required": ["result"],
    }
    return wrapped, True


def agent_mcp_server(
    runtime: AgentRuntime,
    agent: AgentSpec[Any, Any],
    *,
    name: str,
    description: str | None = None,
    server_name: str | None = None,
) -> Any:
    """The SDK low-level ``mcp.server.Server`` exposing ``agent`` as tool ``name``.

    Run it yourself (``server.run(...)``, ``server.streamable_http_app()``) or use
    :func:`serve_agent_mcp`.

    Raises:
        McpConfigurationError: an empty tool name.
    """
    import mcp.types as types
    from mcp import MCPError
    from mcp.server import Server

    if not isinstance(name, str) or not name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise McpConfigurationError("serve_agent_mcp(name=...) must be a non-empty tool name.")
    tool_name = name.strip()
    runtime.register_agent(agent)
    output_schema, wrapped = _output_schema(agent)
    tool = types.Tool(
        name=tool_name,
        description=description or f"Ask the {agent.name} agent.",
        input_schema=_INPUT_SCHEMA,
        output_schema=output_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=False, destructive_hint=True, open_world_hint=True
        ),
    )

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: Any) -> Any:
        if params.name != tool_name:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        arguments = cast(dict[str, Any], params.arguments or {})
        unexpected = sorted(set(arguments) - {"input"})
        if unexpected:  # the published inputSchema has additionalProperties: false
            raise MCPError(
                types.INVALID_PARAMS, f"Unexpected argument(s): {', '.join(unexpected)[:200]}."
            )
        message = arguments.get("input")
        if not isinstance(message, str):
            raise MCPError(types.INVALID_PARAMS, 'Argument "input" must be a string.')
        return await _run(runtime, agent, message, ctx.session.report_progress, wrapped)

    return Server(
        server_name or f"actoviq-{agent.id}",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _run(
    runtime: AgentRuntime,
    agent: AgentSpec[Any, Any],
    message: str,
    report: Callable[[float, float | None, str | None], Awaitable[None]],
    wrapped: bool,
) -> Any:
    from mcp import MCPError

    steps = 0
    try:
        async with runtime.stream(agent, message) as handle:
            async for event in handle:
                template = _PROGRESS_EVENTS.get(event.type)
                if template is not None and isinstance(event.data, dict):
                    steps += 1
                    data = cast(dict[str, Any], event.data)
                    await report(steps, None, template.format_map(_Fields(data)))
            result = await handle.result()
    except ActoviqError as error:
        text = redact_text(f"[{error.code}] {error.message}")
        return _error_result(text)
    if result.status == "interrupted":
        interruptions: list[JsonValue] = [
            {
                "id": item.id,
                "kind": item.kind,
                "reason": redact_text(item.reason or ""),
                "toolName": item.tool_name,
                "callId": item.call_id,
            }
            for item in result.interruptions
        ]
        raise MCPError(
            RUN_INTERRUPTED_CODE,
            f"Agent run {result.run_id} waits for a decision ({len(interruptions)} open); "
            "the host resumes it.",
            data={"runId": result.run_id, "status": "interrupted", "interruptions": interruptions},
        )
    if result.status != "completed":
        text = f"Agent run {result.run_id} ended {result.status}."
        return _error_result(text)
    return _answer(result.output, wrapped)


def _answer(output: object, wrapped: bool) -> Any:
    import json

    import mcp.types as types

    if isinstance(output, str):
        return types.CallToolResult(content=[types.TextContent(type="text", text=output)])
    value = clone_json_value(to_tool_json(output), "agent output")
    structured = {"result": value} if wrapped or not isinstance(value, dict) else value
    text = json.dumps(value, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def _error_result(text: str) -> Any:
    import mcp.types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


class _Fields(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


async def serve_agent_mcp(
    runtime: AgentRuntime,
    agent: AgentSpec[Any, Any],
    *,
    name: str,
    description: str | None = None,
    transport: Literal["stdio", "streamable-http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    on_listening: Callable[[str], object] | None = None,
) -> None:
    """Serve ``agent`` as MCP tool ``name`` until stdin closes (stdio) or the task is cancelled.

    Args:
        runtime: the host runtime (its tools, policy, checkpoint store apply to every run).
        agent: the agent to expose.
        name: the MCP tool name.
        description: the tool description (default: ``"Ask the <agent name> agent."``).
        transport: ``"stdio"`` or ``"streamable-http"``.
        host: HTTP bind address (loopback by default).
        port: HTTP port; 0 picks a free one (see ``on_listening``).
        path: the HTTP endpoint path.
        on_listening: called with the endpoint URL once the HTTP socket accepts connections.

    Raises:
        McpConfigurationError: an unknown transport or a bad name.
    """
    server = agent_mcp_server(runtime, agent, name=name, description=description)
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return
    if transport != "streamable-http":
        raise McpConfigurationError(
            'serve_agent_mcp(transport=...) must be "stdio" or "streamable-http"; '
            f"got {transport!r}."
        )
    await _serve_http(server, host=host, port=port, path=path, on_listening=on_listening)


async def _serve_http(
    server: Any, *, host: str, port: int, path: str, on_listening: Callable[[str], object] | None
) -> None:
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=path, host=host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
        bound = sock.getsockname()[1]
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        serving = asyncio.get_running_loop().create_task(web.serve(sockets=[sock]))
        try:
            if on_listening is not None:
                outcome = on_listening(f"http://{shown}:{bound}{path}")
                if asyncio.iscoroutine(outcome):
                    await outcome
            await asyncio.shield(serving)
        finally:
            if not serving.done():
                web.should_exit = True
                await asyncio.wait({serving})
    finally:
        sock.close()
