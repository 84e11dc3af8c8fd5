"""A caller's abort signal keeps no listener of a run after the run ends (no accumulation on a
long-lived signal passed to many runs), whatever the ending: completed, failed, cancelled."""

from __future__ import annotations

import asyncio

import pytest
from runtime_testkit import make_agent, scripted_runtime, signalled_turn, wait_event

from actoviq.core import AbortController, RunError
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn


def test_listener_count_follows_add_remove_and_abort() -> None:
    controller = AbortController()
    signal = controller.signal
    assert signal.listener_count == 0
    remove = signal.add_listener(lambda _reason: None)
    signal.add_listener(lambda _reason: None)
    assert signal.listener_count == 2
    remove()
    remove()  # twice: no effect
    assert signal.listener_count == 1
    controller.abort("stop")
    assert signal.listener_count == 0


async def test_completed_runs_leave_no_listener_on_the_callers_signal() -> None:
    provider = ScriptedProvider([ScriptedTurn(text="ok")], repeat_last=True)
    controller = AbortController()
    controller.signal.add_listener(lambda _reason: None)  # the caller's own listener stays
    async with scripted_runtime(provider) as runtime:
        for index in range(5):
            result = await runtime.run(make_agent(), f"q{index}", signal=controller.signal)
            assert result.status == "completed"
            assert controller.signal.listener_count == 1
        async with runtime.stream(make_agent(), "s", signal=controller.signal) as handle:
            assert (await handle.result()).status == "completed"
        assert controller.signal.listener_count == 1


async def test_failed_run_leaves_no_listener_on_the_callers_signal() -> None:
    provider = ScriptedProvider([ScriptedTurn(error=RuntimeError("model down"))])
    controller = AbortController()
    async with scripted_runtime(provider) as runtime:
        with pytest.raises(RunError):
            await runtime.run(make_agent(), "x", signal=controller.signal)
    assert controller.signal.listener_count == 0


async def test_cancelled_runs_leave_no_listener_on_the_callers_signal() -> None:
    called = asyncio.Event()
    provider = ScriptedProvider(
        [signalled_turn(ScriptedTurn(text="late", delay=30), called)], repeat_last=True
    )
    controller = AbortController()
    async with scripted_runtime(provider) as runtime:
        # cancelled through its handle: the caller's signal is still live afterwards
        handle = runtime.stream(make_agent(), "x", signal=controller.signal)
        async with handle:
            await wait_event(called)
            assert controller.signal.listener_count == 1  # linked while running
            handle.cancel("stop")
            assert (await handle.result()).status == "cancelled"
        assert controller.signal.listener_count == 0
        # cancelled because its caller's task was cancelled
        called.clear()
        task = asyncio.create_task(runtime.run(make_agent(), "y", signal=controller.signal))
        await wait_event(called)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert controller.signal.listener_count == 0
