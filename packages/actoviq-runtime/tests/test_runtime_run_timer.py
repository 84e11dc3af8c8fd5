"""One lazily re-armed timer per run (``RunTimer``) and per runner (``CallDeadlines``).

``RunTimer`` keeps the run deadline and each model call's timeout, ``CallDeadlines`` the
deadlines of the tool calls in progress. Driven by a fake loop clock, so the lazy re-arming is
checked at exact instants; the runs at the end check the typed timeout end to end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

import pytest
from runtime_testkit import json_tool, make_agent, scripted_runtime

from actoviq.core import JsonObject, RunLimitsPatch, ToolCallItem, ToolResultItem
from actoviq.providers import ModelCallTimeoutError
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime.run_timer import RunTimer
from actoviq.runtime.tools.call_deadlines import CallDeadlines


class _Handle:
    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _Loop:
    def __init__(self) -> None:
        self.now = 0.0
        self.handles: list[_Handle] = []

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[[], None]) -> _Handle:
        handle = _Handle(when, callback)
        self.handles.append(handle)
        return handle

    def live(self) -> list[_Handle]:
        return [h for h in self.handles if not h.cancelled]

    def advance(self, to: float) -> None:
        self.now = to
        fired = True
        while fired:
            fired = False
            for handle in list(self.handles):
                if not handle.cancelled and handle.when <= to:
                    handle.cancelled = True  # run once, as the loop does
                    handle.callback()
                    fired = True


class _Task:
    def __init__(self) -> None:
        self.requests = 0

    def cancelling(self) -> int:
        return self.requests

    def cancel(self) -> bool:
        self.requests += 1
        return True

    def uncancel(self) -> int:
        self.requests -= 1
        return self.requests


def _timer(loop: _Loop, deadlines: list[float]) -> RunTimer:
    return RunTimer(cast(Any, loop), 1000.0, 100.0, lambda: deadlines.append(loop.now))


def test_the_run_deadline_fires_once_at_its_time() -> None:
    loop, deadlines = _Loop(), list[float]()
    _timer(loop, deadlines)
    loop.advance(999.0)
    assert deadlines == []
    loop.advance(1000.0)
    assert deadlines == [1000.0]
    loop.advance(5000.0)
    assert deadlines == [1000.0] and loop.live() == []


def test_a_call_times_out_a_timeout_after_it_started_not_after_the_run_started() -> None:
    loop, deadlines = _Loop(), list[float]()
    timer = _timer(loop, deadlines)
    task = _Task()
    loop.advance(50.0)
    timer.start_call(cast(Any, task))
    loop.advance(100.0)  # the timer's first moment: the call is not due yet
    assert task.requests == 0 and not timer.expired
    loop.advance(149.0)
    assert task.requests == 0
    loop.advance(150.0)
    assert task.requests == 1 and timer.expired
    assert timer.end_call() is True  # the expiry's cancellation is withdrawn
    assert task.requests == 0 and not timer.busy


def test_a_call_that_ended_in_time_is_never_cancelled_and_calls_schedule_nothing() -> None:
    loop, deadlines = _Loop(), list[float]()
    timer = _timer(loop, deadlines)
    task = _Task()
    armed = len(loop.handles)
    for start in (10.0, 20.0, 30.0):  # three calls: no timer handle is created or cancelled
        loop.advance(start)
        timer.start_call(cast(Any, task))
        assert timer.busy
        assert timer.end_call() is False
    assert len(loop.handles) == armed and len(loop.live()) == 1
    loop.advance(999.0)
    assert task.requests == 0 and deadlines == []
    timer.cancel()
    assert loop.live() == []


async def test_every_model_call_of_a_run_has_the_timeout() -> None:
    # The first call returns at once; the second hangs and is stopped by the same run's timer.
    provider = ScriptedProvider(
        [
            ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="t", input={})]),
            ScriptedTurn(text="slow", delay=5),
            ScriptedTurn(text="done"),
        ]
    )

    async def fast(ctx: Any, args: Any) -> JsonObject:
        return {"ok": True}

    runtime = scripted_runtime(provider, tools=[json_tool("t", fast)])
    agent = make_agent(tools=("t",), limits=RunLimitsPatch(model_call_timeout_ms=30))
    async with runtime:
        with pytest.raises(ModelCallTimeoutError) as info:
            await runtime.run(agent, "x")
        assert info.value.code == "MODEL_CALL_TIMEOUT"
        result = await runtime.run(agent, "again")  # the caller's task carries no cancel
    assert result.status == "completed"


def test_tool_call_deadlines_fire_in_order_with_one_timer_armed() -> None:
    loop = _Loop()
    deadlines = CallDeadlines(cast(Any, loop))
    late, early, done = _Task(), _Task(), _Task()
    a = deadlines.enter(120.0, cast(Any, late))
    b = deadlines.enter(30.0, cast(Any, early))  # earlier than the armed moment: re-armed
    c = deadlines.enter(125.0, cast(Any, done))  # later: nothing scheduled
    assert len(loop.live()) == 1
    assert deadlines.leave(c) is False  # ended in time
    loop.advance(29.0)
    assert early.requests == 0
    loop.advance(30.0)
    assert (early.requests, late.requests) == (1, 0) and b.expired and not a.expired
    assert deadlines.leave(b) is True and early.requests == 0  # withdrawn
    assert deadlines.leave(b) is False  # idempotent
    loop.advance(120.0)
    assert late.requests == 1 and a.expired
    assert deadlines.leave(a) is True
    loop.advance(1000.0)
    assert done.requests == 0 and loop.live() == []


def test_calls_later_than_the_armed_moment_schedule_nothing() -> None:
    loop = _Loop()
    deadlines = CallDeadlines(cast(Any, loop))
    task = _Task()
    first = deadlines.enter(120.0, cast(Any, task))
    handles = len(loop.handles)
    for start in range(1, 50):  # a steady stream of calls with the same timeout
        loop.advance(float(start))
        assert deadlines.leave(deadlines.enter(start + 120.0, cast(Any, task))) is False
    assert len(loop.handles) == handles
    deadlines.leave(first)
    loop.advance(120.0)  # fires once, finds nothing due, arms nothing
    assert task.requests == 0 and loop.live() == []


async def test_a_tool_past_its_deadline_times_out_and_the_next_call_runs() -> None:
    provider = ScriptedProvider(
        [
            ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="hang", input={})]),
            ScriptedTurn(tool_calls=[ToolCallItem(id="c2", name="quick", input={})]),
            ScriptedTurn(text="done"),
        ]
    )

    async def hang(ctx: Any, args: Any) -> JsonObject:
        await asyncio.sleep(5)  # stopped by its 20 ms deadline
        return {"late": True}

    async def quick(ctx: Any, args: Any) -> JsonObject:
        return {"ok": True}

    runtime = scripted_runtime(
        provider,
        tools=[json_tool("hang", hang, timeout_ms=20), json_tool("quick", quick)],
    )
    async with runtime:
        result = await runtime.run(make_agent(tools=("hang", "quick")), "x")
    assert result.status == "completed"
    results = [i for i in result.items if isinstance(i, ToolResultItem)]
    assert [(r.call_id, r.status) for r in results] == [("c1", "error"), ("c2", "success")]
    assert "exceeded its deadline" in str(results[0].output)
