"""Concurrency permits of a run tree, re-entrant along the ancestry (spec 04 §1.4, §8.2-14).

The reference shares one FIFO semaphore by the whole tree, so a child that holds a permit while it
awaits its own children deadlocks as soon as the nesting depth reaches the capacity (capacity 1
and any nesting). Here a descendant whose ancestor holds a permit may **borrow** that permit
when no free one is left: a holder lends its permit to one descendant at a time (it is waiting
for that descendant anyway), so a chain of any depth always makes progress with capacity 1, and
the number of runs actually executing never exceeds the capacity.

Rules: a new permit is taken at once only when one is free **and** nobody waits (no barging);
otherwise the caller queues FIFO for a free permit and, when an ancestor holds one, also for that
ancestor's loan, whichever comes first (borrowing may pass strangers in the queue, which is what
breaks the cycle). A waiter whose signal aborts leaves every queue and raises the signal's reason.

Example:
    >>> import asyncio
    >>> controller = ConcurrencyController(1)
    >>> async def nested(depth: int, lineage: tuple[str, ...]) -> int:
    ...     run_id = f"run-{depth}"
    ...     async with controller.permit(run_id, lineage):
    ...         if depth == 5:
    ...             return depth
    ...         return await nested(depth + 1, (*lineage, run_id))
    >>> asyncio.run(nested(1, ()))
    5
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from typing import Final, TypeVar

from actoviq.core import AbortError, AbortSignal
from actoviq.orchestration.errors import OrchestrationConfigError

__all__ = ["DEFAULT_CAPACITY", "ConcurrencyController", "Permit"]

DEFAULT_CAPACITY: Final = 8
"""How many child runs run at once when no concurrency is configured."""
_MAX_SAFE: Final = 2**53 - 1
_T = TypeVar("_T")


class _Lease:
    """What one run holds: a permit of its own (``lender is None``) or a loan from an ancestor."""

    __slots__ = ("lend_waiters", "lender", "lent_to", "released", "run_id")

    def __init__(self, run_id: str, lender: _Lease | None) -> None:
        self.run_id = run_id
        self.lender = lender
        self.lent_to: str | None = None
        self.lend_waiters: deque[_Waiter] | None = None  # made when a descendant first waits
        self.released = False


class _Waiter:
    """One caller waiting for a permit; also its own abort listener (no closure per waiter)."""

    __slots__ = ("controller", "future", "lender", "live", "run_id")

    def __init__(
        self, controller: ConcurrencyController, run_id: str, lender: _Lease | None
    ) -> None:
        self.controller = controller
        self.run_id = run_id
        self.lender = lender
        self.live = True  # counted in ConcurrencyController.pending until settled
        self.future: asyncio.Future[_Lease] = asyncio.get_running_loop().create_future()

    def __call__(self, reason: object) -> None:
        """The waiter's signal aborted: leave the queue with the reason."""
        self.controller._reject(self, reason)  # pyright: ignore[reportPrivateUsage]


class Permit:
    """``async with controller.permit(run_id, ancestors):`` (released on exit, even on error)."""

    __slots__ = ("_ancestors", "_controller", "_lease", "_run_id", "_signal")

    def __init__(
        self,
        controller: ConcurrencyController,
        run_id: str,
        ancestors: Sequence[str],
        signal: AbortSignal | None,
    ) -> None:
        self._controller = controller
        self._run_id = run_id
        self._ancestors = ancestors
        self._signal = signal
        self._lease: _Lease | None = None

    async def __aenter__(self) -> None:
        self._lease = await self._controller._acquire(  # pyright: ignore[reportPrivateUsage]
            self._run_id, self._ancestors, self._signal
        )

    async def __aexit__(self, *exc_info: object) -> None:
        lease = self._lease
        if lease is not None:
            self._lease = None
            self._controller._release(lease)  # pyright: ignore[reportPrivateUsage]


class ConcurrencyController:
    """One run tree's permits (the reference ``SemaphoreConcurrencyController``, re-entrant).

    Args:
        capacity: permits (default 8), a positive safe integer.

    Raises:
        OrchestrationConfigError: ``capacity`` is not a positive safe integer ("positive").
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if type(capacity) is not int or not 1 <= capacity <= _MAX_SAFE:
            raise OrchestrationConfigError(
                "Concurrency capacity must be a positive safe integer.",
                details={"field": "capacity"},
            )
        self._capacity = capacity
        self._active = 0
        self._peak = 0
        self._loans = 0
        self._live = 0
        self._queue: deque[_Waiter] = deque()
        self._leases: dict[str, _Lease] = {}

    @property
    def capacity(self) -> int:
        """The number of permits."""
        return self._capacity

    @property
    def active(self) -> int:
        """Permits in use (a loan uses its lender's permit, so it is not counted twice)."""
        return self._active

    @property
    def pending(self) -> int:
        """Callers waiting for a permit or a loan."""
        return self._live

    @property
    def peak(self) -> int:
        """The most permits ever in use at once."""
        return self._peak

    @property
    def loans(self) -> int:
        """Permits currently lent to a descendant."""
        return self._loans

    def _lender_for(self, ancestors: Sequence[str]) -> _Lease | None:
        leases = self._leases
        for run_id in reversed(ancestors):
            lease = leases.get(run_id)
            if lease is not None:
                return lease
        return None

    def permit(
        self,
        run_id: str,
        ancestors: Sequence[str] = (),
        *,
        signal: AbortSignal | None = None,
    ) -> Permit:
        """Hold a permit (or an ancestor's loan) for an ``async with`` block.

        Args:
            run_id: the run that holds it (its descendants may borrow it).
            ancestors: the run's ancestors, root first.
            signal: aborting it while waiting leaves the queue and raises its reason.

        Raises:
            OrchestrationConfigError: ``run_id`` already holds a permit.
            BaseException: the signal's reason (or ``AbortError``) when it aborts first.
        """
        return Permit(self, run_id, ancestors, signal)

    async def run(
        self,
        operation: Callable[[], Awaitable[_T]],
        *,
        run_id: str,
        ancestors: Sequence[str] = (),
        signal: AbortSignal | None = None,
    ) -> _T:
        """Await ``operation()`` under a permit; the permit is released even when it raises."""
        async with self.permit(run_id, ancestors, signal=signal):
            return await operation()

    def _acquire_now(self, run_id: str, signal: AbortSignal | None) -> _Lease | None:
        """The fast path of :meth:`_acquire`: a free permit with nobody waiting, else None.

        Raises what :meth:`_acquire` raises before it would wait (aborted, already held).
        """
        if signal is not None and signal.aborted:
            signal.throw_if_aborted()
        if run_id in self._leases:
            raise OrchestrationConfigError(
                f'Run "{run_id}" already holds a concurrency permit.', details={"runId": run_id}
            )
        if self._active < self._capacity and not self._live:
            self._active += 1
            if self._active > self._peak:
                self._peak = self._active
            lease = _Lease(run_id, None)
            self._leases[run_id] = lease
            return lease
        return None

    async def _acquire(
        self, run_id: str, ancestors: Sequence[str], signal: AbortSignal | None
    ) -> _Lease:
        lease = self._acquire_now(run_id, signal)
        if lease is not None:
            return lease
        lender = self._lender_for(ancestors)
        if lender is not None and lender.lent_to is None:
            return self._lend(lender, run_id)
        waiter = _Waiter(self, run_id, lender)
        self._live += 1
        self._queue.append(waiter)
        if lender is not None:
            if lender.lend_waiters is None:
                lender.lend_waiters = deque()
            lender.lend_waiters.append(waiter)
        remove = signal.add_listener(waiter) if signal is not None else None
        try:
            return await waiter.future
        except BaseException:
            future = waiter.future
            if future.done() and not future.cancelled() and future.exception() is None:
                self._release(future.result())  # handed over as we were cancelled: pass it on
            raise
        finally:
            if waiter.live:  # cancelled while queued
                waiter.live = False
                self._live -= 1
            if remove is not None:
                remove()
            future = waiter.future
            if not future.done():
                future.cancel()
            if lender is not None or future.cancelled() or future.exception() is not None:
                # Drop what is left of the waiter. One without a lender that was handed a lease
                # was popped from the only queue it joined: nothing to scan.
                _discard(self._queue, waiter)
                if lender is not None and lender.lend_waiters is not None:
                    _discard(lender.lend_waiters, waiter)

    def _settle(self, waiter: _Waiter, lease: _Lease) -> None:
        waiter.live = False
        self._live -= 1
        waiter.future.set_result(lease)

    def _reject(self, waiter: _Waiter, reason: object) -> None:
        if waiter.future.done():
            return
        waiter.live = False
        self._live -= 1
        error = reason if isinstance(reason, BaseException) else AbortError(reason=reason)
        waiter.future.set_exception(error)

    def _register(self, lease: _Lease) -> _Lease:
        self._leases[lease.run_id] = lease
        return lease

    def _lend(self, lender: _Lease, run_id: str) -> _Lease:
        lender.lent_to = run_id
        self._loans += 1
        return self._register(_Lease(run_id, lender))

    def _release(self, lease: _Lease) -> None:
        if lease.released:
            return
        lease.released = True
        if self._leases.get(lease.run_id) is lease:
            del self._leases[lease.run_id]
        if lease.lent_to is not None:
            return  # the descendant still uses the permit; it comes back through _return_loan
        self._give_back(lease)

    def _give_back(self, lease: _Lease) -> None:
        """``lease``'s holder is done and nothing borrows from it: pass its permit on."""
        # A descendant still waiting for this lease's loan inherits the permit itself.
        waiter = _next_live(lease.lend_waiters) if lease.lend_waiters else None
        if waiter is not None:
            if lease.lender is not None:
                lease.lender.lent_to = waiter.run_id
            self._settle(waiter, self._register(_Lease(waiter.run_id, lease.lender)))
            return
        if lease.lender is not None:
            self._return_loan(lease.lender)
            return
        waiter = _next_live(self._queue) if self._queue else None
        if waiter is not None:
            self._settle(waiter, self._register(_Lease(waiter.run_id, None)))
            return
        self._active -= 1

    def _return_loan(self, lender: _Lease) -> None:
        lender.lent_to = None
        self._loans -= 1
        if lender.released:
            self._give_back(lender)
            return
        waiter = _next_live(lender.lend_waiters) if lender.lend_waiters else None
        if waiter is not None:
            self._settle(waiter, self._lend(lender, waiter.run_id))


def _next_live(queue: deque[_Waiter]) -> _Waiter | None:
    while queue:
        waiter = queue.popleft()
        if not waiter.future.done():
            return waiter
    return None


def _discard(queue: deque[_Waiter], waiter: _Waiter) -> None:
    with suppress(ValueError):
        queue.remove(waiter)
