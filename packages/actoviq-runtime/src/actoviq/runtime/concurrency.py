"""Process-local run scheduling: same-session serialisation and the run permit gate (03 §1.13).

Runs that share ``(tenant, session)`` execute strictly one after another in arrival order; the
session lock is taken *before* a permit, so many queued turns of one busy session never hold every
permit (03 §8.2 S5). Both are process-local: multi-process deployments need the store's CAS (and a
lease) on top.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from contextvars import ContextVar

__all__ = ["RunGate", "SessionLocks", "held_session_owner"]


class _Hold:
    """One held session lock, visible to everything the holding run starts (contextvars)."""

    __slots__ = ("active", "key", "locks", "run_id")

    def __init__(self, locks: SessionLocks, key: tuple[str, str], run_id: str) -> None:
        self.locks = locks
        self.key = key
        self.run_id = run_id
        self.active = True


_HELD: ContextVar[tuple[_Hold, ...]] = ContextVar("actoviq_held_sessions", default=())


def held_session_owner(locks: SessionLocks, tenant_id: str, session_id: str) -> str | None:
    """The run that holds this session's lock *and* started the current task, if any.

    A run started from inside a run (a tool, middleware, a handoff) that needs the session its
    caller holds would wait forever: the caller waits for it. The runtime refuses such a run.
    """
    key = (tenant_id, session_id)
    for hold in _HELD.get():
        if hold.active and hold.locks is locks and hold.key == key:
            return hold.run_id
    return None


class SessionLocks:
    """FIFO locks per ``(tenant, session)`` key, deleted when nobody holds or waits for them."""

    __slots__ = ("_locks",)

    def __init__(self) -> None:
        self._locks: dict[tuple[str, str], tuple[asyncio.Lock, list[int]]] = {}

    def __len__(self) -> int:
        return len(self._locks)

    @asynccontextmanager
    async def hold(self, tenant_id: str, session_id: str, run_id: str = "") -> AsyncGenerator[None]:
        """Hold the session's lock for the block (waiters are served in arrival order).

        Tasks started inside the block see the hold (:func:`held_session_owner`) while it lasts.
        """
        key = (tenant_id, session_id)
        entry = self._locks.get(key)
        if entry is None:
            entry = (asyncio.Lock(), [0])
            self._locks[key] = entry
        lock, users = entry
        users[0] += 1
        try:
            async with lock:
                hold = _Hold(self, key, run_id)
                token = _HELD.set((*_HELD.get(), hold))
                try:
                    yield
                finally:
                    hold.active = False
                    _HELD.reset(token)
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._locks[key]


class RunGate:
    """At most ``limit`` concurrent runs; waiters are served FIFO; cancellation leaves the queue."""

    __slots__ = ("_active", "_limit", "_waiters")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._active = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def active(self) -> int:
        """Permits in use."""
        return self._active

    @property
    def waiting(self) -> int:
        """Runs queued for a permit."""
        return len(self._waiters)

    async def acquire(self) -> None:
        """Take a permit, waiting in FIFO order (cancellation removes the waiter)."""
        if self._active < self._limit and not self._waiters:
            self._active += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the permit was handed to us as we were cancelled: pass it on
            else:
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        """Return a permit, handing it directly to the oldest live waiter."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the permit moves to the waiter: _active unchanged
                return
        self._active -= 1
