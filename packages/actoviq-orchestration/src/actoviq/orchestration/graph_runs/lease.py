"""``RunLease``: a durable graph run's lease: heartbeat, fenced run writes, loss detection."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from actoviq.core import AbortController, iso_now
from actoviq.orchestration.graph_runs.errors import (
    WorkflowRunCancelledError,
    WorkflowRunError,
    WorkflowRunLeaseLostError,
)
from actoviq.orchestration.graph_runs.records import WorkflowRunRecord
from actoviq.runtime.stores import StorageError, WorkflowRunStore

__all__ = ["RunLease"]


class RunLease:
    """Holds one worker's lease on one run; :attr:`lost` aborts when it is taken or cancelled.

    Args:
        store: the run store.
        tenant_id: the run's tenant.
        record: the ``running`` record this worker wrote (its revision is the fence).
        lease_ms: the lease length (renewed every third).
        clock: the lease clock.
    """

    def __init__(
        self,
        store: WorkflowRunStore,
        *,
        tenant_id: str,
        record: WorkflowRunRecord,
        lease_ms: int,
        clock: Callable[[], Awaitable[int]],
    ) -> None:
        self._store = store
        self._tenant = tenant_id
        self.record = record
        self._lease_ms = lease_ms
        self._clock = clock
        self._lock = asyncio.Lock()
        self._stopped = asyncio.Event()
        self._controller = AbortController()
        self.lost = self._controller.signal

    @property
    def owner(self) -> str:
        """The lease owner this worker writes as."""
        assert self.record.lease_owner is not None
        return self.record.lease_owner

    async def _cas(self, nxt: WorkflowRunRecord) -> bool:
        done = await self._store.compare_and_set_run(
            tenant_id=self._tenant,
            run_id=self.record.run_id,
            expected_revision=self.record.revision,
            record=nxt.to_json(),
        )
        if done:
            self.record = nxt
        return done

    async def _lose(self) -> None:
        row = await self._store.get_run(tenant_id=self._tenant, run_id=self.record.run_id)
        run_id = self.record.run_id
        error: WorkflowRunError
        if row is not None and row.status == "cancelled":
            error = WorkflowRunCancelledError(
                f'Workflow run "{run_id}" was cancelled.', run_id=run_id
            )
        else:
            error = WorkflowRunLeaseLostError(
                f'Workflow run "{run_id}" was taken over by another worker; this worker stopped '
                "and wrote nothing more.",
                run_id=run_id,
            )
        self._stopped.set()
        self._controller.abort(error)

    def lost_error(self) -> WorkflowRunError | None:
        """Why the lease was lost (None while held)."""
        reason = self.lost.reason
        return reason if isinstance(reason, WorkflowRunError) else None

    def fail(self, error: WorkflowRunError) -> None:
        """Mark the lease lost (a fenced node write found another owner)."""
        self._stopped.set()
        self._controller.abort(error)

    async def keep(self) -> None:
        """Renew every third of the lease until :meth:`stop` or loss."""
        interval = max(self._lease_ms // 3, 1) / 1000.0
        while not self._stopped.is_set():
            try:
                await asyncio.wait_for(self._stopped.wait(), timeout=interval)
            except TimeoutError:
                await self.renew()

    async def renew(self) -> None:
        """Extend the lease now (loss aborts :attr:`lost`)."""
        async with self._lock:
            if self._stopped.is_set():
                return
            try:
                now = await self._clock()
                renewed = self.record.next(
                    lease_expires_at=now + self._lease_ms, heartbeat_at=now, updated_at=iso_now()
                )
                if not await self._cas(renewed):
                    await self._lose()
            except StorageError:
                return  # unreachable store: try again at the next beat

    def stop(self) -> None:
        """Stop renewing."""
        self._stopped.set()

    async def write(self, **changes: Any) -> WorkflowRunRecord | None:
        """Write the run's next state with the lease cleared (None: the lease was lost)."""
        self.stop()
        async with self._lock:
            if self.lost.aborted:
                return None
            nxt = self.record.next(
                lease_owner=None,
                lease_expires_at=None,
                heartbeat_at=None,
                updated_at=iso_now(),
                **changes,
            )
            if await self._cas(nxt):
                return nxt
            await self._lose()
            return None

    async def release(self) -> None:
        """Give the lease up without settling: it expires now (a takeover may follow at once)."""
        self.stop()
        async with self._lock:
            if self.lost.aborted:
                return
            now = await self._clock()
            await self._cas(self.record.next(lease_expires_at=now, updated_at=iso_now()))
