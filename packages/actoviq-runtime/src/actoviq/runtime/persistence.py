"""One run's checkpoint writes: the claim, fenced saves, the lease heartbeat (decision D10).

With a :class:`~actoviq.runtime.stores.ClaimingRunCheckpointStore` every execution holds a lease:
a resumed run claims before anything else happens (:meth:`RunPersistence.claim`), a fresh run with
its first save; every later save passes the lease (fenced: a run taken over cannot write again),
a terminal save releases it, and :meth:`RunPersistence.heartbeat` renews it while the run
executes. A store without claims gets plain saves and, before a resume, a ``load`` and compare
(:func:`~actoviq.runtime.stores.claim_refusal`), which is not atomic across processes.

Writes of one run are serialised (a save and a renewal never interleave on the record).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar, cast

from actoviq.core import JsonObject
from actoviq.runtime.errors import RunClaimLostError, RunStateStaleError
from actoviq.runtime.stores import (
    ClaimingRunCheckpointStore,
    RunCheckpointStore,
    RunLease,
    claim_refusal,
    new_lease_owner,
)

__all__ = ["RunPersistence"]

_T = TypeVar("_T")
_MIN_BEAT: Final = 0.001
_CLAIMING_TYPES: dict[type, bool] = {}  # store class -> its methods make it a claiming store


def _claims(store: object) -> bool:
    """``isinstance(store, ClaimingRunCheckpointStore)``, answered once per store class.

    A protocol ``isinstance`` inspects every member on each call (tens of microseconds, paid
    by every run); a class that has the methods is remembered, and an instance whose class
    lacks them (methods set on the instance) still gets the full check.
    """
    kind = type(store)
    known = _CLAIMING_TYPES.get(kind)
    if known is None:
        known = _CLAIMING_TYPES[kind] = issubclass(kind, ClaimingRunCheckpointStore)
    return known or isinstance(store, ClaimingRunCheckpointStore)


class RunPersistence:
    """The checkpoint side of one execution (internal; owned by ``RunExecution``).

    Args:
        store: the runtime's checkpoint store (None: nothing is persisted).
        run_id: the run.
        lease_ms: the lease duration of a claiming store.
        hook_timeout: seconds a store call may take (the run's hook timeout). A number rather
            than a callback into the execution, so a finished run holds no reference cycle.
    """

    __slots__ = (
        "_hook_timeout",
        "_lock",
        "blocked",
        "claiming",
        "heartbeat_error",
        "last_saved",
        "lease",
        "released",
        "run_id",
        "store",
        "taken",
    )

    def __init__(
        self,
        store: RunCheckpointStore | None,
        *,
        run_id: str,
        lease_ms: int,
        hook_timeout: float,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.claiming: ClaimingRunCheckpointStore | None = (
            None if store is None or not _claims(store) else cast(ClaimingRunCheckpointStore, store)
        )
        self.lease: RunLease | None = (
            RunLease(owner=new_lease_owner(), duration_ms=lease_ms)
            if self.claiming is not None
            else None
        )
        self._hook_timeout = hook_timeout
        self._lock = asyncio.Lock()
        self.taken = False  # the execution holds the run (claimed, not yet released)
        self.released = False  # a terminal save released the claim
        # Set once the run may no longer write: its claim was lost, or a fresh run's id is held
        # by a live execution elsewhere. Every later save raises it without touching the store.
        self.blocked: RunStateStaleError | None = None
        self.last_saved: JsonObject | None = None  # the newest state known to be durable
        self.heartbeat_error: BaseException | None = None

    async def _call(self, awaitable: Awaitable[_T]) -> _T:
        async with asyncio.timeout(self._hook_timeout):
            return await awaitable

    async def claim(self, state: JsonObject, expected: JsonObject) -> None:
        """Take the run for a resumed execution before it does anything.

        Raises:
            RunStateStaleError: the state is stale, the run completed or another execution holds
                it (nothing was written).
        """
        if self.claiming is not None:
            assert self.lease is not None
            async with self._lock:
                await self._call(self.claiming.claim(state, expected=expected, lease=self.lease))
                self.taken = True
                self.last_saved = state
            return
        store = self.store
        if store is not None:
            async with self._lock:
                stored = await self._call(store.load(self.run_id))
                refusal = claim_refusal(self.run_id, stored, expected=expected)
                if refusal is not None:
                    raise refusal
                await self._call(store.save(state))
                self.last_saved = state

    async def save(self, state: JsonObject) -> None:
        """Persist ``state`` (claiming on a fresh run's first save; fenced afterwards).

        Raises:
            RunClaimLostError: another execution took the run over (nothing was written).
            RunStateStaleError: a fresh run's id is held by a live execution elsewhere (both are
                kept in :attr:`blocked`: later saves raise them again without writing).
        """
        store = self.store
        if store is None or self.released:
            return
        if self.blocked is not None:
            raise self.blocked
        running = state.get("status") == "running"
        async with self._lock:
            claiming = self.claiming
            try:
                if claiming is None:
                    await self._call(store.save(state))
                elif not self.taken:  # a fresh run's first save claims the run
                    assert self.lease is not None
                    await self._call(claiming.claim(state, expected=None, lease=self.lease))
                    self.taken = True
                else:
                    await self._call(claiming.save(state, lease=self.lease))
            except RunStateStaleError as error:
                self.blocked = error
                raise
            self.last_saved = state
            if not running and claiming is not None:
                self.released = True
                self.taken = False

    async def renew(self) -> None:
        """Extend the lease once (no-op unless the execution holds the run).

        Raises:
            RunClaimLostError: the run was taken over.
        """
        claiming = self.claiming
        if claiming is None or not self.taken or self.blocked is not None:
            return
        assert self.lease is not None
        async with self._lock:
            if not self.taken:
                return
            try:
                await self._call(claiming.renew(self.run_id, lease=self.lease))
            except RunClaimLostError as error:
                self.blocked = error
                raise

    async def heartbeat(self, on_lost: Callable[[RunClaimLostError], None]) -> None:
        """Renew the lease every third of its duration until cancelled.

        A lost claim calls ``on_lost`` (the run stops) and ends the heartbeat; any other failure
        is kept in :attr:`heartbeat_error` and retried at the next beat (the fenced saves decide).
        """
        if self.lease is None:
            return
        interval = max(_MIN_BEAT, self.lease.duration_ms / 3000.0)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.renew()
            except RunClaimLostError as error:
                on_lost(error)
                return
            except Exception as error:  # an outage: the next beat or the next save decides
                self.heartbeat_error = error
