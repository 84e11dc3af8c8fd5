"""``ToolThreads``: the bounded worker threads plain (non-``async``) tools run in (internal).

A plain tool call hands one job to a worker and is woken by the job itself (see
``ToolRunner._in_thread``), so nobody needs the ``Future`` that ``ThreadPoolExecutor.submit``
builds (a lock, a condition and their notifications per call, on both threads). Here a job is a
bare callable put on one ``SimpleQueue`` (C); idle workers wait on it. The pool grows up to
``max_workers`` threads, only when no worker is idle, and keeps them (a plain tool call pays
the thread handoff, nothing else). ``submit`` still returns a ``Future`` for other callers.

Shutdown does not wait (a running tool cannot be interrupted; it finishes in its thread and the
runtime drops its result), optionally dropping the jobs not started. At interpreter exit the
workers are woken and joined, as ``ThreadPoolExecutor`` does: a tool still running finishes.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Executor, Future
from queue import Empty, SimpleQueue
from typing import Final, ParamSpec, TypeVar

__all__ = ["ToolThreads"]

_P = ParamSpec("_P")
_T = TypeVar("_T")
_STOP: Final = None  # the sentinel that ends one worker
_POOLS: weakref.WeakSet[ToolThreads] = weakref.WeakSet()


class ToolThreads(Executor):
    """Worker threads for plain tools: jobs are callables run in order of arrival.

    Args:
        max_workers: at most this many threads (>= 1).
        thread_name_prefix: worker threads are named ``<prefix>_<n>``.

    Raises:
        ValueError: ``max_workers`` is below 1.
    """

    def __init__(self, max_workers: int, thread_name_prefix: str = "actoviq-tool") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1.")
        self._max = max_workers
        self._prefix = thread_name_prefix
        self._jobs: SimpleQueue[Callable[[], object] | None] = SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # workers done with a job and back on the queue (or about to be)
        self._shutdown = False
        _POOLS.add(self)

    @property
    def threads(self) -> int:
        """How many worker threads were started."""
        return len(self._threads)

    def run_soon(self, job: Callable[[], object]) -> None:
        """Run ``job()`` in a worker (its exceptions are its own business: they are dropped).

        Raises:
            RuntimeError: after :meth:`shutdown`.
        """
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            if self._idle:
                self._idle -= 1
            elif len(self._threads) < self._max:
                thread = threading.Thread(
                    target=_work,
                    args=(weakref.ref(self), self._jobs),
                    name=f"{self._prefix}_{len(self._threads)}",
                    daemon=True,  # joined at exit by _join_all (a running tool finishes first)
                )
                thread.start()
                self._threads.append(thread)
        self._jobs.put(job)

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        """``Executor.submit``: run ``fn(*args, **kwargs)`` in a worker; its ``Future``."""
        future: Future[_T] = Future()

        def job() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as error:
                future.set_exception(error)
            else:
                future.set_result(result)

        self.run_soon(job)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking jobs; ``cancel_futures`` drops queued ones; ``wait`` joins the workers."""
        with self._lock:
            already = self._shutdown
            self._shutdown = True
            threads = list(self._threads)
        if cancel_futures:
            while True:
                try:
                    self._jobs.get_nowait()
                except Empty:
                    break
        if not already:
            for _ in threads:
                self._jobs.put(_STOP)
        if wait:
            for thread in threads:
                thread.join()

    def _done(self) -> None:
        with self._lock:
            self._idle += 1


def _work(pool: weakref.ref[ToolThreads], jobs: SimpleQueue[Callable[[], object] | None]) -> None:
    while True:
        job = jobs.get()
        if job is None:  # _STOP
            return
        with contextlib.suppress(BaseException):  # a job reports its own outcome (run_soon)
            job()
        del job
        owner = pool()
        if owner is None:
            return
        owner._done()  # pyright: ignore[reportPrivateUsage]
        del owner


def _join_all() -> None:
    for pool in list(_POOLS):
        pool.shutdown(wait=True)


atexit.register(_join_all)
