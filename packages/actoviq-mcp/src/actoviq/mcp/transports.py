"""How to reach an MCP server: stdio subprocess, streamable HTTP, SSE, or an in-process server.

Each transport is a frozen value that opens the official SDK's transport (``stdio_client``,
``streamable_http_client``, ``sse_client``) or an in-process ``Server``. ``describe()`` names the
target without secrets: headers, URL user-info, query strings and environment values never appear.
"""

from __future__ import annotations

import math
import sys
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import anyio
import attrs

from actoviq.mcp.errors import McpConfigurationError

__all__ = ["HttpTransport", "InProcessTransport", "McpTransport", "SseTransport", "StdioTransport"]


def _args(value: Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        raise McpConfigurationError("MCP stdio args must be a sequence of strings, not one string.")
    items = tuple(value)
    for item in items:
        if not isinstance(item, str) or "\0" in item:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise McpConfigurationError("MCP stdio args must be strings without NUL bytes.")
    return items


def _env(value: Mapping[str, str] | None) -> tuple[tuple[str, str], ...] | None:
    if value is None:
        return None
    pairs: list[tuple[str, str]] = []
    for key, item in dict(value).items():
        if not isinstance(key, str) or not isinstance(item, str) or not key:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise McpConfigurationError("MCP stdio env must map non-empty strings to strings.")
        pairs.append((key, item))
    return tuple(sorted(pairs))


def _headers(value: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    pairs: list[tuple[str, str]] = []
    for key, item in dict(value or {}).items():
        if not isinstance(key, str) or not isinstance(item, str) or not key.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise McpConfigurationError("MCP HTTP headers must map header names to strings.")
        pairs.append((key, item))
    return tuple(pairs)


def _check_url(_: object, __: object, value: str) -> None:
    parts = urlsplit(value) if isinstance(value, str) else None  # pyright: ignore[reportUnnecessaryIsInstance]
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise McpConfigurationError(
            f"MCP server URL must be an absolute http(s) URL; got {safe_url(str(value))!r}."
        )


def _check_seconds(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise McpConfigurationError(f"MCP {attribute.name} must be a finite number of seconds.")
    if value <= 0:
        raise McpConfigurationError(f"MCP {attribute.name} must be positive.")


def _check_command(value: object) -> None:
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise McpConfigurationError("MCP stdio command must be a non-empty string.")


def safe_url(url: str) -> str:
    """``url`` without user-info, query or fragment (safe for messages and events)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}" if parts.scheme else "<invalid url>"


@attrs.frozen(kw_only=True, slots=True)
class StdioTransport:
    """Launch ``command args...`` and speak MCP over its stdin/stdout (the SDK's ``stdio_client``).

    ``env`` is merged over the SDK's safe default environment (PATH, HOME, ...); the rest of the
    parent's environment is not inherited. The server runs in its own process group and is stopped
    (stdin closed, then SIGTERM, then SIGKILL, each bounded) when the connection closes.
    """

    command: str = attrs.field(validator=lambda _, __, value: _check_command(value))
    args: tuple[str, ...] = attrs.field(default=(), converter=_args)
    env: tuple[tuple[str, str], ...] | None = attrs.field(default=None, converter=_env, repr=False)
    cwd: str | None = None
    stderr: TextIO | None = attrs.field(default=None, eq=False, repr=False)

    def describe(self) -> str:
        """``stdio:<command> <args>`` (no environment values)."""
        return " ".join(["stdio:" + self.command, *self.args])

    def default_name(self) -> str:
        """A short server name: the script or module it runs, else the command's basename."""
        for arg in self.args:
            if not arg.startswith("-"):
                return Path(arg).stem or Path(self.command).name
        return Path(self.command).name

    def open(self) -> AbstractAsyncContextManager[Any]:
        """The SDK transport (entered by the SDK ``Client``)."""
        from mcp import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=self.command,
            args=list(self.args),
            env=dict(self.env) if self.env is not None else None,
            cwd=self.cwd,
        )
        return stdio_client(params, errlog=self.stderr if self.stderr is not None else sys.stderr)


@attrs.frozen(kw_only=True, slots=True)
class HttpTransport:
    """Streamable HTTP (the SDK's ``streamable_http_client`` over an ``httpx2.AsyncClient``).

    ``headers`` (e.g. ``Authorization``) go on every request and never into messages or events.
    """

    url: str = attrs.field(validator=_check_url)
    headers: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_headers, repr=False)
    timeout: float = attrs.field(default=30.0, validator=_check_seconds)
    read_timeout: float = attrs.field(default=300.0, validator=_check_seconds)

    def describe(self) -> str:
        """``http:<scheme>://<host>[:port]<path>`` (no user-info, query or headers)."""
        return "http:" + safe_url(self.url)

    def default_name(self) -> str:
        """The URL's host name."""
        return urlsplit(self.url).hostname or "http"

    def open(self) -> AbstractAsyncContextManager[Any]:
        """The SDK transport over an ``httpx2`` client that closes with it."""
        return self._open()

    @asynccontextmanager
    async def _open(self) -> AsyncGenerator[Any]:
        import httpx2

        from mcp.client.streamable_http import streamable_http_client

        client = httpx2.AsyncClient(
            headers=dict(self.headers),
            timeout=httpx2.Timeout(self.timeout, read=self.read_timeout),
        )
        async with client, streamable_http_client(self.url, http_client=client) as streams:
            yield streams


@attrs.frozen(kw_only=True, slots=True)
class SseTransport:
    """The legacy HTTP+SSE transport (the SDK's ``sse_client``), for servers that only offer it."""

    url: str = attrs.field(validator=_check_url)
    headers: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_headers, repr=False)
    timeout: float = attrs.field(default=30.0, validator=_check_seconds)
    read_timeout: float = attrs.field(default=300.0, validator=_check_seconds)

    def describe(self) -> str:
        """``sse:<scheme>://<host>[:port]<path>``."""
        return "sse:" + safe_url(self.url)

    def default_name(self) -> str:
        """The URL's host name."""
        return urlsplit(self.url).hostname or "sse"

    def open(self) -> AbstractAsyncContextManager[Any]:
        """The SDK transport."""
        from mcp.client.sse import sse_client

        return sse_client(
            self.url,
            headers=dict(self.headers),
            timeout=self.timeout,
            sse_read_timeout=self.read_timeout,
        )


@attrs.frozen(kw_only=True, slots=True)
class InProcessTransport:
    """An SDK server object (``MCPServer`` or low-level ``Server``) in this process (tests, demos).

    It speaks the same JSON-RPC as a subprocess would (the SDK's in-memory transport).
    """

    # mcp.server.mcpserver.MCPServer or mcp.server.Server: typed Any so importing this module does
    # not import the SDK's server side.
    server: Any = attrs.field(eq=False)

    def describe(self) -> str:
        """``memory:<server name>``."""
        return "memory:" + self.default_name()

    def default_name(self) -> str:
        """The SDK server's name."""
        return str(getattr(self.server, "name", "in-process"))

    def open(self) -> Any:
        """The server object itself: the SDK ``Client`` connects to it in-process."""
        return self.server


McpTransport = StdioTransport | HttpTransport | SseTransport | InProcessTransport
"""Every way :class:`~actoviq.mcp.McpServer` can reach a server."""


@asynccontextmanager
async def watch_closure(
    transport: AbstractAsyncContextManager[Any], on_closed: Any
) -> AsyncGenerator[Any]:
    """Wrap an SDK transport so ``on_closed()`` runs as soon as the server side ends.

    The SDK reports a dead stdio server only to a request in flight; this pump forwards every
    inbound message unchanged and calls ``on_closed`` at end of stream, so the next request can
    restart the server first instead of failing as if it had been sent.
    """
    async with transport as (read_stream, write_stream):
        forward_send, forward_receive = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            try:
                async with forward_send:
                    async for item in read_stream:
                        await forward_send.send(item)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
                pass
            finally:
                on_closed()

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            try:
                yield forward_receive, write_stream
            finally:
                group.cancel_scope.cancel()
                forward_receive.close()
