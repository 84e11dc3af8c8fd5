"""A non-streamed run executed in its caller's task (``AgentRuntime.run``, ``docs/decisions.md``).

``runtime.run`` used to start a task per run and ``asyncio.shield`` it: a task, a shield future
and three event-loop iterations per run, even for a run that never suspends. When it is safe, the
run's coroutine is driven in the caller's task instead, one step at a time inside a copy of the
caller's context (:class:`InContext`), so it sees and leaks exactly what a task of its own would:

* context variables set by the run, its tools or middleware stay in the copy, as in a task;
* the run's own aborts (deadline, signal, ``close``) cancel the host task as they cancelled the
  run task, and the run withdraws that cancellation when it ends;
* a cancellation of the caller that reaches the run aborts it with ``RunCancelledError("Run
  caller was cancelled.")``, the run ends ``cancelled`` (saved, ``run.cancelled`` emitted) and the
  caller then gets its ``CancelledError``, as it did through the shield;
* ``close`` waits for the run itself, not for the caller's task.

It is not safe, and a task is used as before, when the caller's task already hosts a run (a tool
or middleware starting a nested run: the two runs' cancellations would share one task) or has
cancellation requests outstanding (the runtime's own cancellations are counted from zero).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Generic, TypeVar

from actoviq.core import RunResult
from actoviq.runtime.execution import RunExecution
from actoviq.runtime.loop import execute, hosts_run

__all__ = ["InContext", "can_host", "run_in_caller"]

_T = TypeVar("_T")


def can_host(task: asyncio.Task[Any] | None) -> bool:
    """True when a run can execute in ``task`` (see the module docstring)."""
    return task is not None and not hosts_run(task) and task.cancelling() == 0


class InContext(Generic[_T]):
    """Await a coroutine in the current task, each of its steps inside ``context``.

    What the coroutine yields goes to the task unchanged and what the task sends or throws goes
    back to it unchanged, so it suspends and is cancelled exactly as if the task ran it; only its
    context variables live in ``context`` (what ``create_task`` would have given it).
    """

    __slots__ = ("_context", "_coro")

    def __init__(self, coro: Coroutine[Any, Any, _T], context: contextvars.Context) -> None:
        self._coro = coro
        self._context = context

    def __await__(self) -> Generator[Any, None, _T]:
        coro = self._coro
        run = self._context.run
        send = coro.send
        throw = coro.throw
        error: BaseException | None = None
        while True:
            try:
                step = run(send, None) if error is None else run(throw, error)
            except StopIteration as stop:
                value: _T = stop.value
                return value
            error = None
            try:
                yield step
            except GeneratorExit:
                run(coro.close)
                raise
            except BaseException as thrown:
                error = thrown


async def run_in_caller(
    execution: RunExecution, host: asyncio.Task[Any], ended: Callable[[RunExecution], None]
) -> RunResult[Any]:
    """Execute ``execution`` in ``host`` (the current task); ``ended`` runs when it settled.

    Raises:
        CancelledError: the caller was cancelled while the run executed (the run ended
            ``cancelled`` first).
    """
    execution.inline = True
    try:
        result = await InContext(execute(execution), contextvars.copy_context())
    finally:
        ended(execution)
    if host.cancelling():
        raise asyncio.CancelledError()  # the caller's cancellation, once the run settled
    return result
