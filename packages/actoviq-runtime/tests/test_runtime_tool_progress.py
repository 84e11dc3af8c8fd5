"""``ToolExecutionContext.report_progress`` → ``tool.progress`` events (used by actoviq.mcp)."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from runtime_testkit import json_tool, make_agent, scripted_runtime, tool_context

from actoviq.core import JsonObject, ToolCallItem
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import ToolProgressError
from actoviq.runtime.tools import ToolExecutionContext


async def _types_and_data(runtime: Any, agent: Any) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []
    async with runtime.stream(agent, "go") as handle:
        async for event in handle:
            seen.append((event.type, event.data))
    return seen


async def test_progress_reports_become_tool_progress_events_between_start_and_completion() -> None:
    async def slow(ctx: ToolExecutionContext, args: Any) -> str:
        await ctx.report_progress(1, 3, "first")
        await ctx.report_progress(2.5, data={"file": "a.txt"})
        return "ok"

    provider = ScriptedProvider(
        [ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="slow", input={})]), "done"]
    )
    runtime = scripted_runtime(provider, tools=[json_tool("slow", slow, effect="side-effect")])
    async with runtime:
        seen = await _types_and_data(runtime, make_agent(tools=("slow",)))
    types = [kind for kind, _ in seen]
    start = types.index("tool.started")
    end = types.index("tool.completed")
    progress = [data for kind, data in seen if kind == "tool.progress"]
    assert [types.index("tool.progress"), len(progress)] == [start + 1, 2]
    assert start < end and all(start < i < end for i, t in enumerate(types) if t == "tool.progress")
    assert progress[0] == {
        "callId": "c1",
        "name": "slow",
        "progress": {"type": "progress", "progress": 1.0, "total": 3.0, "message": "first"},
    }
    assert progress[1]["progress"] == {
        "type": "progress",
        "progress": 2.5,
        "data": {"file": "a.txt"},
    }


async def test_progress_in_a_parallel_read_batch_names_each_call() -> None:
    async def reader(ctx: ToolExecutionContext, args: Any) -> str:
        await ctx.report_progress(0.5)
        return ctx.call_id

    provider = ScriptedProvider(
        [
            ScriptedTurn(
                tool_calls=[
                    ToolCallItem(id="a", name="read", input={}),
                    ToolCallItem(id="b", name="read", input={}),
                ]
            ),
            "done",
        ]
    )
    runtime = scripted_runtime(provider, tools=[json_tool("read", reader)])
    async with runtime:
        seen = await _types_and_data(runtime, make_agent(tools=("read",)))
    ids = sorted(data["callId"] for kind, data in seen if kind == "tool.progress")
    assert ids == ["a", "b"]


async def test_reports_after_the_call_settled_are_dropped() -> None:
    kept: list[ToolExecutionContext] = []

    async def remember(ctx: ToolExecutionContext, args: Any) -> str:
        kept.append(ctx)
        return "ok"

    provider = ScriptedProvider(
        [ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="t", input={})]), "done"]
    )
    runtime = scripted_runtime(provider, tools=[json_tool("t", remember)])
    events: list[str] = []
    async with runtime, runtime.stream(make_agent(tools=("t",)), "go") as handle:
        async for event in handle:
            events.append(event.type)
            if event.type == "tool.completed":
                await kept[0].report_progress(1)
    assert "tool.progress" not in events


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((math.nan,), {}),
        ((True,), {}),
        (("1",), {}),
        ((1, math.inf), {}),
        ((1, None, 3), {}),
        ((1,), {"data": {"x": object()}}),
    ],
)
async def test_invalid_progress_is_a_typed_error(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    received: list[JsonObject] = []

    async def sink(payload: JsonObject) -> None:
        received.append(payload)

    base = tool_context()
    ctx = ToolExecutionContext(
        run_id=base.run_id, call_id=base.call_id, signal=base.signal, progress=sink
    )
    with pytest.raises(ToolProgressError) as caught:
        await ctx.report_progress(*args, **kwargs)
    assert caught.value.code == "TOOL_PROGRESS_INVALID"
    assert received == []


async def test_without_a_sink_reports_are_dropped_quietly() -> None:
    await tool_context().report_progress(1, 2, "fine")
    await asyncio.sleep(0)
