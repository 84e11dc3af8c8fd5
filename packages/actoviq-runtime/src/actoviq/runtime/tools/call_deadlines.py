"""Tool-call deadlines kept by one lazily re-armed loop timer (issue 21, W2).

Every tool call with a deadline used to enter an ``asyncio.timeout_at`` scope: a scope object
and a timer handle pushed on the loop's heap and cancelled again, per call, the cancelled handles
piling up in the heap until the loop sweeps them. :class:`CallDeadlines` keeps the deadlines of
the calls in progress in a dict and one timer armed no later than the earliest of them; a call
whose deadline is later than the armed moment (the common case: the default tool timeout is the
same for every call) costs a dict insert and delete. When the timer fires it cancels the tasks
of the calls that are due and re-arms at the earliest remaining deadline.

Semantics of the scope it replaces: a due call's task is cancelled; the call turns that
cancellation into its timeout only when no other cancellation is pending on top of it
(:meth:`CallDeadlines.leave` withdraws it, as ``asyncio.timeout`` does with ``Task.uncancel``).
A call that has no task of its own (a plain tool of a thread batch, ``actoviq.runtime.tools.
thread_batch``) enters a callback instead (:meth:`CallDeadlines.enter_callback`): it is called
once when the deadline is due, and nothing is cancelled.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

__all__ = ["CallDeadline", "CallDeadlines"]

_SLACK = 1e-6  # seconds: a handle may run a clock tick before its time


class CallDeadline:
    """One call's deadline (loop time), its task (or its callback) and whether it fired."""

    __slots__ = ("expired", "on_due", "pending", "task", "when")

    def __init__(
        self,
        when: float,
        task: asyncio.Task[Any] | None,
        on_due: Callable[[], object] | None = None,
    ) -> None:
        self.when = when
        self.task = task
        self.on_due = on_due
        # cancellations requested before the call began
        self.pending = task.cancelling() if task is not None else 0
        self.expired = False


class CallDeadlines:
    """The deadlines of the tool calls in progress on one loop."""

    __slots__ = ("_armed", "_calls", "_handle", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._calls: dict[int, CallDeadline] = {}
        self._handle: asyncio.TimerHandle | None = None
        self._armed = math.inf

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop whose calls this keeps."""
        return self._loop

    def enter(self, when: float, task: asyncio.Task[Any]) -> CallDeadline:
        """A call in ``task`` must end by loop time ``when``."""
        entry = CallDeadline(when, task)
        self._calls[id(entry)] = entry
        if when < self._armed:
            self._arm(when)
        return entry

    def enter_callback(self, when: float, on_due: Callable[[], object]) -> CallDeadline:
        """A call without a task of its own must end by ``when``: ``on_due()`` then (once)."""
        entry = CallDeadline(when, None, on_due)
        self._calls[id(entry)] = entry
        if when < self._armed:
            self._arm(when)
        return entry

    def leave(self, entry: CallDeadline) -> bool:
        """The call ended; True when its deadline fired (that cancellation is withdrawn then).

        Idempotent: a second ``leave`` of the same call returns False.
        """
        if self._calls.pop(id(entry), None) is None or not entry.expired:
            return False
        if entry.task is not None:
            entry.task.uncancel()
        return True

    def _arm(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed = when
        self._handle = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._armed = math.inf
        now = self._loop.time() + _SLACK
        earliest = math.inf
        for entry in list(self._calls.values()):
            if entry.expired:
                continue
            if entry.when <= now:
                entry.expired = True
                if entry.task is not None:
                    entry.task.cancel()
                else:
                    assert entry.on_due is not None
                    entry.on_due()
            elif entry.when < earliest:
                earliest = entry.when
        if earliest < math.inf:
            self._arm(earliest)
