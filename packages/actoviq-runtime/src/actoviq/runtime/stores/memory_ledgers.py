"""In-memory budget ledger store (tests, single-process scripts).

Every operation runs without awaiting, so it is atomic on the event loop: the same guarded
updates as the SQL backend, with no persistence. Everything returned is a copy.
"""

from __future__ import annotations

import attrs

from actoviq.core import JsonObject, iso_now
from actoviq.runtime.stores.errors import (
    StorageConflictError,
    StorageDataError,
    StorageNotFoundError,
)
from actoviq.runtime.stores.ledgers import (
    BudgetLedgerLimits,
    BudgetLedgerRecord,
    BudgetLedgerUpdate,
    BudgetReservationRow,
    check_metadata,
    check_reservation_id,
    claim_fits,
    ledger_resource,
    require_amount,
    require_cost,
    reserve_fits,
    validate_ledger_limits,
)
from actoviq.runtime.stores.validation import require_json_object, require_key

__all__ = ["InMemoryBudgetLedgerStore"]


def _copy(record: BudgetLedgerRecord) -> BudgetLedgerRecord:
    return attrs.evolve(record, metadata=require_json_object(record.metadata, "metadata"))


class InMemoryBudgetLedgerStore:
    """A :class:`~actoviq.runtime.stores.ledgers.BudgetLedgerStore` held in dicts."""

    def __init__(self) -> None:
        self._ledgers: dict[tuple[str, str], BudgetLedgerRecord] = {}
        self._reservations: dict[tuple[str, str], dict[str, BudgetReservationRow]] = {}

    def _key(self, tenant_id: str, ledger_id: str) -> tuple[str, str]:
        return require_key(tenant_id, "tenantId"), require_key(ledger_id, "ledgerId")

    def _current(self, key: tuple[str, str]) -> BudgetLedgerRecord:
        record = self._ledgers.get(key)
        if record is None:
            raise StorageNotFoundError(ledger_resource(*key))
        return record

    def _write(
        self,
        key: tuple[str, str],
        record: BudgetLedgerRecord,
        updated_at: str | None,
        **changes: object,
    ) -> BudgetLedgerRecord:
        stored = attrs.evolve(
            record,
            revision=record.revision + 1,
            updated_at=updated_at or iso_now(),
            **changes,
        )
        self._ledgers[key] = stored
        return stored

    async def create(
        self,
        *,
        tenant_id: str,
        ledger_id: str,
        limits: BudgetLedgerLimits,
        metadata: JsonObject | None = None,
        created_at: str | None = None,
    ) -> BudgetLedgerRecord:
        """See :meth:`BudgetLedgerStore.create`."""
        key = self._key(tenant_id, ledger_id)
        checked = validate_ledger_limits(limits)
        meta = check_metadata(metadata)
        stamp = created_at if created_at is not None else iso_now()
        require_key(stamp, "createdAt")
        existing = self._ledgers.get(key)
        if existing is not None:
            raise StorageConflictError(
                ledger_resource(*key), expected_revision=None, actual_revision=existing.revision
            )
        record = BudgetLedgerRecord(
            tenant_id=key[0],
            ledger_id=key[1],
            revision=0,
            limits=checked,
            child_runs_started=0,
            total_tokens_used=0,
            cost_usd_used=0.0,
            reserved_tokens=0,
            reserved_cost_usd=0.0,
            metadata=meta,
            created_at=stamp,
            updated_at=stamp,
        )
        self._ledgers[key] = record
        self._reservations[key] = {}
        return _copy(record)

    async def get(self, *, tenant_id: str, ledger_id: str) -> BudgetLedgerRecord | None:
        """See :meth:`BudgetLedgerStore.get`."""
        record = self._ledgers.get(self._key(tenant_id, ledger_id))
        return None if record is None else _copy(record)

    async def claim_child(
        self, *, tenant_id: str, ledger_id: str, updated_at: str | None = None
    ) -> BudgetLedgerUpdate:
        """See :meth:`BudgetLedgerStore.claim_child`."""
        key = self._key(tenant_id, ledger_id)
        record = self._current(key)
        if not claim_fits(record):
            return BudgetLedgerUpdate(applied=False, record=_copy(record))
        stored = self._write(
            key, record, updated_at, child_runs_started=record.child_runs_started + 1
        )
        return BudgetLedgerUpdate(applied=True, record=_copy(stored))

    async def reserve(
        self,
        *,
        tenant_id: str,
        ledger_id: str,
        reservation_id: str,
        tokens: int,
        cost_usd: float,
        expires_at: int | None = None,
        updated_at: str | None = None,
    ) -> BudgetLedgerUpdate:
        """See :meth:`BudgetLedgerStore.reserve`."""
        key = self._key(tenant_id, ledger_id)
        rid = check_reservation_id(reservation_id)
        amount = require_amount(tokens, "tokens")
        cost = require_cost(cost_usd, "costUsd")
        expiry = None if expires_at is None else require_amount(expires_at, "expiresAt")
        record = self._current(key)
        held = self._reservations[key].get(rid)
        if held is not None:
            if (held.tokens, held.cost_usd) != (amount, cost):
                raise StorageDataError(f"Reservation {rid} is already held with other amounts.")
            return BudgetLedgerUpdate(applied=True, record=_copy(record))
        if not reserve_fits(record, amount, cost):
            return BudgetLedgerUpdate(applied=False, record=_copy(record))
        stamp = updated_at or iso_now()
        self._reservations[key][rid] = BudgetReservationRow(
            reservation_id=rid, tokens=amount, cost_usd=cost, expires_at=expiry, created_at=stamp
        )
        stored = self._write(
            key,
            record,
            stamp,
            reserved_tokens=record.reserved_tokens + amount,
            reserved_cost_usd=record.reserved_cost_usd + cost,
        )
        return BudgetLedgerUpdate(applied=True, record=_copy(stored))

    def _drop(
        self, key: tuple[str, str], record: BudgetLedgerRecord, rids: list[str], stamp: str | None
    ) -> BudgetLedgerRecord:
        held = self._reservations[key]
        dropped = [held.pop(rid) for rid in rids if rid in held]
        if not dropped:
            return record
        return self._write(
            key,
            record,
            stamp,
            reserved_tokens=max(0, record.reserved_tokens - sum(r.tokens for r in dropped)),
            reserved_cost_usd=max(0.0, record.reserved_cost_usd - sum(r.cost_usd for r in dropped)),
        )

    async def release(
        self,
        *,
        tenant_id: str,
        ledger_id: str,
        reservation_id: str,
        updated_at: str | None = None,
    ) -> BudgetLedgerRecord:
        """See :meth:`BudgetLedgerStore.release`."""
        key = self._key(tenant_id, ledger_id)
        rid = check_reservation_id(reservation_id)
        record = self._current(key)
        return _copy(self._drop(key, record, [rid], updated_at))

    async def record_usage(
        self,
        *,
        tenant_id: str,
        ledger_id: str,
        tokens: int,
        cost_usd: float,
        reservation_id: str | None = None,
        updated_at: str | None = None,
    ) -> BudgetLedgerRecord:
        """See :meth:`BudgetLedgerStore.record_usage`."""
        key = self._key(tenant_id, ledger_id)
        amount = require_amount(tokens, "tokens")
        cost = require_cost(cost_usd, "costUsd")
        rid = None if reservation_id is None else check_reservation_id(reservation_id)
        record = self._current(key)
        held = self._reservations[key].pop(rid, None) if rid is not None else None
        stored = self._write(
            key,
            record,
            updated_at,
            total_tokens_used=record.total_tokens_used + amount,
            cost_usd_used=record.cost_usd_used + cost,
            reserved_tokens=max(0, record.reserved_tokens - (held.tokens if held else 0)),
            reserved_cost_usd=max(0.0, record.reserved_cost_usd - (held.cost_usd if held else 0.0)),
        )
        return _copy(stored)

    async def list_reservations(
        self, *, tenant_id: str, ledger_id: str
    ) -> list[BudgetReservationRow]:
        """See :meth:`BudgetLedgerStore.list_reservations`."""
        key = self._key(tenant_id, ledger_id)
        self._current(key)
        rows = list(self._reservations[key].values())
        rows.sort(key=lambda r: (r.created_at, r.reservation_id))
        return rows

    async def release_expired(
        self, *, tenant_id: str, ledger_id: str, now_ms: int, updated_at: str | None = None
    ) -> BudgetLedgerRecord:
        """See :meth:`BudgetLedgerStore.release_expired`."""
        key = self._key(tenant_id, ledger_id)
        now = require_amount(now_ms, "nowMs")
        record = self._current(key)
        expired = [
            r.reservation_id
            for r in self._reservations[key].values()
            if r.expires_at is not None and r.expires_at <= now
        ]
        return _copy(self._drop(key, record, expired, updated_at))

    async def delete(self, *, tenant_id: str, ledger_id: str) -> bool:
        """See :meth:`BudgetLedgerStore.delete`."""
        key = self._key(tenant_id, ledger_id)
        self._reservations.pop(key, None)
        return self._ledgers.pop(key, None) is not None

    async def aclose(self) -> None:
        """Nothing to release."""
