"""Helpers of :class:`~actoviq.mcp.server.McpServer`: paging ``tools/list`` and naming failures."""

from __future__ import annotations

from typing import Any, Final

from actoviq.events import redact_text
from actoviq.mcp.errors import McpResultError

__all__ = ["closed_early", "failure_reason", "list_all_tools"]

_MAX_PAGES: Final = 1000


async def list_all_tools(client: Any) -> list[Any]:
    """Every tool the server lists, page after page (a typed error after 1,000 pages)."""
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
    raise McpResultError(f"MCP tools/list did not end after {_MAX_PAGES} pages.")


def failure_reason(error: BaseException) -> str:
    """The innermost failure of ``error`` as ``Kind: text``, redacted."""
    leaf = _first_leaf(error)
    text = str(leaf)
    kind = type(leaf).__name__
    return redact_text(f"{kind}: {text}" if text else kind)


def closed_early(error: BaseException) -> bool:
    """Whether ``error`` is the SDK's connection-closed error (the server went away)."""
    from mcp_types import CONNECTION_CLOSED

    from mcp import MCPError

    leaf = _first_leaf(error)
    return isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED


def _first_leaf(error: BaseException) -> BaseException:
    inner: tuple[BaseException, ...] = getattr(error, "exceptions", ())
    return _first_leaf(inner[0]) if inner else error
