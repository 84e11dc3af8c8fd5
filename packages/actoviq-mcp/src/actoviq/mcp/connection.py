"""One live connection to an MCP server, owned by one task.

The SDK's ``Client`` holds anyio task groups and cancel scopes that must be entered and left by
the same task, while requests come from many tasks (every tool call) and the close comes from yet
another (``runtime.aclose()``). So each connection runs in an owner task: it connects, publishes
the ``Client``, serves catalog refreshes (``tools/list_changed``), and disconnects when asked to
stop or when the server side ended. :meth:`Connection.close` always awaits the owner task.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio

from actoviq.mcp.schema_guard import guard_output_validation
from actoviq.mcp.server_support import failure_reason
from actoviq.mcp.transports import InProcessTransport, McpTransport, watch_closure

__all__ = ["Connection"]

_log = logging.getLogger("actoviq.mcp")

RefreshFn = Callable[[Any], Awaitable[None]]


class Connection:
    """A connected SDK ``mcp.Client`` plus the task that owns it (internal)."""

    __slots__ = (
        "_connect_timeout",
        "_mode",
        "_on_lost",
        "_refresh",
        "_refresh_wanted",
        "_stop",
        "_task",
        "_transport",
        "_wake",
        "client",
        "generation",
        "lost",
    )

    def __init__(
        self,
        transport: McpTransport,
        *,
        generation: int,
        mode: str,
        connect_timeout: float,
        refresh: RefreshFn,
        on_lost: Callable[[Connection], None],
    ) -> None:
        self._transport = transport
        self._mode = mode
        self._connect_timeout = connect_timeout
        self._refresh = refresh
        self._on_lost = on_lost
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        self._refresh_wanted = False
        self._task: asyncio.Task[None] | None = None
        self.client: Any = None  # mcp.Client once open() returned
        self.generation = generation
        self.lost = False

    @property
    def alive(self) -> bool:
        """Connected, not lost and not stopping."""
        return self.client is not None and not self.lost and not self._stop.is_set()

    async def open(self) -> None:
        """Connect (bounded by the connect timeout); on failure nothing is left running.

        Raises:
            TimeoutError: the handshake did not finish in time.
            Exception: whatever the transport or handshake raised.
        """
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Any] = loop.create_future()
        self._task = loop.create_task(self._own(ready), name=f"mcp-connection-{self.generation}")
        try:
            # The deadline is applied from outside: a cancel scope around entering the SDK client
            # would have to exit before the client's own task groups do.
            async with asyncio.timeout(self._connect_timeout):
                self.client = await asyncio.shield(ready)
        except BaseException:
            self._stop.set()
            self._wake.set()
            if not ready.done():
                self._task.cancel()
            await asyncio.wait({self._task})
            if ready.done() and not ready.cancelled():
                ready.exception()  # retrieved: the caller re-raises its own copy
            raise

    def request_refresh(self) -> None:
        """Ask the owner task to re-list the tools (a ``tools/list_changed`` arrived)."""
        self._refresh_wanted = True
        self._wake.set()

    def mark_lost(self) -> None:
        """The server side ended (end of stream or a ``CONNECTION_CLOSED`` answer)."""
        if not self.lost:
            self.lost = True
            self._wake.set()
            if not self._stop.is_set():
                self._on_lost(self)

    async def close(self) -> None:
        """Stop the owner task (it disconnects and stops the server process) and await it."""
        self._stop.set()
        self._wake.set()
        task = self._task
        if task is None:
            return
        if self.client is None and not task.done():
            task.cancel()  # still connecting: abandon the handshake (the transport cleans up)
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.wait({task})
            raise
        ended = None if task.cancelled() else task.exception()
        if ended is not None:
            _log.debug("MCP connection ended with %s", failure_reason(ended))

    # -- the owner task ---------------------------------------------------------------------------

    async def _own(self, ready: asyncio.Future[Any]) -> None:
        from mcp import Client
        from mcp.types import Implementation

        try:
            async with AsyncExitStack() as stack:
                target: Any = self._transport.open()
                if not isinstance(self._transport, InProcessTransport):
                    target = watch_closure(target, self.mark_lost)
                client = Client(
                    target,
                    mode=self._mode,
                    message_handler=self._on_message,
                    cache=None,
                    client_info=Implementation(name="actoviq-mcp", version="1"),
                )
                await stack.enter_async_context(client)
                guard_output_validation(client.session)
                if not ready.done():
                    ready.set_result(client)
                async with anyio.create_task_group() as group:
                    if _wants_listen(client):
                        group.start_soon(self._listen, client)
                    await self._serve(client)
                    group.cancel_scope.cancel()
        except BaseException as error:
            if isinstance(error, asyncio.CancelledError) and not ready.done():
                ready.cancel()
            elif not ready.done():
                ready.set_exception(error)
            elif not isinstance(error, asyncio.CancelledError):
                _log.debug(
                    "MCP connection %s closed with %s", self.generation, failure_reason(error)
                )
            if isinstance(error, asyncio.CancelledError):
                raise
        finally:
            self.lost = True

    async def _serve(self, client: Any) -> None:
        while not self._stop.is_set() and not self.lost:
            await self._wake.wait()
            self._wake.clear()
            if self._refresh_wanted and not self._stop.is_set() and not self.lost:
                self._refresh_wanted = False
                try:
                    await self._refresh(client)
                except Exception as error:  # the next listing retries; calls are unaffected
                    _log.warning("MCP tool catalog refresh failed: %s", failure_reason(error))

    async def _on_message(self, message: Any) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self.request_refresh()
        elif isinstance(message, Exception):
            _log.debug("MCP transport reported %s", failure_reason(message))

    async def _listen(self, client: Any) -> None:
        """2026-07-28 servers announce list changes only on a ``subscriptions/listen`` stream."""
        from mcp import MCPError
        from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost

        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self.request_refresh()
        except (ListenNotSupportedError, SubscriptionLost, MCPError, TimeoutError) as error:
            _log.debug("MCP subscriptions/listen unavailable: %s", failure_reason(error))


def _wants_listen(client: Any) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    capabilities = client.server_capabilities
    tools = getattr(capabilities, "tools", None)
    return (
        client.protocol_version in MODERN_PROTOCOL_VERSIONS
        and tools is not None
        and bool(tools.list_changed)
    )
