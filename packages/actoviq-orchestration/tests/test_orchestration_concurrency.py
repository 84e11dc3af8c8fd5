"""Concurrency permits (spec 04 §7.1 rows 7-9) re-entrant along the ancestry (§8.2-14)."""

from __future__ import annotations

import asyncio

import pytest

from actoviq.core import AbortController
from actoviq.orchestration import ConcurrencyController, OrchestrationConfigError


@pytest.mark.parametrize("capacity", [0, 1.5, -3, True])
def test_capacity_must_be_a_positive_safe_integer(capacity: object) -> None:
    with pytest.raises(OrchestrationConfigError, match="positive"):
        ConcurrencyController(capacity)  # type: ignore[arg-type]


async def test_fifo_with_an_aborted_waiter_skipped() -> None:
    controller = ConcurrencyController(1)
    order: list[str] = []
    release_first = asyncio.Event()
    first_started = asyncio.Event()

    async def first() -> int:
        order.append("first")
        first_started.set()
        await release_first.wait()
        return 1

    async def third() -> int:
        order.append("third")
        return 3

    aborted = AbortController()
    holder = asyncio.create_task(controller.run(first, run_id="a"))
    await first_started.wait()
    waiting = asyncio.create_task(
        controller.run(third, run_id="b", signal=aborted.signal)  # never runs
    )
    last = asyncio.create_task(controller.run(third, run_id="c"))
    await asyncio.sleep(0)
    assert controller.pending == 2
    aborted.abort(RuntimeError("gave up"))
    with pytest.raises(RuntimeError, match="gave up"):
        await waiting
    release_first.set()
    assert (await holder, await last) == (1, 3)
    assert order == ["first", "third"]
    assert (controller.active, controller.pending, controller.peak) == (0, 0, 1)


async def test_a_pre_aborted_signal_and_a_failing_operation_release_cleanly() -> None:
    controller = ConcurrencyController(2)
    aborted = AbortController()
    aborted.abort(ValueError("already"))

    async def never() -> None:
        raise AssertionError("must not run")

    with pytest.raises(ValueError, match="already"):
        await controller.run(never, run_id="x", signal=aborted.signal)

    async def boom() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        await controller.run(boom, run_id="y")
    assert controller.active == 0


async def test_no_barging_past_waiters() -> None:
    controller = ConcurrencyController(1)
    gate = asyncio.Event()
    started: list[str] = []

    async def hold(name: str) -> None:
        started.append(name)
        await gate.wait()

    first = asyncio.create_task(controller.run(lambda: hold("a"), run_id="a"))
    await asyncio.sleep(0)
    queued = asyncio.create_task(controller.run(lambda: hold("b"), run_id="b"))
    await asyncio.sleep(0)
    gate.set()
    await first
    late = asyncio.create_task(controller.run(lambda: hold("c"), run_id="c"))
    await asyncio.gather(queued, late)
    assert started == ["a", "b", "c"]


async def test_nesting_deeper_than_the_capacity_borrows_along_the_ancestry() -> None:
    controller = ConcurrencyController(1)
    reached: list[int] = []

    async def nested(depth: int, lineage: tuple[str, ...]) -> int:
        run_id = f"run-{depth}"
        async with controller.permit(run_id, lineage):
            reached.append(depth)
            assert controller.active == 1
            if depth == 5:
                return depth
            return await nested(depth + 1, (*lineage, run_id))

    async with asyncio.timeout(5):
        assert await nested(1, ()) == 5
    assert reached == [1, 2, 3, 4, 5]
    assert (controller.active, controller.loans, controller.peak) == (0, 0, 1)


async def test_a_holder_lends_to_one_descendant_at_a_time() -> None:
    controller = ConcurrencyController(1)
    running = 0
    most = 0

    async def leaf(name: str) -> None:
        nonlocal running, most
        async with controller.permit(name, ("parent",)):
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.001)
            running -= 1

    async with controller.permit("parent"):
        async with asyncio.timeout(5):
            await asyncio.gather(*(leaf(f"leaf-{n}") for n in range(5)))
    assert most == 1
    assert (controller.active, controller.loans, controller.pending) == (0, 0, 0)


async def test_strangers_wait_while_descendants_borrow() -> None:
    controller = ConcurrencyController(1)
    order: list[str] = []
    release = asyncio.Event()

    async def parent() -> None:
        async with controller.permit("p"):
            order.append("p")
            stranger = asyncio.create_task(stranger_run())
            await asyncio.sleep(0)
            async with controller.permit("child", ("p",)):
                order.append("child")
            release.set()
            await asyncio.sleep(0)
            order.append("p-done")
        await stranger

    async def stranger_run() -> None:
        async with controller.permit("s"):
            order.append("stranger")

    async with asyncio.timeout(5):
        await parent()
    assert release.is_set()
    assert order == ["p", "child", "p-done", "stranger"]


async def test_holding_the_same_run_twice_is_refused() -> None:
    controller = ConcurrencyController(2)
    async with controller.permit("a"):
        with pytest.raises(OrchestrationConfigError, match="already holds"):
            async with controller.permit("a"):
                pass


async def test_a_waiter_that_gets_its_permit_stops_listening_to_its_signal() -> None:
    controller = ConcurrencyController(1)
    gate = asyncio.Event()
    signal = AbortController()

    async def hold() -> None:
        await gate.wait()

    async def quick() -> str:
        return "ran"

    holder = asyncio.create_task(controller.run(hold, run_id="a"))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(controller.run(quick, run_id="b", signal=signal.signal))
    await asyncio.sleep(0)
    assert (controller.pending, signal.signal.listener_count) == (1, 1)
    gate.set()
    assert await waiter == "ran"
    await holder
    assert (controller.pending, controller.active, signal.signal.listener_count) == (0, 0, 0)
    signal.abort("after the fact")  # nothing listens any more: no effect on the controller
    assert (controller.pending, controller.active) == (0, 0)


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    controller = ConcurrencyController(1)
    gate = asyncio.Event()

    async def hold() -> None:
        await gate.wait()

    holder = asyncio.create_task(controller.run(hold, run_id="a"))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(controller.run(hold, run_id="b"))
    await asyncio.sleep(0)
    assert controller.pending == 1
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert controller.pending == 0
    gate.set()
    await holder
    assert controller.active == 0
    async with controller.permit("c"):
        assert controller.active == 1
