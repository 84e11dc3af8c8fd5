"""Server lifecycle: lazy start, ownership by the runtime, close once, restarts, list_changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_testkit import (
    PYTHON,
    agent,
    call,
    events_named,
    process_running,
    runtime_with,
    scripted,
    server_pids,
    tool_turn,
    toolbox,
)

from actoviq.mcp import (
    McpClosedError,
    McpConfigurationError,
    McpConnectionError,
    McpServer,
    McpServerUnavailableError,
    RestartPolicy,
    mcp_tools,
)
from actoviq.runtime import RuntimeServices, ToolRegistry


async def test_nothing_starts_before_first_use_and_close_stops_the_process(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    provider = scripted(tool_turn(call("c1", "lookup", key="k")), "done")
    runtime = runtime_with(provider)
    server = toolbox(ledger).attach(runtime)
    assert server.service_id == "mcp:toolbox_server"
    assert [d.initialized for d in runtime.services.inspect()] == [False]
    assert not ledger.exists() and not server.connected
    toolset = await mcp_tools(server, registry=runtime.tools)
    assert [d.initialized for d in runtime.services.inspect()] == [True]
    await runtime.run(agent(toolset.names()), "go")
    (pid,) = server_pids(ledger)
    assert process_running(pid)
    await runtime.aclose()
    await runtime.aclose()
    assert server.closed and not process_running(pid)
    assert len(events_named(ledger, "stop")) == 1  # closed exactly once, cleanly
    with pytest.raises(McpClosedError):
        await server.call_tool("lookup", {"key": "k"})


async def test_a_server_never_used_is_never_started(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with runtime_with(scripted("hi")) as runtime:
        server = toolbox(ledger).attach(runtime)
        await runtime.run(agent(()), "hello")
    assert server.closed is False  # never created as a service, so nothing to close
    assert not ledger.exists()
    with pytest.raises(McpClosedError, match="closed runtime"):
        await server.list_tools()


async def test_closing_the_server_first_then_the_runtime(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    services = RuntimeServices()
    server = toolbox(ledger).attach(services)
    await server.start()
    await server.aclose()
    await services.close()
    assert len(events_named(ledger, "stop")) == 1
    with pytest.raises(McpConfigurationError, match="already attached"):
        server.attach(services)


async def test_crash_restart_is_bounded_and_reset_allows_again(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    policy = RestartPolicy(max_restarts=1, initial_backoff_ms=0)
    async with toolbox(ledger, restart=policy) as server:
        with pytest.raises(Exception, match="went away"):
            await server.call_tool("charge", {"amount": 1})
        with pytest.raises(Exception, match="went away"):
            await server.call_tool("charge", {"amount": 2})  # restart 1 of 1, crashes again
        with pytest.raises(McpServerUnavailableError) as caught:
            await server.call_tool("lookup", {"key": "k"})
        assert caught.value.code == "MCP_SERVER_UNAVAILABLE"
        assert len(events_named(ledger, "start")) == 2
        server.reset()
        assert (await server.call_tool("lookup", {"key": "k"})).value() == {"result": "missing"}
        # a successful request resets the count: one more crash is restarted again
        with pytest.raises(Exception, match="went away"):
            await server.call_tool("charge", {"amount": 3})
        assert (await server.call_tool("lookup", {"key": "k"})).value() == {"result": "missing"}
    assert server.crashes == 3
    assert [entry["amount"] for entry in events_named(ledger, "charge")] == [1, 2, 3]
    assert not any(process_running(pid) for pid in server_pids(ledger))


def test_restart_policy_backoff_and_validation() -> None:
    policy = RestartPolicy(initial_backoff_ms=100, max_backoff_ms=350, multiplier=2)
    assert [policy.backoff_ms(n) for n in (1, 2, 3, 4)] == [100, 200, 350, 350]
    with pytest.raises(McpConfigurationError):
        RestartPolicy(max_restarts=-1)
    with pytest.raises(McpConfigurationError):
        RestartPolicy(initial_backoff_ms=float("nan"))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tools_list_changed_refreshes_the_tool_set(tmp_path: Path, mode: str) -> None:
    registry = ToolRegistry()
    async with toolbox(tmp_path / "ledger.jsonl", mode=mode) as server:
        toolset = await mcp_tools(server, registry=registry)
        assert "extra" not in toolset.names()
        before = toolset.version
        await server.call_tool("grow", {"name": "extra"})
        await toolset.wait_for_change(before, timeout_ms=20_000)
        assert "extra" in toolset.names()
        added = registry.resolve("extra")
        assert added is not None and added.descriptor.effect == "read"
        assert (await server.call_tool("extra", {"text": "hi"})).value() == {"result": "extra: hi"}


async def test_a_missing_command_is_a_typed_connection_error(tmp_path: Path) -> None:
    server = McpServer.stdio(str(tmp_path / "no-such-server"), name="ghost")
    with pytest.raises(McpConnectionError) as caught:
        await server.start()
    assert caught.value.code == "MCP_CONNECTION_FAILED" and caught.value.retryable
    assert "ghost" in str(caught.value) and "no-such-server" in str(caught.value)
    await server.aclose()


async def test_a_process_that_is_not_mcp_fails_within_the_connect_timeout(tmp_path: Path) -> None:
    silent = McpServer.stdio(
        PYTHON, ["-c", "import time; time.sleep(60)"], name="silent", connect_timeout_ms=1500
    )
    with pytest.raises(McpConnectionError, match="did not complete the MCP handshake"):
        await silent.start()
    await silent.aclose()
    exits = McpServer.stdio(PYTHON, ["-c", "print('hello')"], name="exits")
    with pytest.raises(McpConnectionError):
        await exits.start()
    await exits.aclose()


@pytest.mark.parametrize(
    "build",
    [
        lambda: McpServer.stdio(""),
        lambda: McpServer.stdio("python", "server.py"),
        lambda: McpServer.http("ftp://example.test/mcp"),
        lambda: McpServer.http("http://127.0.0.1:9/mcp", timeout_ms=0),
        lambda: McpServer.http("http://127.0.0.1:9/mcp", headers={"": "x"}),
        lambda: McpServer.stdio("python", name=" "),
        lambda: McpServer.stdio("python", connect_timeout_ms=float("inf")),
        lambda: McpServer.stdio("python", mode="modern"),
    ],
)
def test_bad_configuration_is_typed(build: object) -> None:
    with pytest.raises(McpConfigurationError):
        build()  # type: ignore[operator]


async def test_close_is_idempotent_and_final_without_attach(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    server = toolbox(ledger)
    await server.list_tools()
    await server.aclose()
    await server.aclose()
    assert len(events_named(ledger, "stop")) == 1
    with pytest.raises(McpClosedError):
        await server.start()
    assert "closed" in repr(server)
