"""A parallel read batch of plain tools runs without a task per call (issue 21, W2).

``ToolRunner.invoke_batch`` hands every call to the worker pool at once and wakes its task once
the batch settled; each call keeps what ``invoke`` gives it: concurrency with its siblings, its
own deadline (late results dropped, ``ctx.signal`` aborted), cancellation, typed failures,
awaitable results, context variables. Nothing is ordered with sleeps: blocked tools wait on
``threading.Event`` s set by the loop or by their siblings.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any, cast

import pytest
from runtime_testkit import json_tool, make_agent, scripted_runtime

from actoviq.core import AbortController, JsonObject, RunLimitsPatch, ToolCallItem, ToolResultItem
from actoviq.providers import ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    InterruptDecision,
    PreparedToolCall,
    ToolExecutionContext,
    ToolExecutionError,
    ToolInterruptionRequiredError,
    ToolOutput,
    ToolRegistry,
    ToolRetry,
    ToolRunner,
)
from actoviq.runtime.tools.threads import ToolThreads

BOUND = 10.0  # seconds a blocked tool waits before it gives up (only reached when broken)
REQUEST = contextvars.ContextVar[str]("REQUEST", default="unset")


def _calls_then_text(*calls: ToolCallItem) -> Any:
    def answer(request: ModelRequest) -> ScriptedTurn:
        results = [item for item in request.input if isinstance(item, ToolResultItem)]
        if not results:
            return ScriptedTurn(tool_calls=calls)
        return ScriptedTurn(text=",".join(f"{r.call_id}={r.status}" for r in results))

    return ScriptedProvider([answer], repeat_last=True)


@pytest.fixture
def pool() -> Any:
    threads = ToolThreads(8)
    yield threads
    threads.shutdown(wait=False)


def _call(tool_id: str, name: str) -> ToolCallItem:
    return ToolCallItem(id=tool_id, name=name, input={})


async def _prepared(runner: ToolRunner, *names: str, **ctx: Any) -> list[PreparedToolCall]:
    return [
        await runner.prepare(
            name,
            {},
            ToolExecutionContext(
                run_id="run-1",
                call_id=f"c{index}",
                signal=ctx.get("signal", AbortController().signal),
                deadline=ctx.get("deadline"),
            ),
        )
        for index, name in enumerate(names, 1)
    ]


async def test_the_calls_of_a_batch_run_at_once_and_keep_their_call_order(
    pool: ToolThreads,
) -> None:
    # Each tool releases its sibling and waits for it: run one after the other, both give up.
    first, second = threading.Event(), threading.Event()

    def left(ctx: ToolExecutionContext, value: Any) -> str:
        first.set()
        return f"left:{second.wait(BOUND)}"

    def right(ctx: ToolExecutionContext, value: Any) -> str:
        second.set()
        return f"right:{first.wait(BOUND)}"

    runner = ToolRunner(
        ToolRegistry([json_tool("left", left), json_tool("right", right)]), executor=pool
    )
    outcomes = await runner.invoke_batch(await _prepared(runner, "left", "right"))
    assert [cast(ToolOutput, o).value for o in outcomes] == ["left:True", "right:True"]


async def test_a_call_past_its_deadline_times_out_while_its_sibling_completes(
    pool: ToolThreads,
) -> None:
    release, finished = threading.Event(), threading.Event()
    seen: list[bool] = []

    def stuck(ctx: ToolExecutionContext, value: Any) -> JsonObject:
        release.wait(BOUND)
        seen.append(ctx.signal.aborted)  # a cooperative tool can see it was given up
        finished.set()
        return {"late": True}

    def quick(ctx: ToolExecutionContext, value: Any) -> str:
        return "fine"

    runner = ToolRunner(
        ToolRegistry([json_tool("stuck", stuck, timeout_ms=50), json_tool("quick", quick)]),
        executor=pool,
    )
    outcomes = await runner.invoke_batch(await _prepared(runner, "stuck", "quick"))
    release.set()
    assert await asyncio.to_thread(finished.wait, BOUND)
    timed_out, done = outcomes
    assert isinstance(timed_out, ToolExecutionError) and timed_out.failure.kind == "timeout"
    assert isinstance(done, ToolOutput) and done.value == "fine"
    assert seen == [True]


async def test_an_abort_gives_up_every_running_call_of_the_batch(pool: ToolThreads) -> None:
    entered, release = threading.Event(), threading.Event()
    controller = AbortController()

    def block(ctx: ToolExecutionContext, value: Any) -> str:
        entered.set()
        release.wait(BOUND)
        return "late"

    runner = ToolRunner(ToolRegistry([json_tool("a", block), json_tool("b", block)]), executor=pool)
    batch = asyncio.ensure_future(
        runner.invoke_batch(await _prepared(runner, "a", "b", signal=controller.signal))
    )
    assert await asyncio.to_thread(entered.wait, BOUND)
    controller.abort("stop")
    outcomes = await asyncio.wait_for(batch, BOUND)  # while both threads are still blocked
    release.set()
    assert [cast(ToolExecutionError, o).failure.kind for o in outcomes] == ["cancelled"] * 2
    assert controller.signal.listener_count == 0


def _raise(error: BaseException) -> Any:
    def execute(ctx: ToolExecutionContext, value: Any) -> object:
        raise error

    return execute


async def test_failures_in_a_batch_are_typed_per_call(pool: ToolThreads) -> None:
    def bad_output(ctx: ToolExecutionContext, value: Any) -> object:
        return object()  # not JSON

    async def later() -> str:
        return "awaited"

    def returns_awaitable(ctx: ToolExecutionContext, value: Any) -> object:
        return later()

    runner = ToolRunner(
        ToolRegistry(
            [
                json_tool("value", _raise(ValueError("bad"))),
                json_tool("stop", _raise(StopIteration())),
                json_tool("retry", _raise(ToolRetry("again"))),
                json_tool("output", bad_output),
                json_tool("awaitable", returns_awaitable),
            ]
        ),
        executor=pool,
    )
    outcomes = await runner.invoke_batch(
        await _prepared(runner, "value", "stop", "retry", "output", "awaitable")
    )
    kinds = [o.failure.kind if isinstance(o, ToolExecutionError) else o for o in outcomes[:4]]
    assert kinds == ["execution", "execution", "retry", "validation"]
    assert cast(ToolExecutionError, outcomes[0]).failure.message.endswith("ValueError: bad")
    assert cast(ToolOutput, outcomes[4]).value == "awaited"


async def test_an_approval_a_tool_requires_itself_stops_the_batch_at_once(
    pool: ToolThreads,
) -> None:
    release = threading.Event()

    def block(ctx: ToolExecutionContext, value: Any) -> str:
        release.wait(BOUND)
        return "late"

    decision = InterruptDecision(interruption_id="i-1", reason="ask first")
    runner = ToolRunner(
        ToolRegistry(
            [
                json_tool("block", block),
                json_tool("ask", _raise(ToolInterruptionRequiredError(decision, "ask", "c2"))),
            ]
        ),
        executor=pool,
    )
    with pytest.raises(ToolInterruptionRequiredError):
        await asyncio.wait_for(runner.invoke_batch(await _prepared(runner, "block", "ask")), BOUND)
    release.set()


async def test_a_batch_in_a_run_keeps_context_variables_and_commits_in_call_order() -> None:
    seen: dict[str, str] = {}

    def tool_a(ctx: ToolExecutionContext, value: Any) -> str:
        seen[ctx.call_id] = REQUEST.get()
        REQUEST.set("changed by a")  # each call runs in its own copy of the run's context
        return "a"

    def tool_b(ctx: ToolExecutionContext, value: Any) -> str:
        seen[ctx.call_id] = REQUEST.get()
        return "b"

    runtime = scripted_runtime(
        _calls_then_text(_call("c1", "a"), _call("c2", "b"), _call("c3", "a")),
        tools=[json_tool("a", tool_a), json_tool("b", tool_b)],
    )
    REQUEST.set("caller")
    async with runtime:
        events: list[str] = []
        handle = runtime.stream(make_agent(tools=("a", "b")), "go")
        async for event in handle:
            if event.type.startswith("tool."):
                events.append(f"{event.type}:{cast(JsonObject, event.data)['callId']}")
        result = await handle.result()
    assert result.output == "c1=success,c2=success,c3=success"
    assert seen == {"c1": "caller", "c2": "caller", "c3": "caller"}
    starts = [f"tool.started:c{i}" for i in (1, 2, 3)]
    assert events == [*starts, *(s.replace("started", "completed") for s in starts)]


@pytest.mark.parametrize("stop", ["deadline", "cancel"])
async def test_a_blocked_batch_holds_up_neither_the_run_deadline_nor_a_cancel(stop: str) -> None:
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()

    def block(ctx: ToolExecutionContext, value: Any) -> JsonObject:
        entered.set()
        release.wait(BOUND)
        finished.set()
        return {"late": True}

    def quick(ctx: ToolExecutionContext, value: Any) -> str:
        return "fine"

    runtime = scripted_runtime(
        _calls_then_text(_call("c1", "block"), _call("c2", "quick")),
        tools=[json_tool("block", block), json_tool("quick", quick)],
    )
    agent = make_agent(tools=("block", "quick"))
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
    assert "late" not in str(result.state)


def test_a_commit_keeps_every_field_of_the_pending_call() -> None:
    # commit() copies PendingTool field by field: a new field must be copied there too.
    import attrs

    from actoviq.runtime.tool_execution import commit
    from actoviq.runtime.tools import PendingTool, PendingToolState, PendingToolTransitionError

    names = [field.name for field in attrs.fields(PendingTool)]
    assert names == ["call", "effect", "state", "interruption_id", "idempotency_key", "result"]
    pending = attrs.evolve(
        PendingTool.prepare(_call("c1", "save"), "idempotent-write", run_id="r1"),
        interruption_id="i-1",
    )
    result = ToolResultItem(call_id="c1", name="save", status="success", output="ok")
    committed = commit(pending, result)
    expected = attrs.evolve(pending, state=PendingToolState.COMMITTED, result=result)
    assert committed == expected and committed.idempotency_key == "r1:c1"
    with pytest.raises(PendingToolTransitionError):  # PendingTool's own checks still run
        commit(pending, cast(Any, None))


async def test_an_awaitable_of_a_stopped_batch_is_closed_not_left_unawaited(
    pool: ToolThreads,
) -> None:
    import inspect

    loop = asyncio.get_running_loop()
    controller = AbortController()
    made: list[Any] = []

    async def later() -> str:
        return "never"

    given_up = threading.Event()

    def give_up() -> None:
        controller.abort("stop")  # settles the running call "cancelled" before it returns
        given_up.set()  # in the same callback: the test task cannot resume (and block the
        # loop in ``shutdown``) between the two, as with two separate callbacks

    def returns_awaitable(ctx: ToolExecutionContext, value: Any) -> object:
        loop.call_soon_threadsafe(give_up)
        assert given_up.wait(BOUND)  # the call is given up before its result is handed over
        made.append(later())
        return made[-1]

    def quick(ctx: ToolExecutionContext, value: Any) -> str:
        return "fine"

    runner = ToolRunner(
        ToolRegistry([json_tool("awaitable", returns_awaitable), json_tool("quick", quick)]),
        executor=pool,
    )
    prepared = await _prepared(runner, "awaitable", "quick", signal=controller.signal)
    outcomes = await asyncio.wait_for(runner.invoke_batch(prepared), BOUND)
    assert cast(ToolExecutionError, outcomes[0]).failure.kind == "cancelled"
    pool.shutdown(wait=True)  # joins the worker: its late result has been handed over
    assert inspect.getcoroutinestate(made[0]) == inspect.CORO_CLOSED
