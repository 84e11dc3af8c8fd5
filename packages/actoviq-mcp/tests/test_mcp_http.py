"""The same behaviour over streamable HTTP, against the toolbox server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_testkit import (
    agent,
    call,
    collect,
    events_named,
    runtime_with,
    scripted,
    tool_turn,
    toolbox_http,
)

from actoviq.mcp import McpConnectionError, McpServer, mcp_tools
from actoviq.runtime import InterruptionDecision, ToolRegistry

SECRET = "sk-test-abcdefghijklmnop"


async def test_tools_progress_approval_and_headers_over_http(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with toolbox_http(ledger) as url:
        provider = scripted(
            tool_turn(call("c1", "count_to", n=2), call("c2", "append_line", text="web")), "ok"
        )
        async with runtime_with(provider) as runtime:
            server = McpServer.http(url, headers={"Authorization": f"Bearer {SECRET}"}, name="web")
            server.attach(runtime)
            toolset = await mcp_tools(server, registry=runtime.tools)
            assert toolset.get("append_line") is not None
            assert toolset.get("append_line").descriptor.requires_approval  # type: ignore[union-attr]
            spec = agent(toolset.names())
            first = await runtime.run(spec, "go")
            assert first.status == "interrupted"
            approve = InterruptionDecision.approve(first.interruptions[0].id)
            handle = runtime.resume(first.state, [approve])
            progress = [event async for event in handle if event.type == "tool.progress"]
            assert (await handle.result()).status == "completed"
            seen = await server.call_tool("header", {"name": "authorization"})
            assert seen.value() == {"result": f"Bearer {SECRET}"}
            assert SECRET not in repr(server) and SECRET not in server.describe()
        assert len(progress) == 2
        assert [entry["text"] for entry in events_named(ledger, "append_line")] == ["web"]


async def test_cancellation_and_list_changed_over_http(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with toolbox_http(ledger) as url, McpServer.http(url) as server:
        with pytest.raises(TimeoutError):
            await server.call_tool("nap", {"seconds": 30, "label": "h"}, timeout_ms=3000)
        outcome = await server.call_tool("nap_outcome", {"label": "h"})
        assert outcome.value() == {"result": "nap-cancelled"}
        registry = ToolRegistry()
        toolset = await mcp_tools(server, registry=registry)
        before = toolset.version
        await server.call_tool("grow", {"name": "web_extra"})
        await toolset.wait_for_change(before, timeout_ms=20_000)
        assert registry.has("web_extra")


async def test_an_unreachable_url_is_a_typed_error_without_secrets() -> None:
    server = McpServer.http(
        "http://user:hunter2@127.0.0.1:9/mcp?token=abc123",
        headers={"Authorization": f"Bearer {SECRET}"},
        connect_timeout_ms=10_000,
    )
    with pytest.raises(McpConnectionError) as caught:
        await server.start()
    text = str(caught.value)
    assert "127.0.0.1:9/mcp" in text
    for secret in ("hunter2", "abc123", SECRET):
        assert secret not in text and secret not in repr(server)
    await server.aclose()


async def test_an_agent_run_over_http_answers_from_the_server(tmp_path: Path) -> None:
    async with toolbox_http(tmp_path / "ledger.jsonl") as url:
        provider = scripted(tool_turn(call("c1", "lookup", key="k")), "done")
        async with runtime_with(provider) as runtime:
            toolset = await mcp_tools(McpServer.http(url).attach(runtime), registry=runtime.tools)
            events = await collect(runtime, agent(toolset.names()), "look up")
    assert [e.type for e in events][-1] == "run.completed"
    assert any(e.type == "tool.completed" for e in events)


async def test_the_older_sse_transport_still_works(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with toolbox_http(ledger, "sse") as url, McpServer.sse(url, name="legacy-sse") as server:
        toolset = await mcp_tools(server, include=["lookup", "put"])
        assert set(toolset.names()) == {"lookup", "put"}
        assert (await server.call_tool("put", {"key": "a", "value": "1"})).value() == {
            "result": "stored a"
        }
        assert (await server.call_tool("lookup", {"key": "a"})).value() == {"result": "1"}
    assert [entry["key"] for entry in events_named(ledger, "put")] == ["a"]
