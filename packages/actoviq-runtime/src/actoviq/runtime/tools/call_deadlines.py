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
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

__all__ = ["CallDeadline", "CallDeadlines"]

_SLACK = 1e-6  # seconds: a handle may run a clock tick before its time


class CallDeadline:
    """One call's deadline (loop time), its task and whether it fired."""

    __slots__ = ("expired", "pending", "task", "when")

    def __init__(self, when: float, task: asyncio.Task[Any]) -> None:
        self.when = when
        self.task = task
        self.pending = task.cancelling()  # cancellations requested before the call began
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

    def leave(self, entry: CallDeadline) -> bool:
        """The call ended; True when its deadline fired (that cancellation is withdrawn then).

        Idempotent: a second ``leave`` of the same call returns False.
        """
        if self._calls.pop(id(entry), None) is None or not entry.expired:
            return False
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
                entry.task.cancel()
            elif entry.when < earliest:
                earliest = entry.when
        if earliest < math.inf:
            self._arm(earliest)
