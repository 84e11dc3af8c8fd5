"""The errors of ``actoviq.mcp``: one root, stable codes, messages that say what to do.

Transport details that may carry secrets (headers, URL user-info, environment values) never
appear in a message or in ``details``.
"""

from __future__ import annotations

from typing import ClassVar

from actoviq.core import ActoviqError

__all__ = [
    "McpCallError",
    "McpCallTimeoutError",
    "McpClosedError",
    "McpConfigurationError",
    "McpConnectionError",
    "McpConnectionLostError",
    "McpError",
    "McpResultError",
    "McpServerUnavailableError",
    "McpToolNameError",
]


class McpError(ActoviqError):
    """Root of the errors raised by ``actoviq.mcp``."""

    default_code: ClassVar[str] = "MCP_ERROR"


class McpConfigurationError(McpError, ValueError):
    """An invalid argument: an empty command, a non-HTTP URL, a bad timeout or restart policy."""

    default_code: ClassVar[str] = "MCP_CONFIGURATION_INVALID"


class McpClosedError(McpError):
    """The server was closed (directly or by the runtime that owns it); it does not restart."""

    default_code: ClassVar[str] = "MCP_CLOSED"


class McpConnectionError(McpError):
    """The server could not be started or reached (command missing, refused, handshake failed).

    ``retryable`` is True: a later use tries again (within the restart policy).
    """

    default_code: ClassVar[str] = "MCP_CONNECTION_FAILED"


class McpConnectionLostError(McpError):
    """The connection ended while a request was in flight; whether the server acted is unknown.

    The server process exited, or the HTTP session ended, before the answer arrived.
    """

    default_code: ClassVar[str] = "MCP_CONNECTION_LOST"


class McpServerUnavailableError(McpError):
    """The server crashed more often than its restart policy allows.

    It is not restarted again until :meth:`~actoviq.mcp.McpServer.reset` is called.
    """

    default_code: ClassVar[str] = "MCP_SERVER_UNAVAILABLE"


class McpCallError(McpError):
    """The server answered a request with a protocol error (``details.mcpCode`` holds its code)."""

    default_code: ClassVar[str] = "MCP_CALL_FAILED"


class McpCallTimeoutError(McpError, TimeoutError):
    """A request outlived its ``timeout_ms``; the SDK sent ``notifications/cancelled``."""

    default_code: ClassVar[str] = "MCP_CALL_TIMEOUT"


class McpResultError(McpError):
    """A tool result does not fit the tool's ``outputSchema`` or holds unsupported content."""

    default_code: ClassVar[str] = "MCP_RESULT_INVALID"


class McpToolNameError(McpError, ValueError):
    """Two MCP tools map to the same runtime tool name (after prefix and sanitising)."""

    default_code: ClassVar[str] = "MCP_TOOL_NAME_CONFLICT"
