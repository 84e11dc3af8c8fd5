"""One timer per run for the run deadline and the model-call timeout (issue 21).

A model call used to enter an ``asyncio.timeout`` scope: a scope object, a timer handle pushed on
the loop's heap and cancelled again, per call (about 6 % of a one-turn run's instructions), and
the cancelled handles pile up in the heap until the loop sweeps them. :class:`RunTimer` keeps the
run's one timer instead and re-arms it lazily: it is armed no later than the earliest moment
anything can be due (the run deadline, or now plus the model-call timeout, which no call starting
later can precede); when it fires it checks what is due, acts, and re-arms at the next such
moment. A model call then only records its own deadline and clears it.

Same semantics as the scope it replaces: an expired call's task is cancelled, and the call turns
that cancellation into :class:`~actoviq.providers.ModelCallTimeoutError` only when no other
cancellation is pending on top of it (``Task.uncancel``), exactly as ``asyncio.timeout`` does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

__all__ = ["RunTimer"]

_SLACK = 1e-6  # seconds: a handle may run a clock tick before its time


class RunTimer:
    """The run deadline (``on_deadline`` once) and at most one model-call timeout at a time.

    Args:
        loop: the run's loop.
        run_delay: seconds until the run deadline (from now).
        call_timeout: the model-call timeout in seconds.
        on_deadline: called once when the run deadline passes.
    """

    __slots__ = (
        "_call_deadline",
        "_call_task",
        "_call_timeout",
        "_handle",
        "_loop",
        "_on_deadline",
        "_run_deadline",
        "expired",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        run_delay: float,
        call_timeout: float,
        on_deadline: Callable[[], None],
    ) -> None:
        now = loop.time()
        self._loop = loop
        self._run_deadline = now + max(0.0, run_delay)
        self._call_timeout = call_timeout
        self._call_deadline: float | None = None
        self._call_task: asyncio.Task[Any] | None = None
        self._on_deadline = on_deadline
        self.expired = False  # the current call's task was cancelled for its timeout
        self._handle: asyncio.TimerHandle | None = loop.call_at(
            min(self._run_deadline, now + call_timeout), self._fire
        )

    @property
    def busy(self) -> bool:
        """True while a model call's timeout is being kept."""
        return self._call_task is not None

    def start_call(self, task: asyncio.Task[Any]) -> None:
        """A model call starts in ``task``: it times out ``call_timeout`` seconds from now."""
        self._call_task = task
        self._call_deadline = self._loop.time() + self._call_timeout
        self.expired = False

    def end_call(self) -> bool:
        """The call ended; True when its timeout had fired (its cancellation is withdrawn)."""
        task = self._call_task
        self._call_task = None
        self._call_deadline = None
        if not self.expired:
            return False
        self.expired = False
        assert task is not None
        task.uncancel()
        return True

    def cancel(self) -> None:
        """The run ended: nothing fires any more."""
        handle = self._handle
        if handle is not None:
            handle.cancel()
            self._handle = None

    def _fire(self) -> None:
        now = self._loop.time() + _SLACK
        if now >= self._run_deadline:
            self._handle = None
            self._on_deadline()
            return
        call = self._call_deadline
        task = self._call_task
        if call is not None and task is not None and now >= call and not self.expired:
            self.expired = True
            self._call_deadline = None
            task.cancel()
            call = None
        when = min(self._run_deadline, call if call is not None else now + self._call_timeout)
        self._handle = self._loop.call_at(when, self._fire)
