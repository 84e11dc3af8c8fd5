"""Run permits (FIFO, cancellation leaves the queue) and per-session locks."""

from __future__ import annotations

import asyncio

import pytest

from actoviq.runtime.concurrency import RunGate, SessionLocks


async def test_gate_serves_waiters_in_fifo_order() -> None:
    gate = RunGate(1)
    order: list[int] = []
    await gate.acquire()

    async def waiter(index: int) -> None:
        await gate.acquire()
        order.append(index)
        gate.release()

    tasks = [asyncio.create_task(waiter(i)) for i in range(5)]
    await asyncio.sleep(0)
    assert gate.waiting == 5
    gate.release()
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2, 3, 4]
    assert gate.active == 0


async def test_cancelled_waiter_leaves_the_queue_without_a_permit() -> None:
    gate = RunGate(1)
    await gate.acquire()
    task = asyncio.create_task(gate.acquire())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gate.waiting == 0
    gate.release()
    assert gate.active == 0


async def test_session_locks_serialise_one_key_and_clean_up() -> None:
    locks = SessionLocks()
    inside: list[str] = []
    release = asyncio.Event()
    second_arrived = asyncio.Event()

    async def holder(name: str) -> None:
        if name == "second":
            # no suspension point until the lock: a lock that let it in would have done so
            # before this test resumes
            second_arrived.set()
        async with locks.hold("t", "s"):
            inside.append(name)
            if name == "first":
                await release.wait()

    first = asyncio.create_task(holder("first"))
    second = asyncio.create_task(holder("second"))
    async with asyncio.timeout(10):
        await second_arrived.wait()
    assert inside == ["first"]
    release.set()
    await asyncio.gather(first, second)
    assert inside == ["first", "second"]
    assert len(locks) == 0
