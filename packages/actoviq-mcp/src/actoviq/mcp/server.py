"""``McpServer``: a lazily started, restartable MCP server connection that a runtime can own.

Example:
    >>> import sys
    >>> server = McpServer.stdio(sys.executable, ["files_server.py"], name="files")
    >>> server.name
    'files'
    >>> # async with AgentRuntime(models=models) as runtime:
    >>> #     server.attach(runtime)              # owned by runtime.services, closed with it
    >>> #     toolset = await mcp_tools(server, registry=runtime.tools)
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Self, TextIO, Unpack, cast

from actoviq.core import ActoviqError, JsonObject
from actoviq.events import redact_text
from actoviq.mcp.connection import Connection
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
)
from actoviq.mcp.options import McpServerOptions, ProgressCallback, RestartPolicy, check_timeout
from actoviq.mcp.results import McpToolResult, from_call_result
from actoviq.mcp.server_support import closed_early, failure_reason, list_all_tools
from actoviq.mcp.transports import (
    HttpTransport,
    InProcessTransport,
    McpTransport,
    SseTransport,
    StdioTransport,
)
from actoviq.runtime import AgentRuntime, RuntimeServices, RuntimeServicesClosedError

__all__ = ["McpServer", "McpServerOptions", "ProgressCallback", "RestartPolicy"]
_VALIDATION_PREFIXES: Final = ("Invalid structured content", "Invalid schema for tool")
DEFAULT_CALL_TIMEOUT_MS: Final = 300_000.0
"""The deadline of a tool call whose caller sets none (five minutes)."""


class McpServer:
    """One MCP server: connected on first use, restarted after a crash, closed exactly once.

    Use the constructors :meth:`stdio`, :meth:`http`, :meth:`sse` or :meth:`in_process`.
    :meth:`attach` hands it to a runtime: it then starts through ``runtime.services`` (a
    ``mcp:<name>`` service) and ``runtime.aclose()`` closes it. Unattached, close it yourself
    (``async with server:`` or :meth:`aclose`).

    Args:
        transport: where the server is.
        name: a short name (tool metadata, errors, the service id); derived from the transport.
        mode: ``"auto"`` (negotiate the newest protocol the server speaks) or ``"legacy"``
            (the ``initialize`` handshake); passed to the SDK ``Client``.
        connect_timeout_ms: bound on starting the server and the handshake.
        call_timeout_ms: deadline of a tool call whose caller gives none (default 300,000 ms), so a
            server that never answers, or answers with a malformed message the SDK drops, cannot
            hang a run; it then gets ``notifications/cancelled`` (:class:`McpCallTimeoutError`).
        restart: the :class:`RestartPolicy` (default: 3 restarts, 100 ms doubling backoff).
    """

    def __init__(self, transport: McpTransport, **options: Unpack[McpServerOptions]) -> None:
        if not isinstance(
            transport, StdioTransport | HttpTransport | SseTransport | InProcessTransport
        ):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise McpConfigurationError("McpServer needs a Stdio/Http/Sse/InProcess transport.")
        name = options.get("name") or transport.default_name()
        if not isinstance(name, str) or not name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise McpConfigurationError("McpServer name must be a non-empty string.")
        mode = options.get("mode", "auto")
        if not isinstance(mode, str) or not (  # pyright: ignore[reportUnnecessaryIsInstance]
            mode in ("auto", "legacy") or re.fullmatch(r"\d{4}-\d{2}-\d{2}", mode)
        ):
            raise McpConfigurationError(
                f'McpServer mode must be "auto", "legacy" or a protocol version; got {mode!r}.'
            )
        restart = options.get("restart")
        if restart is not None and not isinstance(restart, RestartPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise McpConfigurationError("McpServer restart must be a RestartPolicy.")
        self.transport: McpTransport = transport
        self.name = name.strip()
        self.mode = mode
        self.connect_timeout_ms = check_timeout(
            options.get("connect_timeout_ms", 30_000.0), "connect_timeout_ms"
        )
        self.call_timeout_ms = check_timeout(
            options.get("call_timeout_ms", DEFAULT_CALL_TIMEOUT_MS), "call_timeout_ms"
        )
        self.restart_policy = restart if restart is not None else RestartPolicy()
        self._lock = asyncio.Lock()
        self._closed_event = asyncio.Event()
        self._conn: Connection | None = None
        self._connecting: Connection | None = None
        self._closed = False
        self._unavailable = False
        self._restarts = 0
        self._generation = 0
        self._crashes = 0
        self._services: RuntimeServices | None = None
        self._service_id: str | None = None
        self._catalog: dict[str, Any] | None = None
        self._catalog_stale = True
        self._catalog_key: dict[str, object] | None = None
        self._version = 0
        self._changed = asyncio.Event()
        self._listeners: list[Callable[[McpServer], None]] = []

    # -- constructors -----------------------------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr: TextIO | None = None,
        **options: Unpack[McpServerOptions],
    ) -> McpServer:
        """A server launched as ``command args...`` speaking MCP on stdin/stdout.

        ``env`` is merged over a minimal safe environment (PATH, HOME, ...); ``stderr`` receives
        the server's standard error (default: ours).
        """
        transport = StdioTransport(command=command, args=args, env=env, cwd=cwd, stderr=stderr)
        return cls(transport, **options)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_ms: float = 30_000.0,
        **options: Unpack[McpServerOptions],
    ) -> McpServer:
        """A streamable-HTTP server at ``url`` (``headers`` go on every request, never in logs)."""
        timeout = check_timeout(timeout_ms, "timeout_ms") / 1000.0
        return cls(HttpTransport(url=url, headers=headers, timeout=timeout), **options)

    @classmethod
    def sse(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_ms: float = 30_000.0,
        **options: Unpack[McpServerOptions],
    ) -> McpServer:
        """A server on the older HTTP+SSE transport (prefer :meth:`http` where offered)."""
        timeout = check_timeout(timeout_ms, "timeout_ms") / 1000.0
        return cls(SseTransport(url=url, headers=headers, timeout=timeout), **options)

    @classmethod
    def in_process(cls, server: object, **options: Unpack[McpServerOptions]) -> McpServer:
        """An SDK ``MCPServer`` (or low-level ``Server``) object in this process."""
        return cls(InProcessTransport(server=server), **options)

    # -- state ------------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once :meth:`aclose` started (directly or by the owning runtime)."""
        return self._closed

    @property
    def connected(self) -> bool:
        """Whether a live connection exists now."""
        return self._conn is not None and self._conn.alive

    @property
    def crashes(self) -> int:
        """How many times the connection was lost unexpectedly."""
        return self._crashes

    @property
    def service_id(self) -> str | None:
        """The runtime service id once :meth:`attach` ran."""
        return self._service_id

    @property
    def tools_version(self) -> int:
        """Bumped each time the listed tool set changes (first listing included)."""
        return self._version

    def describe(self) -> str:
        """The transport without secrets, e.g. ``stdio:python server.py``."""
        return self.transport.describe()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("connected" if self.connected else "idle")
        return f"McpServer(name={self.name!r}, transport={self.describe()!r}, state={state})"

    # -- ownership --------------------------------------------------------------------------------

    def attach(
        self, owner: AgentRuntime | RuntimeServices, *, service_id: str | None = None
    ) -> Self:
        """Make ``owner`` (an ``AgentRuntime`` or its ``RuntimeServices``) own this server.

        The server becomes the lazily started service ``mcp:<name>``; the owner's close closes
        it exactly once.

        Raises:
            McpConfigurationError: already attached.
            ServiceRegistrationError: the service id is taken.
        """
        services = owner.services if isinstance(owner, AgentRuntime) else owner
        if self._services is not None:
            raise McpConfigurationError(f'MCP server "{self.name}" is already attached.')
        sid = service_id if service_id is not None else f"mcp:{self.name}"
        from actoviq.runtime import ServiceDefinition

        services.register(
            sid, ServiceDefinition(factory=self._service_start, description=self.describe())
        )
        self._services = services
        self._service_id = sid
        return self

    async def _service_start(self) -> McpServer:
        await self._connection_locked()
        return self

    def reset(self) -> None:
        """Allow restarts again after :class:`McpServerUnavailableError`."""
        self._unavailable = False
        self._restarts = 0

    # -- connection -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect now instead of on first use (no-op when connected).

        Raises:
            McpClosedError: the server was closed.
            McpConnectionError: the connection or the handshake failed.
            McpServerUnavailableError: the restart policy gave up on the server.
        """
        await self._ensure()

    async def _ensure(self) -> Connection:
        conn = self._conn
        if conn is not None and conn.alive:
            return conn
        if self._closed:
            raise McpClosedError(f'MCP server "{self.name}" is closed.')
        if self._services is not None and self._service_id is not None:
            try:
                await self._services.resolve(self._service_id)
            except RuntimeServicesClosedError as error:
                raise McpClosedError(
                    f'MCP server "{self.name}" belongs to a closed runtime.'
                ) from error
        return await self._connection_locked()

    async def _connection_locked(self) -> Connection:
        async with self._lock:
            conn = self._conn
            if conn is not None and conn.alive:
                return conn
            if self._closed:
                raise McpClosedError(f'MCP server "{self.name}" is closed.')
            if conn is None:
                return await self._connect()
            self._conn = None
            await conn.close()
            return await self._restart()

    async def _restart(self) -> Connection:
        policy = self.restart_policy
        last: BaseException | None = None
        while True:
            if self._unavailable or self._restarts >= policy.max_restarts:
                self._unavailable = True
                raise McpServerUnavailableError(
                    f'MCP server "{self.name}" ({self.describe()}) crashed {self._restarts + 1} '
                    f"times in a row; it is not restarted again (RestartPolicy.max_restarts="
                    f"{policy.max_restarts}). Fix the server, then call reset().",
                    details={"server": self.name, "restarts": self._restarts},
                ) from last
            self._restarts += 1
            delay = policy.backoff_ms(self._restarts) / 1000.0
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closed_event.wait(), delay)
            if self._closed:
                raise McpClosedError(f'MCP server "{self.name}" is closed.')
            try:
                return await self._connect()
            except McpConnectionError as error:
                last = error

    async def _connect(self) -> Connection:
        self._generation += 1
        conn = Connection(
            self.transport,
            generation=self._generation,
            mode=self.mode,
            connect_timeout=self.connect_timeout_ms / 1000.0,
            refresh=self._refresh_catalog,
            on_lost=self._on_lost,
        )
        self._connecting = conn
        try:
            await conn.open()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self._closed and task is not None and task.cancelling() == 0:
                raise McpClosedError(
                    f'MCP server "{self.name}" was closed while starting.'
                ) from None
            raise
        except TimeoutError as error:
            raise McpConnectionError(
                f'MCP server "{self.name}" ({self.describe()}) did not complete the MCP handshake '
                f"within {self.connect_timeout_ms:g} ms.",
                retryable=True,
                details={"server": self.name},
            ) from error
        except ActoviqError:
            raise
        except Exception as error:
            reason = failure_reason(error)
            if closed_early(error):
                reason = "it closed the connection during the handshake (did it exit? see stderr)"
            raise McpConnectionError(
                f'Could not connect to MCP server "{self.name}" ({self.describe()}): '
                f"{reason}. Check the command or URL, and that the server speaks MCP.",
                retryable=True,
                details={"server": self.name},
            ) from None  # the SDK's error may name the URL with user-info and query: not chained
        finally:
            self._connecting = None
        if self._closed:
            await conn.close()
            raise McpClosedError(f'MCP server "{self.name}" is closed.')
        self._conn = conn
        self._catalog_stale = True
        return conn

    def _on_lost(self, conn: Connection) -> None:
        if not self._closed and conn is self._conn:
            self._crashes += 1

    def _healthy(self) -> None:
        self._restarts = 0

    # -- requests ---------------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout_ms: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> McpToolResult:
        """Call tool ``name`` once and map its answer to canonical items.

        Cancelling the awaiting task (or ``timeout_ms`` elapsing; default: the server's
        ``call_timeout_ms``) sends the protocol's ``notifications/cancelled`` to the server. An
        ``isError`` answer is returned (with ``is_error`` True), not raised.

        Raises:
            McpCallTimeoutError: ``timeout_ms`` elapsed.
            McpConnectionLostError: the server went away mid-call (the outcome is unknown).
            McpCallError: the server refused the request (unknown tool, bad arguments, ...).
            McpResultError: ``structuredContent`` does not fit the ``outputSchema``, or bad data.
            McpClosedError / McpConnectionError / McpServerUnavailableError: no connection.
        """
        raw = await self.call_tool_raw(
            name, arguments, timeout_ms=timeout_ms, on_progress=on_progress, meta=meta
        )
        return from_call_result(raw, server=self.name, tool=name)

    async def call_tool_raw(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout_ms: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Any:
        """:meth:`call_tool` returning the SDK's ``CallToolResult`` unmapped.

        ``meta`` goes to the request's ``_meta`` (the runtime tools send ``io.actoviq/runId``,
        ``io.actoviq/callId`` and, for idempotent writes, ``io.actoviq/idempotencyKey``).
        """
        args = dict(arguments) if arguments is not None else None
        timeout = (
            self.call_timeout_ms if timeout_ms is None else check_timeout(timeout_ms, "timeout_ms")
        )
        conn = await self._ensure()
        scope = asyncio.timeout(timeout / 1000.0)
        try:
            async with scope:
                result = await conn.client.call_tool(
                    name,
                    args,
                    progress_callback=on_progress,
                    meta=cast(Any, dict(meta)) if meta is not None else None,
                )
        except TimeoutError as error:
            if scope.expired():
                raise McpCallTimeoutError(
                    f'MCP tool "{name}" on server "{self.name}" did not answer within '
                    f"{timeout:g} ms; the server was sent a cancellation.",
                    details={"server": self.name, "tool": name},
                ) from error
            raise
        except RuntimeError as error:
            raise self._runtime_error(error, conn, name) from None
        except Exception as error:
            raise self._request_error(error, conn, f'tools/call "{name}"') from None
        self._healthy()
        return result

    async def list_tools(self, *, refresh: bool = False) -> tuple[Any, ...]:
        """The server's tools (SDK ``Tool`` values).

        Listed once, and again after a ``tools/list_changed`` notification, a restart or with
        ``refresh=True``.
        """
        conn = await self._ensure()
        if refresh or self._catalog is None or self._catalog_stale:
            try:
                tools = await list_all_tools(conn.client)
            except Exception as error:
                raise self._request_error(error, conn, "tools/list") from None
            self._set_catalog(tools)
            self._healthy()
        assert self._catalog is not None
        return tuple(self._catalog.values())

    async def read_resource_raw(self, uri: str) -> Any:
        """``resources/read`` (the SDK's ``ReadResourceResult``); see :func:`read_resource`."""
        conn = await self._ensure()
        try:
            result = await conn.client.read_resource(uri)
        except Exception as error:
            raise self._request_error(error, conn, f'resources/read "{uri}"') from None
        self._healthy()
        return result

    async def get_prompt_raw(self, name: str, arguments: Mapping[str, str] | None = None) -> Any:
        """``prompts/get`` (the SDK's ``GetPromptResult``); see :func:`get_prompt`."""
        conn = await self._ensure()
        try:
            result = await conn.client.get_prompt(name, dict(arguments or {}))
        except Exception as error:
            raise self._request_error(error, conn, f'prompts/get "{name}"') from None
        self._healthy()
        return result

    def _runtime_error(self, error: RuntimeError, conn: Connection, tool: str) -> McpError:
        text = str(error)
        if text.startswith(_VALIDATION_PREFIXES) or "did not return structured content" in text:
            return McpResultError(
                f'MCP tool "{tool}" on server "{self.name}" returned a result that does not fit '
                f"its outputSchema: {redact_text(text)}",
                details={"server": self.name, "tool": tool},
            )
        return self._request_error(error, conn, f'tools/call "{tool}"')

    def _request_error(self, error: BaseException, conn: Connection, what: str) -> McpError:
        # Raised "from None" by the callers: the message carries the redacted reason, and the
        # SDK's exception (URLs with user-info or query, server text) is never chained.
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError

        from mcp import MCPError

        if isinstance(error, McpError):
            return error
        details: JsonObject = {"server": self.name, "request": what}
        if isinstance(error, MCPError):
            if error.code == CONNECTION_CLOSED:
                conn.mark_lost()
                if self._closed:
                    return McpClosedError(f'MCP server "{self.name}" was closed during {what}.')
                return McpConnectionLostError(
                    f'MCP server "{self.name}" ({self.describe()}) went away during {what}; '
                    "whether it acted on the request is unknown.",
                    details=details,
                )
            if error.code == REQUEST_TIMEOUT:
                return McpCallTimeoutError(f"{what} on {self.name} timed out.", details=details)
            details["mcpCode"] = error.code
            return McpCallError(
                f'MCP server "{self.name}" refused {what}: {redact_text(error.message)}',
                details=details,
            )
        if isinstance(error, ValidationError):
            return McpResultError(
                f'MCP server "{self.name}" answered {what} with an invalid result.',
                details=details,
            )
        if not conn.alive:
            return McpConnectionLostError(
                f'MCP server "{self.name}" went away during {what}: {failure_reason(error)}',
                details=details,
            )
        return McpCallError(f'{what} on MCP server "{self.name}" failed: {failure_reason(error)}')

    # -- the tool catalog -------------------------------------------------------------------------

    async def _refresh_catalog(self, client: Any) -> None:
        self._set_catalog(await list_all_tools(client))

    def _set_catalog(self, tools: Sequence[Any]) -> None:
        catalog = {tool.name: tool for tool in tools}
        key: dict[str, object] = {
            name: tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            for name, tool in catalog.items()
        }
        changed = key != self._catalog_key
        self._catalog = catalog
        self._catalog_key = key
        self._catalog_stale = False
        if changed:
            self._version += 1
            for listener in list(self._listeners):
                listener(self)
            self._changed.set()
            self._changed = asyncio.Event()

    def cached_tools(self) -> tuple[Any, ...] | None:
        """The last listed tools (SDK ``Tool`` values) without a request, or None."""
        return None if self._catalog is None else tuple(self._catalog.values())

    def add_tools_listener(self, listener: Callable[[McpServer], None]) -> Callable[[], None]:
        """Call ``listener(server)`` after each change of the tool set; returns a remover."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    async def wait_for_tools_change(self, since: int, *, timeout_ms: float = 30_000.0) -> int:
        """Wait until :attr:`tools_version` exceeds ``since``; returns the new version.

        Raises:
            TimeoutError: no change within ``timeout_ms``.
        """
        async with asyncio.timeout(check_timeout(timeout_ms, "timeout_ms") / 1000.0):
            while self._version <= since:
                await self._changed.wait()
        return self._version

    # -- lifecycle --------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Disconnect and stop the server process; idempotent. No restart happens afterwards."""
        if self._closed:
            return
        self._closed = True
        self._closed_event.set()
        if self._connecting is not None:
            await self._connecting.close()  # a hanging start must not hold the close up
        async with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()
        self._changed.set()

    async def close(self) -> None:
        """Alias of :meth:`aclose`."""
        await self.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
