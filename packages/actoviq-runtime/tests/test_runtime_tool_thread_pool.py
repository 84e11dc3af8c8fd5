"""``ToolThreads``: the bounded worker threads plain tools run in (issue 21 §2)."""

from __future__ import annotations

import threading

import pytest

from actoviq.runtime.tools.threads import ToolThreads

_WAIT = 10.0  # seconds any event wait may take before the test fails


def test_sequential_jobs_reuse_one_named_worker() -> None:
    pool = ToolThreads(4, thread_name_prefix="actoviq-tool")
    names: list[str] = []
    try:
        for _ in range(5):
            done = threading.Event()

            def job(done: threading.Event = done) -> None:
                names.append(threading.current_thread().name)
                done.set()

            pool.run_soon(job)
            assert done.wait(_WAIT)
        assert pool.threads == 1  # an idle worker takes the next job: no new thread
        assert set(names) == {"actoviq-tool_0"}
    finally:
        pool.shutdown(wait=True)


def test_blocked_jobs_grow_the_pool_up_to_its_bound_then_queue() -> None:
    pool = ToolThreads(2)
    release = threading.Event()
    started = threading.Semaphore(0)
    finished: list[int] = []

    def job(index: int) -> None:
        started.release()
        assert release.wait(_WAIT)
        finished.append(index)

    try:
        for index in range(3):
            pool.run_soon(lambda index=index: job(index))
        assert started.acquire(timeout=_WAIT) and started.acquire(timeout=_WAIT)
        assert pool.threads == 2 and not finished  # both workers blocked: the third job waits
        release.set()
        assert started.acquire(timeout=_WAIT)  # the queued job ran once a worker was free
    finally:
        pool.shutdown(wait=True)
    assert sorted(finished) == [0, 1, 2] and pool.threads == 2


def test_submit_futures_and_shutdown() -> None:
    pool = ToolThreads(1)

    def add(a: int, b: int) -> int:
        return a + b

    assert pool.submit(add, 2, 3).result(_WAIT) == 5
    failing = pool.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.result(_WAIT)
    gate = threading.Event()
    entered = threading.Event()

    def blocker() -> None:
        entered.set()
        assert gate.wait(_WAIT)

    pool.run_soon(blocker)
    assert entered.wait(_WAIT)
    queued = pool.submit(lambda: "never")
    pool.shutdown(wait=False, cancel_futures=True)  # the queued job is dropped, not run
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.run_soon(lambda: None)
    gate.set()
    pool.shutdown(wait=True)
    assert not queued.done()
    with pytest.raises(ValueError, match="at least 1"):
        ToolThreads(0)
