"""``StoreRecords``: one tenant's child records in a ``DurableChildStore``, and the lease clock.

The record access :class:`~actoviq.orchestration.background.store_engine.StoreBackgroundEngine`
is built on; it is also the :class:`~actoviq.orchestration.background.leases.RecordIO` its
executor and lease keepers read and write through.
"""

from __future__ import annotations

import inspect

from actoviq.orchestration.background.engine import Clock
from actoviq.orchestration.background.errors import DurableChildNotFoundError
from actoviq.orchestration.background.records import DurableChildRecord
from actoviq.runtime.stores import DurableChildStore, StoreClock, wall_clock_ms

__all__ = ["StoreRecords"]


class StoreRecords:
    """The records of one tenant in a store, under compare-and-set.

    Args:
        store: where the records live (``SqliteStorage.children``, an in-memory store, ...).
        tenant_id: the tenant of the records.
        clock: epoch-ms lease clock (default: the store's :class:`StoreClock`, else the wall).
    """

    def __init__(
        self, store: DurableChildStore, *, tenant_id: str = "default", clock: Clock | None = None
    ) -> None:
        self._store = store
        self._tenant = tenant_id
        self._clock: Clock = clock or (
            store.clock_ms if isinstance(store, StoreClock) else wall_clock_ms
        )

    @property
    def store(self) -> DurableChildStore:
        """The store the records live in."""
        return self._store

    async def now_ms(self) -> int:
        """The lease clock (epoch ms)."""
        value = self._clock()
        if inspect.isawaitable(value):
            value = await value
        return int(value)

    async def load(self, child_id: str) -> DurableChildRecord | None:
        """The record, or None."""
        row = await self._store.get(tenant_id=self._tenant, child_id=child_id)
        return None if row is None else DurableChildRecord.from_json(row.record)

    async def cas(self, current: DurableChildRecord, next: DurableChildRecord) -> bool:
        """Compare-and-set ``next`` over ``current``'s revision."""
        return await self._store.compare_and_set(
            tenant_id=self._tenant,
            child_id=current.child_id,
            expected_revision=current.revision,
            record=next.to_json(),
        )

    async def query(self, child_id: str) -> DurableChildRecord:
        """The child's record.

        Raises:
            DurableChildNotFoundError: no record of that id in this tenant.
        """
        record = await self.load(child_id)
        if record is None:
            raise DurableChildNotFoundError(child_id)
        return record

    async def list_children(
        self,
        *,
        parent_run_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[DurableChildRecord]:
        """Records ordered by ``createdAt`` then id (filtered by parent run and status)."""
        rows = await self._store.list_children(
            tenant_id=self._tenant, parent_run_id=parent_run_id, status=status, limit=limit
        )
        return [DurableChildRecord.from_json(row.record) for row in rows]
