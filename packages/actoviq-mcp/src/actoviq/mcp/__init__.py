"""actoviq.mcp: Model Context Protocol servers as runtime tools, and agents served over MCP.

Built on the official ``mcp`` SDK. An :class:`McpServer` (stdio, streamable HTTP, SSE or
in-process) starts on first use, restarts after a crash with a bounded backoff and is closed by
the runtime that owns it; :func:`mcp_tools` turns its tools into runtime tools whose effects come
from the MCP annotations, so approvals, durable pending state and reconciliation apply to them;
:func:`serve_agent_mcp` exposes an agent as an MCP tool.

Example:
    >>> import sys
    >>> from actoviq.mcp import McpServer, mcp_tools
    >>> server = McpServer.stdio(sys.executable, ["notes_server.py"], name="notes")
    >>> # async with AgentRuntime(models=models) as runtime:
    >>> #     toolset = await mcp_tools(server.attach(runtime), registry=runtime.tools)
    >>> #     agent = AgentSpec(id="a", name="A", instructions="...", model="...",
    >>> #                       tools=toolset.names())
    >>> #     result = await runtime.run(agent, "What is in my notes?")
"""

from actoviq.mcp.errors import (
    McpCallError,
    McpCallTimeoutError,
    McpClosedError,
    McpConfigurationError,
    McpConnectionError,
    McpConnectionLostError,
    McpError,
    McpResultError,
    McpServerUnavailableError,
    McpToolNameError,
)
from actoviq.mcp.options import McpServerOptions, ProgressCallback, RestartPolicy
from actoviq.mcp.prompts import get_prompt, read_resource
from actoviq.mcp.results import McpToolResult, content_to_items, tool_result_value
from actoviq.mcp.serve import RUN_INTERRUPTED_CODE, agent_mcp_server, serve_agent_mcp
from actoviq.mcp.server import McpServer
from actoviq.mcp.tools import McpToolset, ToolFilter, annotation_effect, mcp_tools
from actoviq.mcp.transports import (
    HttpTransport,
    InProcessTransport,
    McpTransport,
    SseTransport,
    StdioTransport,
)

__all__ = [
    "RUN_INTERRUPTED_CODE",
    "HttpTransport",
    "InProcessTransport",
    "McpCallError",
    "McpCallTimeoutError",
    "McpClosedError",
    "McpConfigurationError",
    "McpConnectionError",
    "McpConnectionLostError",
    "McpError",
    "McpResultError",
    "McpServer",
    "McpServerOptions",
    "McpServerUnavailableError",
    "McpToolNameError",
    "McpToolResult",
    "McpToolset",
    "McpTransport",
    "ProgressCallback",
    "RestartPolicy",
    "SseTransport",
    "StdioTransport",
    "ToolFilter",
    "agent_mcp_server",
    "annotation_effect",
    "content_to_items",
    "get_prompt",
    "mcp_tools",
    "read_resource",
    "serve_agent_mcp",
    "tool_result_value",
]
