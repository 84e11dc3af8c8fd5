"""SQL budget ledger store: one row per run tree, every change one guarded ``UPDATE``.

``claim_child`` and ``reserve`` are ``UPDATE ... WHERE <counter> + :n <= <limit>`` statements: the
database applies them atomically (SQLite: one ``BEGIN IMMEDIATE`` writer at a time; PostgreSQL:
the row lock, with the ``WHERE`` re-checked against the newest row version), so concurrent workers
can never overshoot a limit together. ``record_usage`` adds unconditionally (usage is never lost).
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import Row, and_, case, delete, false, insert, literal, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from actoviq.core import JsonObject, iso_now
from actoviq.runtime.stores import (
    BudgetLedgerLimits,
    BudgetLedgerRecord,
    BudgetLedgerUpdate,
    BudgetReservationRow,
    StorageConflictError,
    StorageDataError,
    StorageNotFoundError,
)
from actoviq.runtime.stores.ledgers import (
    check_metadata,
    check_reservation_id,
    ledger_resource,
    require_amount,
    require_cost,
    validate_ledger_limits,
)
from actoviq.runtime.stores.validation import decode_json_object, dump_json, require_key
from actoviq.storage.sqlite._engine import Database
from actoviq.storage.sqlite._keyed_rows import stored_int, stored_text
from actoviq.storage.sqlite._tables import budget_ledgers as L
from actoviq.storage.sqlite._tables import budget_reservations as R

__all__ = ["SqlBudgetLedgerStore"]


def _stored_cost(value: object, field: str) -> float:
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:  # type: ignore[arg-type]
        raise StorageDataError(f"stored {field} must be a finite, non-negative number")
    return float(value)  # type: ignore[arg-type]


def _opt_int(value: object, field: str) -> int | None:
    return None if value is None else stored_int(value, field)


def _decode(row: Row[Any]) -> BudgetLedgerRecord:
    return BudgetLedgerRecord(
        tenant_id=stored_text(row.tenant_id, "tenant_id"),
        ledger_id=stored_text(row.ledger_id, "ledger_id"),
        revision=stored_int(row.revision, "revision"),
        limits=BudgetLedgerLimits(
            max_child_runs=_opt_int(row.max_child_runs, "max_child_runs"),
            max_depth=_opt_int(row.max_depth, "max_depth"),
            max_total_tokens=_opt_int(row.max_total_tokens, "max_total_tokens"),
            max_cost_usd=None
            if row.max_cost_usd is None
            else _stored_cost(row.max_cost_usd, "max_cost_usd"),
        ),
        child_runs_started=stored_int(row.child_runs_started, "child_runs_started"),
        total_tokens_used=stored_int(row.total_tokens_used, "total_tokens_used"),
        cost_usd_used=_stored_cost(row.cost_usd_used, "cost_usd_used"),
        reserved_tokens=stored_int(row.reserved_tokens, "reserved_tokens"),
        reserved_cost_usd=_stored_cost(row.reserved_cost_usd, "reserved_cost_usd"),
        metadata=decode_json_object(row.metadata_json, "metadata_json"),
        created_at=stored_text(row.created_at, "created_at"),
        updated_at=stored_text(row.updated_at, "updated_at"),
    )


def _decode_reservation(row: Row[Any]) -> BudgetReservationRow:
    return BudgetReservationRow(
        reservation_id=stored_text(row.reservation_id, "reservation_id"),
        tokens=stored_int(row.tokens, "tokens"),
        cost_usd=_stored_cost(row.cost_usd, "cost_usd"),
        expires_at=_opt_int(row.expires_at, "expires_at"),
        created_at=stored_text(row.created_at, "created_at"),
    )


def _floor0(expression: Any) -> Any:
    """``max(0, expression)`` in SQL (float residue of subtractions never goes negative)."""
    return case((expression < 0, literal(0)), else_=expression)


class SqlBudgetLedgerStore:
    """:class:`~actoviq.runtime.stores.BudgetLedgerStore` on SQLAlchemy Core."""

    def __init__(self, database: Database) -> None:
        self._db = database

    @staticmethod
    def _key(tenant_id: str, ledger_id: str) -> Any:
        require_key(tenant_id, "tenantId")
        require_key(ledger_id, "ledgerId")
        return and_(L.c.tenant_id == tenant_id, L.c.ledger_id == ledger_id)

    @staticmethod
    def _reservation_key(tenant_id: str, ledger_id: str) -> Any:
        return and_(R.c.tenant_id == tenant_id, R.c.ledger_id == ledger_id)

    @staticmethod
    def _load(conn: Connection, key: Any, tenant_id: str, ledger_id: str) -> BudgetLedgerRecord:
        row = conn.execute(select(L).where(key)).first()
        if row is None:
            raise StorageNotFoundError(ledger_resource(tenant_id, ledger_id))
        return _decode(row)

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
        meta = dump_json(check_metadata(metadata))
        stamp = require_key(created_at if created_at is not None else iso_now(), "createdAt")

        def conflict(actual: int | None) -> StorageConflictError:
            return StorageConflictError(
                ledger_resource(tenant_id, ledger_id),
                expected_revision=None,
                actual_revision=actual,
            )

        def work(conn: Connection) -> BudgetLedgerRecord:
            found = conn.execute(select(L.c.revision).where(key)).first()
            if found is not None:
                raise conflict(stored_int(found.revision, "revision"))
            conn.execute(
                insert(L).values(
                    tenant_id=tenant_id,
                    ledger_id=ledger_id,
                    revision=0,
                    max_child_runs=checked.max_child_runs,
                    max_depth=checked.max_depth,
                    max_total_tokens=checked.max_total_tokens,
                    max_cost_usd=checked.max_cost_usd,
                    child_runs_started=0,
                    total_tokens_used=0,
                    cost_usd_used=0.0,
                    reserved_tokens=0,
                    reserved_cost_usd=0.0,
                    metadata_json=meta,
                    created_at=stamp,
                    updated_at=stamp,
                )
            )
            return self._load(conn, key, tenant_id, ledger_id)

        try:
            return await self._db.run_write(work)
        except IntegrityError:
            raise conflict(0) from None  # PostgreSQL: a concurrent creator won

    async def get(self, *, tenant_id: str, ledger_id: str) -> BudgetLedgerRecord | None:
        """See :meth:`BudgetLedgerStore.get`."""
        key = self._key(tenant_id, ledger_id)

        def work(conn: Connection) -> BudgetLedgerRecord | None:
            row = conn.execute(select(L).where(key)).first()
            return None if row is None else _decode(row)

        return await self._db.run_read(work)

    async def claim_child(
        self, *, tenant_id: str, ledger_id: str, updated_at: str | None = None
    ) -> BudgetLedgerUpdate:
        """See :meth:`BudgetLedgerStore.claim_child`."""
        key = self._key(tenant_id, ledger_id)
        stamp = updated_at or iso_now()

        def work(conn: Connection) -> BudgetLedgerUpdate:
            changed = conn.execute(
                update(L)
                .where(key)
                .where(
                    or_(
                        L.c.max_child_runs.is_(None),
                        L.c.child_runs_started + 1 <= L.c.max_child_runs,
                    )
                )
                .values(
                    child_runs_started=L.c.child_runs_started + 1,
                    revision=L.c.revision + 1,
                    updated_at=stamp,
                )
            )
            record = self._load(conn, key, tenant_id, ledger_id)
            return BudgetLedgerUpdate(applied=changed.rowcount == 1, record=record)

        return await self._db.run_write(work)

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
        stamp = updated_at or iso_now()
        held_key = and_(self._reservation_key(tenant_id, ledger_id), R.c.reservation_id == rid)

        def work(conn: Connection) -> BudgetLedgerUpdate:
            held = conn.execute(select(R).where(held_key)).first()
            if held is not None:
                row = _decode_reservation(held)
                if (row.tokens, row.cost_usd) != (amount, cost):
                    raise StorageDataError(f"Reservation {rid} is already held with other amounts.")
                return BudgetLedgerUpdate(
                    applied=True, record=self._load(conn, key, tenant_id, ledger_id)
                )
            guard: list[Any] = []
            if amount:
                guard.append(
                    or_(
                        L.c.max_total_tokens.is_(None),
                        L.c.total_tokens_used + L.c.reserved_tokens + amount
                        <= L.c.max_total_tokens,
                    )
                )
            if cost:
                guard.append(
                    or_(
                        L.c.max_cost_usd.is_(None),
                        L.c.cost_usd_used + L.c.reserved_cost_usd + cost <= L.c.max_cost_usd,
                    )
                )
            changed = conn.execute(
                update(L)
                .where(key, *guard)
                .values(
                    reserved_tokens=L.c.reserved_tokens + amount,
                    reserved_cost_usd=L.c.reserved_cost_usd + cost,
                    revision=L.c.revision + 1,
                    updated_at=stamp,
                )
            )
            if changed.rowcount == 1:
                conn.execute(
                    insert(R).values(
                        tenant_id=tenant_id,
                        ledger_id=ledger_id,
                        reservation_id=rid,
                        tokens=amount,
                        cost_usd=cost,
                        expires_at=expiry,
                        created_at=stamp,
                    )
                )
            record = self._load(conn, key, tenant_id, ledger_id)
            return BudgetLedgerUpdate(applied=changed.rowcount == 1, record=record)

        try:
            return await self._db.run_write(work)
        except IntegrityError:
            # PostgreSQL: a concurrent reserve of the same id won; this one now sees it held.
            return await self._db.run_write(work)

    @staticmethod
    def _drop(
        conn: Connection,
        key: Any,
        where: Any,
        stamp: str,
        add_tokens: int = 0,
        add_cost: float = 0.0,
    ) -> bool:
        """Delete the reservations matching ``where`` and give back what they held."""
        rows = [_decode_reservation(r) for r in conn.execute(select(R).where(where)).all()]
        if not rows and not (add_tokens or add_cost):
            return False
        if rows:
            conn.execute(delete(R).where(where))
        tokens = sum(r.tokens for r in rows)
        cost = sum(r.cost_usd for r in rows)
        conn.execute(
            update(L)
            .where(key)
            .values(
                total_tokens_used=L.c.total_tokens_used + add_tokens,
                cost_usd_used=L.c.cost_usd_used + add_cost,
                reserved_tokens=_floor0(L.c.reserved_tokens - tokens),
                reserved_cost_usd=_floor0(L.c.reserved_cost_usd - cost),
                revision=L.c.revision + 1,
                updated_at=stamp,
            )
        )
        return True

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
        stamp = updated_at or iso_now()
        where = and_(self._reservation_key(tenant_id, ledger_id), R.c.reservation_id == rid)

        def work(conn: Connection) -> BudgetLedgerRecord:
            self._load(conn, key, tenant_id, ledger_id)
            self._drop(conn, key, where, stamp)
            return self._load(conn, key, tenant_id, ledger_id)

        return await self._db.run_write(work)

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
        stamp = updated_at or iso_now()
        where = and_(
            self._reservation_key(tenant_id, ledger_id),
            R.c.reservation_id == rid if rid is not None else false(),
        )

        def work(conn: Connection) -> BudgetLedgerRecord:
            self._load(conn, key, tenant_id, ledger_id)
            if not self._drop(conn, key, where, stamp, amount, cost):
                conn.execute(
                    update(L).where(key).values(revision=L.c.revision + 1, updated_at=stamp)
                )
            return self._load(conn, key, tenant_id, ledger_id)

        return await self._db.run_write(work)

    async def list_reservations(
        self, *, tenant_id: str, ledger_id: str
    ) -> list[BudgetReservationRow]:
        """See :meth:`BudgetLedgerStore.list_reservations`."""
        key = self._key(tenant_id, ledger_id)

        def work(conn: Connection) -> list[BudgetReservationRow]:
            self._load(conn, key, tenant_id, ledger_id)
            rows = conn.execute(
                select(R)
                .where(self._reservation_key(tenant_id, ledger_id))
                .order_by(R.c.created_at, R.c.reservation_id)
            ).all()
            return [_decode_reservation(r) for r in rows]

        return await self._db.run_read(work)

    async def release_expired(
        self, *, tenant_id: str, ledger_id: str, now_ms: int, updated_at: str | None = None
    ) -> BudgetLedgerRecord:
        """See :meth:`BudgetLedgerStore.release_expired`."""
        key = self._key(tenant_id, ledger_id)
        now = require_amount(now_ms, "nowMs")
        stamp = updated_at or iso_now()
        where = and_(
            self._reservation_key(tenant_id, ledger_id),
            R.c.expires_at.is_not(None),
            R.c.expires_at <= now,
        )

        def work(conn: Connection) -> BudgetLedgerRecord:
            self._load(conn, key, tenant_id, ledger_id)
            self._drop(conn, key, where, stamp)
            return self._load(conn, key, tenant_id, ledger_id)

        return await self._db.run_write(work)

    async def delete(self, *, tenant_id: str, ledger_id: str) -> bool:
        """See :meth:`BudgetLedgerStore.delete`."""
        key = self._key(tenant_id, ledger_id)

        def work(conn: Connection) -> bool:
            conn.execute(delete(R).where(self._reservation_key(tenant_id, ledger_id)))
            return conn.execute(delete(L).where(key)).rowcount == 1

        return await self._db.run_write(work)

    async def aclose(self) -> None:
        """No-op: the :class:`SqliteStorage` owns the engine."""
