"""A real HTTP/1.1 server on 127.0.0.1 for provider tests: scripted answers the SDKs read.

Each connection's request is parsed and handed to the test's script with a :class:`Reply` that
writes the answer: a JSON body, an SSE stream, a stall (an answer that never comes), a close
right after the status line. Answers are close-delimited (``Connection: close``), so a stream's
end is the server closing the connection, exactly as a real server ends one early.

The server owns its handler tasks: leaving ``async with`` releases every stall, cancels what is
still running and awaits it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, Self, cast

__all__ = ["LoopbackServer", "Received", "Reply", "Script"]


class Received:
    """One request as the server read it."""

    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body

    def json(self) -> dict[str, Any]:
        """The body as a JSON object."""
        return cast(dict[str, Any], json.loads(self.body))


class Reply:
    """Writes one answer on the connection."""

    def __init__(self, writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        self._writer = writer
        self._release = release
        self.head_sent = False

    async def head(self, status: int = 200, content_type: str = "application/json") -> None:
        """The status line and headers of a close-delimited body."""
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 500: "Internal Server Error"}
        self._writer.write(
            f"HTTP/1.1 {status} {reason.get(status, 'Status')}\r\n"
            f"content-type: {content_type}\r\nconnection: close\r\n\r\n".encode()
        )
        await self._writer.drain()
        self.head_sent = True

    async def send(self, data: bytes) -> None:
        """Part of the body, flushed."""
        self._writer.write(data)
        await self._writer.drain()

    async def json(self, body: object, status: int = 200) -> None:
        """A whole JSON answer."""
        await self.head(status)
        await self.send(json.dumps(body).encode())

    async def event(self, event: dict[str, Any], *, named: bool = True) -> None:
        """One SSE event (``event:`` line from its ``type`` when ``named``)."""
        prefix = f"event: {event['type']}\n" if named and "type" in event else ""
        await self.send(f"{prefix}data: {json.dumps(event)}\n\n".encode())

    async def events(
        self, events: Sequence[dict[str, Any]], *, named: bool = True, done: bool = False
    ) -> None:
        """A whole SSE answer (optionally ending with ``data: [DONE]``)."""
        await self.head(content_type="text/event-stream")
        for event in events:
            await self.event(event, named=named)
        if done:
            await self.send(b"data: [DONE]\n\n")

    async def stall(self) -> None:
        """Never answer further (until the server is closed)."""
        await self._release.wait()


Script = Callable[[Received, Reply], Awaitable[None]]


class LoopbackServer:
    """``async with LoopbackServer(script) as server:`` then use ``server.url``.

    Attributes:
        requests: every request received, in order.
        disconnected: set when a client closed its connection while an answer was still being
            written or stalled (a cancelled stream).
    """

    def __init__(self, script: Script) -> None:
        self._script = script
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._release = asyncio.Event()
        self.requests: list[Received] = []
        self.disconnected = asyncio.Event()
        self.port = 0

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop accepting, release stalls, cancel and await every handler."""
        self._release.set()
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await task
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            received = await self._read(reader)
            if received is None:
                return
            self.requests.append(received)
            watch = asyncio.ensure_future(self._watch_close(reader))
            try:
                await self._script(received, Reply(writer, self._release))
            except ConnectionError:
                self.disconnected.set()
            finally:
                watch.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watch
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _watch_close(self, reader: asyncio.StreamReader) -> None:
        """Set ``disconnected`` when the client closes (EOF while the answer is in progress)."""
        with contextlib.suppress(ConnectionError):
            while await reader.read(1024):
                pass
        self.disconnected.set()

    @staticmethod
    async def _read(reader: asyncio.StreamReader) -> Received | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        body = await reader.readexactly(length) if length else b""
        return Received(method, path, headers, body)
