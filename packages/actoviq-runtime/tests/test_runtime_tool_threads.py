"""Plain tools do not block the event loop (issue 11 §4, decision D10).

A plain (non-``async``) tool runs in the runtime's bounded worker pool; ``timeout_ms`` holds for
plain and async tools alike (a timed-out side effect is ``unknown`` and its late result is
discarded); context variables reach the thread. Nothing here orders events with sleeps: the
tools wait on ``threading.Event``s that the loop sets, and a tool that blocked the loop could
never see them set (it gives up after a generous bound and the test fails).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any, cast

import pytest
from runtime_testkit import json_tool, make_agent, scripted_runtime

from actoviq.core import JsonObject, RunLimitsPatch, ToolCallItem, ToolResultItem
from actoviq.events import current_trace_context
from actoviq.providers import ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    RuntimeConfigurationError,
    ToolExecutionContext,
    ToolRegistry,
    ToolRunner,
    runs_on_loop,
    tool,
)

BOUND = 10.0  # seconds a blocked tool waits before it gives up (only reached when broken)
REQUEST = contextvars.ContextVar[str]("REQUEST", default="unset")


def _calls_then_text(*calls: ToolCallItem) -> Any:
    def answer(request: ModelRequest) -> ScriptedTurn:
        if not any(isinstance(item, ToolResultItem) for item in request.input):
            return ScriptedTurn(tool_calls=calls)
        results = [item for item in request.input if isinstance(item, ToolResultItem)]
        return ScriptedTurn(text=",".join(f"{r.call_id}={r.status}" for r in results))

    return ScriptedProvider([answer], repeat_last=True)


async def test_a_plain_tool_runs_off_the_loop_while_a_ticker_keeps_ticking() -> None:
    loop = asyncio.get_running_loop()
    entered = asyncio.Event()
    ticked = threading.Event()
    seen: dict[str, Any] = {}

    def blocking(ctx: ToolExecutionContext, value: Any) -> str:
        seen["thread"] = threading.current_thread().name
        seen["request"] = REQUEST.get()
        seen["trace"] = current_trace_context()
        loop.call_soon_threadsafe(entered.set)
        seen["released"] = ticked.wait(BOUND)  # only the loop's ticker can set it
        return "done"

    ticks = 0

    def tick() -> None:  # a ticker driven by the loop itself: it runs only if the loop is free
        nonlocal ticks
        ticks += 1
        if ticks >= 100:
            ticked.set()
        else:
            loop.call_soon(tick)

    runtime = scripted_runtime(
        _calls_then_text(ToolCallItem(id="c1", name="block", input={})),
        tools=[json_tool("block", blocking, effect="read")],
    )
    REQUEST.set("req-42")
    async with runtime:
        run = asyncio.ensure_future(runtime.run(make_agent(tools=("block",)), "go", run_id="t1"))
        await entered.wait()
        loop.call_soon(tick)
        result = await run
    assert result.output == "c1=success"
    assert seen["released"] is True and ticks == 100
    assert seen["thread"].startswith("actoviq-tool") and seen["thread"] != "MainThread"
    assert seen["request"] == "req-42"  # context variables reach the thread
    trace = seen["trace"]
    assert trace is not None and trace.run_id == "t1"  # so does the run's trace


async def test_another_run_completes_while_a_plain_tool_blocks() -> None:
    loop = asyncio.get_running_loop()
    entered, release = asyncio.Event(), threading.Event()

    released: list[bool] = []

    def blocking(ctx: ToolExecutionContext, value: Any) -> bool:
        loop.call_soon_threadsafe(entered.set)
        released.append(release.wait(BOUND))
        return released[-1]

    runtime = scripted_runtime(
        _calls_then_text(ToolCallItem(id="c1", name="block", input={})),
        tools=[json_tool("block", blocking, effect="read")],
    )
    async with runtime:
        slow = asyncio.ensure_future(runtime.run(make_agent(tools=("block",)), "go"))
        await entered.wait()
        other = await runtime.run(make_agent(id="other"), "hi")  # needs the loop, fully
        release.set()
        assert other.status == "completed"
        assert (await slow).status == "completed"
    assert released == [True]  # released by the loop, not given up after the bound


@pytest.mark.parametrize("effect", ["side-effect", "read"])
async def test_timeout_ms_holds_for_a_plain_tool_and_its_late_result_is_discarded(
    effect: str,
) -> None:
    release, finished = threading.Event(), threading.Event()
    aborted: list[bool] = []

    def stuck(ctx: ToolExecutionContext, value: Any) -> JsonObject:
        release.wait(BOUND)
        aborted.append(ctx.signal.aborted)  # a cooperative tool can see it was given up
        finished.set()
        return {"late": True}

    runtime = scripted_runtime(
        _calls_then_text(ToolCallItem(id="c1", name="stuck", input={})),
        tools=[json_tool("stuck", stuck, effect=effect, timeout_ms=50)],
    )
    async with runtime:
        result = await runtime.run(make_agent(tools=("stuck",)), "go", run_id=f"to-{effect}")
        release.set()
        assert await asyncio.to_thread(finished.wait, BOUND)
    assert aborted == [True]
    if effect == "side-effect":  # may have happened: unknown, reconciliation, never committed
        assert result.status == "interrupted"
        assert [i.kind for i in result.interruptions] == ["reconciliation"]
        pending = cast(list[JsonObject], cast(JsonObject, result.state)["pendingTools"])
        assert [(p["status"], "result" in p) for p in pending] == [("unknown", False)]
    else:
        assert result.status == "completed" and result.output == "c1=error"
        [failure] = [item for item in result.items if isinstance(item, ToolResultItem)]
        assert cast(JsonObject, failure.output)["kind"] == "timeout"
    assert "late" not in str(list(result.items)) and "late" not in str(result.state)


async def test_timeout_ms_holds_for_an_async_tool() -> None:
    async def hang(ctx: ToolExecutionContext, value: Any) -> str:
        await asyncio.Event().wait()
        return "never"

    runtime = scripted_runtime(
        _calls_then_text(ToolCallItem(id="c1", name="hang", input={})),
        tools=[json_tool("hang", hang, effect="read", timeout_ms=50)],
    )
    async with runtime:
        result = await runtime.run(make_agent(tools=("hang",)), "go")
    assert result.output == "c1=error"


async def test_the_pool_is_bounded() -> None:
    lock = threading.Lock()
    active = peak = 0
    names: set[str] = set()
    pair = threading.Barrier(2, timeout=BOUND)

    def read(ctx: ToolExecutionContext, value: Any) -> str:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
            names.add(threading.current_thread().name)
        pair.wait()  # two at a time can meet here: a pool of two runs them in pairs
        with lock:
            active -= 1
        return "ok"

    calls = [ToolCallItem(id=f"c{n}", name="read", input={}) for n in range(6)]
    runtime = scripted_runtime(
        _calls_then_text(*calls), tools=[json_tool("read", read, effect="read")], max_tool_threads=2
    )
    async with runtime:
        result = await runtime.run(make_agent(tools=("read",)), "go")
    assert result.output == ",".join(f"c{n}=success" for n in range(6))
    assert peak == 2 and len(names) == 2


def test_max_tool_threads_is_validated() -> None:
    for bad in (0, -1, 1.5, True, 100_000):
        with pytest.raises(RuntimeConfigurationError):
            scripted_runtime(ScriptedProvider(["x"]), max_tool_threads=bad)


async def test_decorated_tools_keep_their_kind() -> None:
    @tool(effect="read")
    def plain(city: str) -> str:
        """Weather."""
        return f"{city}:{threading.current_thread().name}"

    @tool(effect="read")
    async def coro(city: str) -> str:
        """Weather."""
        return f"{city}:{threading.current_thread().name}"

    assert not runs_on_loop(plain.execute) and runs_on_loop(coro.execute)
    runner = ToolRunner(ToolRegistry([plain, coro]))  # standalone: the loop's default executor
    from runtime_testkit import tool_context

    off = await runner.execute("plain", {"city": "Rome"}, tool_context())
    on = await runner.execute("coro", {"city": "Rome"}, tool_context())
    assert off.value != f"Rome:{threading.current_thread().name}"
    assert on.value == f"Rome:{threading.current_thread().name}"


@pytest.mark.parametrize("error", [ValueError("bad"), StopIteration(), KeyError("k")])
async def test_a_plain_tool_that_raises_fails_typed(error: BaseException) -> None:
    from runtime_testkit import make_tool, tool_context

    from actoviq.runtime import ToolExecutionError

    def boom(ctx: ToolExecutionContext, value: Any) -> object:
        raise error

    runner = ToolRunner(ToolRegistry([make_tool(execute=boom)]))
    with pytest.raises(ToolExecutionError) as caught:
        await runner.execute("double", {"value": 1}, tool_context())
    assert caught.value.failure.kind == "execution"


@pytest.mark.parametrize("stop", ["deadline", "cancel"])
async def test_a_blocked_plain_tool_holds_up_neither_the_deadline_nor_a_cancel(stop: str) -> None:
    # The run ends (cancelled) while the tool's thread is still blocked; had the tool run on the
    # loop, neither the deadline timer nor the cancel could act before the tool returned.
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()

    def block(ctx: ToolExecutionContext, value: Any) -> JsonObject:
        entered.set()
        release.wait(BOUND)
        finished.set()
        return {"late": True}

    runtime = scripted_runtime(
        _calls_then_text(ToolCallItem(id="c1", name="block", input={})),
        tools=[json_tool("block", block, effect="side-effect")],
    )
    agent = make_agent(tools=("block",))
    async with runtime:
        if stop == "deadline":
            result = await runtime.run(agent, "go", limits=RunLimitsPatch(run_deadline_ms=100))
        else:
            handle = runtime.stream(agent, "go")
            assert await asyncio.to_thread(entered.wait, BOUND)
            handle.cancel("stop")
            result = await handle.result()
        blocked_when_the_run_ended = entered.is_set() and not finished.is_set()
        release.set()
        assert await asyncio.to_thread(finished.wait, BOUND)
    assert blocked_when_the_run_ended
    assert result.status == "cancelled"
    # The side effect may have happened: it is never recorded as committed, its result dropped.
    pending = cast(list[JsonObject], cast(JsonObject, result.state)["pendingTools"])
    assert [p["status"] for p in pending] == ["unknown"]
    assert "late" not in str(result.state)
