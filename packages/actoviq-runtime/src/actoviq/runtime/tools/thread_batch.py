"""``ThreadBatch``: several plain tool calls in worker threads, one loop wake-up (issue 21, W2).

A parallel read batch of plain (non-``async``) tools used to run each call in a task of its own
whose worker thread woke the loop when it finished: one task, one future and one self-pipe
wake-up per call. A ``ThreadBatch`` hands every call to the worker pool at once and is awaited by
the calling task alone. The workers record their outcomes under a lock; only the outcome that
settles the batch wakes the loop (``call_soon_threadsafe``). A slot also settles on the loop
side: its deadline fired (:meth:`ThreadBatch.expire`) or the run was aborted
(:meth:`ThreadBatch.give_up`), and a late thread outcome for such a slot is dropped (a
coroutine a plain tool returned too late is closed, never left unawaited).

Two kinds of outcome need the loop before the rest of the batch is done, so they wake it at
once: an exception that is not a tool result (:data:`ESCAPES`, e.g. an approval the tool itself
requires: the batch stops, as a ``TaskGroup`` stops on its first error) and an awaitable (a
plain function may return one: it is awaited on the loop, concurrently with the calls still
running in their threads, under the call's deadline).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any, Final, cast

from actoviq.core import AbortController
from actoviq.runtime.tools.call_deadlines import CallDeadlines
from actoviq.runtime.tools.errors import ToolInterruptionRequiredError
from actoviq.runtime.tools.threads import ToolThreads

__all__ = [
    "EXPIRED",
    "GIVEN_UP",
    "PENDING",
    "Raised",
    "ThreadBatch",
    "await_slot",
    "due_slot",
    "stop_slot",
]


class _Marker:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


PENDING: Final[object] = _Marker("PENDING")
"""A slot whose call is still running."""
EXPIRED: Final[object] = _Marker("EXPIRED")
"""A slot whose deadline fired before its thread finished (the late outcome is dropped)."""
GIVEN_UP: Final[object] = _Marker("GIVEN_UP")
"""A slot abandoned by the loop (the run was aborted; the late outcome is dropped)."""


class Raised:
    """A slot whose tool raised ``error`` in its thread."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def escapes(error: BaseException) -> bool:
    """Whether ``error`` ends the batch instead of becoming its call's outcome.

    Everything but ``Exception`` s (``KeyboardInterrupt``, ``SystemExit``, ...) and the
    approval a tool itself requires (``ToolInterruptionRequiredError``).
    """
    return not isinstance(error, Exception) or isinstance(error, ToolInterruptionRequiredError)


class ThreadBatch:
    """The slots of one batch of plain tool calls and the future its task awaits.

    Args:
        loop: the running loop (the awaiting task's).
        size: how many calls.
    """

    __slots__ = ("_lock", "_loop", "_open", "_resolved", "_waiter", "_woken", "slots", "urgent")

    def __init__(self, loop: asyncio.AbstractEventLoop, size: int) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._open = size  # slots not yet settled
        self._waiter: asyncio.Future[None] = loop.create_future()
        self._woken = False  # a wake-up is on its way to the loop
        self._resolved: set[int] = set()  # urgent slots given their final outcome
        self.slots: list[object] = [PENDING] * size
        self.urgent: list[int] = []  # settled slots the loop must look at now (see module doc)

    @property
    def settled(self) -> bool:
        """Every slot has its outcome (or was given up)."""
        return self._open == 0

    def start(
        self,
        executor: Executor | None,
        index: int,
        execute: Callable[[Any, Any], object],
        ctx: object,
        arguments: object,
    ) -> None:
        """Run ``execute(ctx, arguments)`` in a worker, in a copy of the current context."""
        context = contextvars.copy_context()

        def work() -> None:
            try:
                outcome: object = context.run(execute, ctx, arguments)
            except BaseException as error:  # the slot's outcome, as the loop would raise it
                self._finish(index, Raised(error))
            else:
                self._finish(index, outcome)

        if executor is None:
            self._loop.run_in_executor(None, work)  # the loop's default executor owns the job
        elif executor.__class__ is ToolThreads:
            cast(ToolThreads, executor).run_soon(work)  # no Future: the batch wakes the loop
        else:
            executor.submit(work)

    def _finish(self, index: int, outcome: object) -> None:
        """From a worker: record ``outcome``; wake the loop when it settles the batch."""
        urgent = (
            escapes(outcome.error) if isinstance(outcome, Raised) else inspect.isawaitable(outcome)
        )
        with self._lock:
            dropped = self.slots[index] is not PENDING  # expired or given up: too late
            if not dropped:
                self.slots[index] = outcome
                if urgent:
                    self.urgent.append(index)
                else:
                    self._open -= 1
                if (not urgent and self._open) or self._woken:
                    return
                self._woken = True
        if dropped:
            if inspect.iscoroutine(outcome):
                outcome.close()  # nobody will await it: no "never awaited" warning
            return
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody is waiting any more
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        if not self._waiter.done():
            self._waiter.set_result(None)

    def _settle_here(self, index: int, outcome: object) -> bool:
        """On the loop: settle a running slot with ``outcome`` (False once it settled)."""
        with self._lock:
            if self.slots[index] is not PENDING:
                return False
            self.slots[index] = outcome
            self._open -= 1
            if self._open:
                return True
        self._wake()
        return True

    def expire(self, index: int) -> bool:
        """On the loop: the call's deadline fired before its thread finished (False: too late)."""
        return self._settle_here(index, EXPIRED)

    def give_up(self, index: int) -> None:
        """On the loop: abandon the call (the run was aborted) and wake the awaiting task."""
        self._settle_here(index, GIVEN_UP)
        self._wake()

    def resolve(self, index: int, outcome: object) -> None:
        """On the loop: an urgent slot's final outcome (its awaitable was awaited); once."""
        with self._lock:
            if index in self._resolved:
                return
            self._resolved.add(index)
            self.slots[index] = outcome
            if isinstance(outcome, Raised) and escapes(outcome.error):
                self.urgent.append(index)  # the batch stops: the awaiting task raises it
            else:
                self._open -= 1
                if self._open:
                    return
        self._wake()

    def close(self) -> None:
        """On the loop, when the batch is over: every running call is given up.

        Their late outcomes are dropped and send no wake-up.
        """
        with self._lock:
            for index, slot in enumerate(self.slots):
                if slot is PENDING:
                    self.slots[index] = GIVEN_UP
                    self._open -= 1
            self._woken = True

    def take_urgent(self) -> list[int]:
        """On the loop: the urgent slots recorded since the last call (and re-arm the wake-up)."""
        with self._lock:
            urgent, self.urgent = self.urgent, []
            return urgent

    async def wait(self) -> None:
        """Until the batch settled, or an urgent slot or a give-up needs the loop."""
        with self._lock:
            if self.urgent or not self._open:
                return
            self._woken = False
        if self._waiter.done():
            self._waiter = self._loop.create_future()
        await self._waiter


async def await_slot(
    batch: ThreadBatch,
    index: int,
    awaitable: object,
    when: float | None,
    keeper: CallDeadlines,
) -> None:
    """A plain tool returned an awaitable: await it on the loop under the call's deadline."""
    task = asyncio.current_task()
    deadline = None if when is None or task is None else keeper.enter(when, task)
    outcome: object
    try:
        outcome = await cast(Awaitable[object], awaitable)
    except asyncio.CancelledError:  # the deadline's (timed out) or a stop's (given up)
        timed_out = (
            deadline is not None
            and keeper.leave(deadline)
            and task is not None
            and task.cancelling() <= deadline.pending
        )
        outcome = EXPIRED if timed_out else GIVEN_UP
    except BaseException as error:
        expired = isinstance(error, TimeoutError) and deadline is not None and deadline.expired
        outcome = EXPIRED if expired else Raised(error)
    finally:
        if deadline is not None:
            keeper.leave(deadline)
    batch.resolve(index, outcome)


def due_slot(batch: ThreadBatch, index: int, boundary: AbortController) -> None:
    """The call's deadline fired: settle it as timed out and abort what its tool sees."""
    if batch.expire(index):
        boundary.abort(TimeoutError("Tool deadline exceeded."))


def stop_slot(
    batch: ThreadBatch,
    index: int,
    boundary: AbortController,
    awaiting: dict[int, asyncio.Task[None]],
    reason: object,
) -> None:
    """The run's signal aborted: abort what the tool sees and give the call up."""
    boundary.abort(reason)
    task = awaiting.get(index)
    if task is not None:
        task.cancel()
    batch.give_up(index)
