"""``LeaseKeeper``: one running child's lease: heartbeat, fenced writes, loss detection.

A worker that takes a child writes ``running`` with ``leaseOwner`` and ``leaseExpiresAt``. While
the child runs, :meth:`LeaseKeeper.keep` renews the lease every third of its length with a
compare-and-set on the record's revision (the fencing token, spec 04 §8.1.3). Every write of the
execution goes through the keeper and is fenced the same way, so once another worker took the
child over (or a human cancelled it) nothing this worker writes lands: the failed CAS is how it
learns, and ``on_lost`` aborts its run at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from actoviq.core import iso_now
from actoviq.orchestration.background.errors import (
    DurableChildCancelledError,
    DurableChildError,
    DurableChildLeaseLostError,
)
from actoviq.orchestration.background.records import DurableChildRecord
from actoviq.runtime.stores import StorageError

__all__ = ["LeaseKeeper", "RecordIO"]


class RecordIO(Protocol):
    """The record operations a keeper needs (the engine provides them)."""

    async def cas(self, current: DurableChildRecord, next: DurableChildRecord) -> bool:
        """Compare-and-set ``next`` over ``current`` (False: the revision moved)."""
        ...

    async def load(self, child_id: str) -> DurableChildRecord | None:
        """The current record, or None."""
        ...

    async def now_ms(self) -> int:
        """The lease clock."""
        ...


class LeaseKeeper:
    """Holds the lease of one execution of one child.

    Args:
        io: record access.
        record: the ``running`` record this worker just wrote (its revision is the fence).
        lease_ms: the lease length.
        on_lost: called once (synchronously) when the lease is lost or the child cancelled.
    """

    def __init__(
        self,
        io: RecordIO,
        record: DurableChildRecord,
        *,
        lease_ms: int,
        on_lost: Callable[[DurableChildError], object],
    ) -> None:
        self._io = io
        self.record = record
        self._lease_ms = lease_ms
        self._interval = max(lease_ms // 3, 1) / 1000.0
        self._on_lost = on_lost
        self._lock = asyncio.Lock()
        self._stopped = asyncio.Event()
        self.lost: DurableChildError | None = None

    def stop(self) -> None:
        """Stop renewing (the execution is settling)."""
        self._stopped.set()

    async def keep(self) -> None:
        """Renew every third of the lease until :meth:`stop` or loss."""
        while not self._stopped.is_set():
            try:
                await asyncio.wait_for(self._stopped.wait(), timeout=self._interval)
            except TimeoutError:
                await self.renew()
            else:
                return

    async def renew(self) -> bool:
        """Extend the lease now; False when it was lost (``on_lost`` has been called)."""
        async with self._lock:
            if self._stopped.is_set() or self.lost is not None:
                return self.lost is None
            try:
                now = await self._io.now_ms()
                renewed = self.record.next(
                    lease_expires_at=now + self._lease_ms, heartbeat_at=now, updated_at=iso_now()
                )
                if await self._io.cas(self.record, renewed):
                    self.record = renewed
                    return True
                await self._lose()
            except StorageError:
                # The store is unreachable right now: try again at the next beat. If the lease
                # expires meanwhile another worker may take over; our next write then fails.
                return True
            return False

    async def _lose(self) -> None:
        current = await self._io.load(self.record.child_id)
        child_id = self.record.child_id
        if current is not None and current.status == "cancelled":
            message = current.error.message if current.error is not None else None
            lost: DurableChildError = DurableChildCancelledError(child_id, reason=message)
        else:
            lost = DurableChildLeaseLostError(
                f'Durable child "{child_id}" was taken over by another worker; this worker '
                "stopped its run and wrote nothing.",
                child_id=child_id,
                details={
                    "leaseOwner": None if current is None else current.lease_owner,
                    "revision": None if current is None else current.revision,
                },
            )
        self.lost = lost
        self._stopped.set()
        self._on_lost(lost)

    async def write(self, **changes: Any) -> DurableChildRecord | None:
        """Write the execution's next state, fenced on the lease (None: the lease was lost)."""
        async with self._lock:
            if self.lost is not None:
                return None
            nxt = self.record.next(updated_at=iso_now(), **changes)
            if await self._io.cas(self.record, nxt):
                self.record = nxt
                return nxt
            await self._lose()
            return None

    async def finish(self, **changes: Any) -> DurableChildRecord | None:
        """Stop renewing and write the settled state with the lease cleared (None: lost)."""
        self.stop()
        return await self.write(
            lease_owner=None, lease_expires_at=None, heartbeat_at=None, **changes
        )

    async def release(self) -> bool:
        """Give the lease up without settling (shutdown).

        The lease expires now, so another worker can apply the takeover rules at once; later
        writes of this execution are refused.
        """
        self.stop()
        async with self._lock:
            if self.lost is not None:
                return False
            now = await self._io.now_ms()
            nxt = self.record.next(lease_expires_at=now, updated_at=iso_now())
            done = await self._io.cas(self.record, nxt)
            if done:
                self.record = nxt
            self.lost = DurableChildLeaseLostError(
                f'Durable child "{self.record.child_id}" was released: its worker shut down.',
                child_id=self.record.child_id,
            )
        self._on_lost(self.lost)
        return done
