"""``actoviq serve`` (the local web chat page) and ``actoviq mcp serve`` (an agent as MCP tool).

``serve`` binds its socket first (``--port 0`` picks a free one), prints the URL with a fresh
token (a JSON document with ``--json``) and serves with uvicorn until Ctrl-C or SIGTERM, then
closes the runtime and the storage. ``mcp serve`` runs ``actoviq.mcp.serve_agent_mcp`` over
stdio (stdout is the protocol: messages go to stderr) or streamable HTTP.
"""

from __future__ import annotations

import secrets
import signal
import socket
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from actoviq.cli.agents import resolve_agent, setup_agent
from actoviq.cli.config import load_settings
from actoviq.cli.environment import CliEnvironment
from actoviq.cli.errors import CliExtraMissingError, CliUsageError
from actoviq.cli.output import Output
from actoviq.surfaces import AgentRuntimeBridgeAdapter

if TYPE_CHECKING:
    from actoviq.cli.invocation import Invocation

__all__ = ["mcp_command", "serve_command", "stop_on_signals"]


@contextmanager
def stop_on_signals(stop: Callable[[], None]) -> Generator[None]:
    """While the block runs, SIGINT and SIGTERM call ``stop`` (a graceful shutdown)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    import asyncio

    loop = asyncio.get_running_loop()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        loop.add_signal_handler(sig, stop)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            loop.remove_signal_handler(sig)
            signal.signal(sig, handler)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise CliUsageError(
            f"Cannot listen on {host}:{port}: {error.strerror}.", details={"port": port}
        ) from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve_command(
    invocation: Invocation,
    output: Output,
    *,
    agent: str,
    model: str | None,
    host: str,
    port: int,
) -> int:
    """``actoviq serve``: see the module docstring."""
    try:
        import uvicorn

        from actoviq.cli.web.app import WebChat, create_web_app
        from actoviq.cli.web.security import allowed_hosts
    except ImportError as error:
        raise CliExtraMissingError("actoviq serve", "web", error.name or "starlette") from None
    settings = load_settings(invocation.config, db=invocation.db)
    resolved = resolve_agent(settings, agent, model=model)
    setup = setup_agent(settings, resolved)
    token = secrets.token_urlsafe(32)
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/?token={token}"

    class _Server(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Generator[None]:  # Ctrl-C is our graceful shutdown
            def stop() -> None:
                self.should_exit = True

            with stop_on_signals(stop):
                yield

    try:
        async with CliEnvironment(settings) as env:
            await env.storage()  # open (and migrate) before the first request, not during it
            runtime = env.runtime(setup)
            bridge = AgentRuntimeBridgeAdapter(runtime, resolved.spec, target="gui")
            chat = WebChat(env, resolved, bridge, token)
            app = create_web_app(chat, hosts=allowed_hosts(shown, bound))
            config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
            server = _Server(config)
            if output.json_mode:
                output.emit(
                    {
                        "kind": "serve.listening",
                        "url": url,
                        "host": host,
                        "port": bound,
                        "token": token,
                        "agent": resolved.spec.id,
                    }
                )
            else:
                output.print(f"Serving {resolved.spec.name} on {url}")
                output.note("Open that URL (it carries the access token). Ctrl-C stops.")
            await server.serve(sockets=[sock])
    finally:
        sock.close()
    return 0


async def mcp_command(
    invocation: Invocation,
    output: Output,
    *,
    agent: str,
    model: str | None,
    transport: str,
    host: str,
    port: int,
    name: str | None,
) -> int:
    """``actoviq mcp serve``: see the module docstring."""
    try:
        from actoviq.mcp import serve_agent_mcp
    except ImportError as error:
        raise CliExtraMissingError("actoviq mcp serve", "mcp", error.name or "mcp") from None
    settings = load_settings(invocation.config, db=invocation.db)
    resolved = resolve_agent(settings, agent, model=model)
    setup = setup_agent(settings, resolved)

    def listening(url: str) -> None:
        if output.json_mode:
            output.emit({"kind": "mcp.listening", "url": url, "agent": resolved.spec.id})
        else:
            output.note(f"MCP server for {resolved.spec.name} on {url}", None)

    async with CliEnvironment(settings) as env:
        runtime = env.runtime(setup)
        options: dict[str, Any] = {"name": name or resolved.spec.id}
        if transport == "streamable-http":
            options.update(
                transport="streamable-http", host=host, port=port, on_listening=listening
            )
        else:
            output.note(f"MCP server for {resolved.spec.name} on stdio.", None)
        import asyncio

        served = asyncio.ensure_future(serve_agent_mcp(runtime, resolved.spec, **options))
        stopped = False

        def stop() -> None:
            nonlocal stopped
            stopped = True
            served.cancel()

        with stop_on_signals(stop):
            try:
                await served
            except asyncio.CancelledError:
                if not stopped:
                    raise
    return 0
