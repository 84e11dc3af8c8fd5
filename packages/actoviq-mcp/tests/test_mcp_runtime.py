"""MCP tools inside agent runs: approvals, progress, results, timeouts, cancellation, crashes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

from mcp_testkit import (
    agent,
    call,
    collect,
    events_named,
    runtime_with,
    scripted,
    tool_turn,
    toolbox,
)

from actoviq.core import ImageItem, TextItem, ToolResultItem, item_from_json
from actoviq.mcp import mcp_tools
from actoviq.runtime import (
    AllowDecision,
    DenyDecision,
    InterruptionDecision,
    PendingToolState,
    SerializedRunState,
    ToolAuthorizationRequest,
    ToolDecision,
)


def _results(items: Any) -> dict[str, ToolResultItem]:
    return {item.call_id: item for item in items if isinstance(item, ToolResultItem)}


async def test_read_tool_runs_without_approval_and_answers_canonically(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    provider = scripted(
        tool_turn(call("c1", "put", key="k", value="v"), call("c2", "lookup", key="k")), "done"
    )
    async with runtime_with(provider) as runtime:
        server = toolbox(ledger).attach(runtime)
        toolset = await mcp_tools(server, registry=runtime.tools)
        result = await runtime.run(agent(toolset.names()), "store and read")
    assert result.status == "completed" and result.output == "done"
    results = _results(result.items)
    assert results["c1"].status == "success"
    assert results["c1"].output == {"result": "stored k"}
    assert results["c2"].output == {"result": "v"}
    (put,) = events_named(ledger, "put")
    # idempotent writes carry the runtime's idempotency key in _meta
    assert put["idempotencyKey"] == f"{result.run_id}:c1"


async def test_destructive_tool_needs_approval_then_runs_exactly_once(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    provider = scripted(tool_turn(call("c1", "append_line", text="hello")), "appended")
    async with runtime_with(provider) as runtime:
        server = toolbox(ledger).attach(runtime)
        toolset = await mcp_tools(server, registry=runtime.tools)
        spec = agent(toolset.names())
        first = await runtime.run(spec, "append")
        assert first.status == "interrupted"
        assert events_named(ledger, "append_line") == []
        (interruption,) = first.interruptions
        assert (interruption.kind, interruption.tool_name) == ("approval", "append_line")
        handle = runtime.resume(first.state, [InterruptionDecision.approve(interruption.id)])
        second = await handle.result()
    assert second.status == "completed"
    assert [entry["text"] for entry in events_named(ledger, "append_line")] == ["hello"]
    assert _results(second.items)["c1"].output == {"result": "appended hello"}


async def test_rejected_approval_never_reaches_the_server(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    provider = scripted(tool_turn(call("c1", "touch", name="x")), "ok")
    async with runtime_with(provider) as runtime:
        toolset = await mcp_tools(toolbox(ledger).attach(runtime), registry=runtime.tools)
        first = await runtime.run(agent(toolset.names()), "touch")
        decision = InterruptionDecision.reject(first.interruptions[0].id, "no")
        second = await runtime.resume(first.state, [decision]).result()
    assert second.status == "completed"
    assert _results(second.items)["c1"].status == "error"
    assert events_named(ledger, "touch") == []


async def test_progress_notifications_become_tool_progress_events(tmp_path: Path) -> None:
    provider = scripted(tool_turn(call("c1", "count_to", n=3)), "counted")
    async with runtime_with(provider) as runtime:
        toolset = await mcp_tools(
            toolbox(tmp_path / "l.jsonl").attach(runtime), registry=runtime.tools
        )
        events = await collect(runtime, agent(toolset.names()), "count")
    kinds = [event.type for event in events]
    progress = [event.data for event in events if event.type == "tool.progress"]
    assert [p["progress"]["message"] for p in progress] == ["step 1", "step 2", "step 3"]  # type: ignore[index]
    assert progress[0] == {
        "callId": "c1",
        "name": "count_to",
        "progress": {
            "type": "progress",
            "progress": 1.0,
            "total": 3.0,
            "message": "step 1",
            "data": {"server": "toolbox_server", "tool": "count_to"},
        },
    }
    assert (
        kinds.index("tool.started") < kinds.index("tool.progress") < kinds.index("tool.completed")
    )


async def test_images_structured_content_and_is_error(tmp_path: Path) -> None:
    provider = scripted(
        tool_turn(
            call("c1", "chart", title="sales"),
            call("c2", "picture"),
            call("c3", "explode", message="boom"),
        ),
        "seen",
    )
    async with runtime_with(provider) as runtime:
        toolset = await mcp_tools(
            toolbox(tmp_path / "l.jsonl").attach(runtime), registry=runtime.tools
        )
        events = await collect(runtime, agent(toolset.names()), "look")
        result_items = [e.data for e in events if e.type == "tool.failed"]
    final = events[-1]
    assert final.type == "run.completed"
    assert result_items[0]["failure"]["kind"] == "execution"  # type: ignore[index]
    assert "exploded: boom" in result_items[0]["failure"]["message"]  # type: ignore[index]
    server = toolbox(tmp_path / "l2.jsonl")
    async with server:
        chart = await server.call_tool("chart", {"title": "sales"})
        picture = await server.call_tool("picture")
        boom = await server.call_tool("explode", {"message": "boom"})
    assert chart.structured == {"title": "sales", "points": [1, 2, 3]}
    assert chart.value() == {"title": "sales", "points": [1, 2, 3]}
    assert isinstance(chart.items[0], TextItem) and isinstance(chart.items[1], ImageItem)
    assert chart.items[1].source.media_type == "image/png"  # type: ignore[union-attr]
    value = picture.value()
    assert isinstance(value, list) and isinstance(item_from_json(value[0]), ImageItem)
    assert boom.is_error and "exploded: boom" in boom.text()


async def test_timeout_cancels_on_the_server_and_a_side_effect_becomes_unknown(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    provider = scripted(tool_turn(call("c1", "nap", seconds=30, label="t1")), "never")
    async with runtime_with(provider) as runtime:
        server = toolbox(ledger).attach(runtime)
        toolset = await mcp_tools(server, registry=runtime.tools, approval=False, timeout_ms=3000)
        result = await runtime.run(agent(toolset.names()), "nap")
        assert result.status == "interrupted"
        (interruption,) = result.interruptions
        assert interruption.kind == "reconciliation"
        assert result.state is not None
        (pending,) = SerializedRunState.from_json(result.state).pending_tools
        assert pending.state is PendingToolState.UNKNOWN
        # the server saw the cancellation (it waits for the nap to end, server side)
        outcome = await server.call_tool("nap_outcome", {"label": "t1"})
    assert outcome.value() == {"result": "nap-cancelled"}
    assert [e["event"] for e in events_named(ledger, "nap-start")] == ["nap-start"]


async def test_cancelling_the_run_sends_the_cancellation_to_the_server(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    provider = scripted(tool_turn(call("c1", "nap", seconds=30, label="c")), "never")
    async with runtime_with(provider) as runtime:
        server = toolbox(ledger).attach(runtime)
        toolset = await mcp_tools(server, registry=runtime.tools, approval=False)
        async with runtime.stream(agent(toolset.names()), "nap") as handle:
            async for event in handle:
                if event.type == "tool.progress":  # the server is inside the nap
                    handle.cancel("user stop")
            result = await handle.result()
        assert result.status == "cancelled"
        outcome = await server.call_tool("nap_outcome", {"label": "c"})
    assert outcome.value() == {"result": "nap-cancelled"}


async def test_server_killed_mid_call_is_unknown_then_reconciled(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    provider = scripted(tool_turn(call("c1", "charge", amount=5)), "charged")
    async with runtime_with(provider) as runtime:
        server = toolbox(ledger).attach(runtime)
        toolset = await mcp_tools(server, registry=runtime.tools, approval=False)
        first = await runtime.run(agent(toolset.names()), "charge")
        assert first.status == "interrupted"
        (interruption,) = first.interruptions
        assert interruption.kind == "reconciliation"
        assert first.state is not None
        (pending,) = SerializedRunState.from_json(first.state).pending_tools
        assert pending.state is PendingToolState.UNKNOWN
        assert server.crashes == 1 and not server.connected
        # the host checks the server's own record, then reconciles: never replayed blindly
        assert len(events_named(ledger, "charge")) == 1
        decision = InterruptionDecision.committed(interruption.id, {"charged": 5})
        second = await runtime.resume(first.state, [decision]).result()
        assert second.status == "completed"
        assert _results(second.items)["c1"].output == {"charged": 5}
        # the next call restarts the server
        assert (await server.call_tool("lookup", {"key": "k"})).value() == {"result": "missing"}
    assert len(events_named(ledger, "charge")) == 1
    assert len(events_named(ledger, "start")) == 2


async def test_parallel_read_calls_share_one_connection(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    calls = [call(f"c{i}", "count_to", n=2) for i in range(4)]
    provider = scripted(tool_turn(*calls), "done")
    async with runtime_with(provider) as runtime:
        toolset = await mcp_tools(toolbox(ledger).attach(runtime), registry=runtime.tools)
        result = await runtime.run(agent(toolset.names()), "count")
    assert [r.output for r in _results(result.items).values()] == [{"result": "counted to 2"}] * 4
    assert len(events_named(ledger, "start")) == 1


async def test_a_tool_the_server_removed_answers_not_found(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    provider = scripted(tool_turn(call("c1", "touch", name="x")), "done")
    async with runtime_with(provider) as runtime:
        server = toolbox(ledger).attach(runtime)
        toolset = await mcp_tools(server, registry=runtime.tools, approval=False)
        spec = agent(toolset.names())  # built while the server still offered "touch"
        before = toolset.version
        await server.call_tool("shrink", {"name": "touch"})
        await toolset.wait_for_change(before, timeout_ms=20_000)
        assert "touch" not in toolset.names() and toolset.get("touch") is None
        assert runtime.tools.has("touch")  # a registry cannot forget a tool
        result = await runtime.run(spec, "touch it")
    output = _results(result.items)["c1"].output
    assert isinstance(output, dict) and output["kind"] == "not_found"
    assert events_named(ledger, "touch") == []


async def test_concurrent_first_use_starts_one_server(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with toolbox(ledger) as server:
        answers = await asyncio.gather(
            *(server.call_tool("lookup", {"key": str(i)}) for i in range(5))
        )
    assert len(answers) == 5 and len(events_named(ledger, "start")) == 1


class _NoWritesToToolbox:
    """A host policy that reads the MCP origin from the descriptor metadata."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def authorize(self, request: ToolAuthorizationRequest) -> ToolDecision:
        metadata = request.tool.metadata or {}
        origin = cast(dict[str, Any], metadata.get("mcp", {}))
        self.seen.append((str(origin.get("server")), request.tool.effect))
        if origin.get("server") == "toolbox_server" and request.tool.effect != "read":
            return DenyDecision(reason="no writes to the toolbox")
        return AllowDecision()


async def test_a_runtime_policy_sees_mcp_tools_like_local_ones(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    policy = _NoWritesToToolbox()
    provider = scripted(
        tool_turn(call("c1", "put", key="k", value="v"), call("c2", "lookup", key="k")), "ok"
    )
    async with runtime_with(provider, tool_policy=policy) as runtime:
        toolset = await mcp_tools(toolbox(ledger).attach(runtime), registry=runtime.tools)
        result = await runtime.run(agent(toolset.names()), "write then read")
    results = _results(result.items)
    assert results["c1"].status == "error" and results["c1"].output["kind"] == "denied"  # type: ignore[index,call-overload]
    assert results["c2"].output == {"result": "missing"}
    assert policy.seen == [("toolbox_server", "idempotent-write"), ("toolbox_server", "read")]
    assert events_named(ledger, "put") == []
