"""``DurableBudgetLedger``: one budget shared by every process of a run tree (spec 04 §8.2-13).

The :class:`~actoviq.orchestration.budget.BudgetLedger` protocol over a
:class:`~actoviq.runtime.stores.BudgetLedgerStore` row: claims and reservations are guarded
atomic updates (``used + n <= limit``), so workers on several machines never overshoot together;
usage is always recorded first and only then checked, so a
:class:`~actoviq.orchestration.errors.BudgetExceededError` (never retryable) loses nothing.

Reservations carry an expiry (``reservation_ttl_ms``): when a reservation does not fit, the
ledger first gives back the expired holds of crashed workers, then tries once more.

A background child spawned under a scope whose budget is a ``DurableBudgetLedger`` records the
ledger's id, and the worker that runs it (in any process) charges the same row.

Example:
    >>> # store = storage.ledgers  (SqliteStorage) or InMemoryBudgetLedgerStore()
    >>> # ledger = await DurableBudgetLedger.open(store, "tree-1", BudgetLedgerLimits(...))
    >>> # root = runner.create_root(budget=ledger)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Final

from actoviq.core import Usage
from actoviq.orchestration.budget import BudgetLimits, BudgetReservation, BudgetSnapshot
from actoviq.orchestration.errors import BudgetExceededError, OrchestrationConfigError
from actoviq.runtime.stores import (
    BudgetLedgerLimits,
    BudgetLedgerRecord,
    BudgetLedgerStore,
    StorageConflictError,
    wall_clock_ms,
)

__all__ = ["DEFAULT_RESERVATION_TTL_MS", "DurableBudgetLedger"]

DEFAULT_RESERVATION_TTL_MS: Final = 3_600_000
"""How long a reservation outlives a worker that died holding it (one hour)."""

_MAX_SAFE: Final = 2**53 - 1


def _store_limits(limits: BudgetLimits) -> BudgetLedgerLimits:
    return BudgetLedgerLimits(
        max_child_runs=limits.max_child_runs,
        max_depth=limits.max_depth,
        max_total_tokens=limits.max_total_tokens,
        max_cost_usd=limits.max_cost_usd,
    )


def _limits(record: BudgetLedgerRecord) -> BudgetLimits:
    stored = record.limits
    return BudgetLimits(
        max_child_runs=stored.max_child_runs,
        max_depth=stored.max_depth,
        max_total_tokens=stored.max_total_tokens,
        max_cost_usd=stored.max_cost_usd,
    )


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class DurableBudgetLedger:
    """A :class:`~actoviq.orchestration.budget.BudgetLedger` on a shared ledger row.

    Build it with :meth:`open` (creates the row, or joins an existing one).

    Args:
        store: the ledger store (``SqliteStorage.ledgers`` or an in-memory store).
        tenant_id: the tenant of the row.
        ledger_id: the row's id (one per run tree).
        limits: the row's limits (as stored).
        reservation_ttl_ms: how long a reservation lives without being settled.
        clock: epoch-ms clock for reservation expiry (default: the wall clock).
    """

    def __init__(
        self,
        store: BudgetLedgerStore,
        *,
        tenant_id: str,
        ledger_id: str,
        limits: BudgetLimits,
        reservation_ttl_ms: int = DEFAULT_RESERVATION_TTL_MS,
        clock: Callable[[], int] | None = None,
    ) -> None:
        if type(reservation_ttl_ms) is not int or not 1 <= reservation_ttl_ms <= _MAX_SAFE:
            raise OrchestrationConfigError(
                "reservationTtlMs must be a positive safe integer.",
                details={"field": "reservationTtlMs"},
            )
        self.store = store
        self.tenant_id = tenant_id
        self.ledger_id = ledger_id
        self._limits = limits
        self._ttl = reservation_ttl_ms
        self._clock = clock or wall_clock_ms

    @classmethod
    async def open(
        cls,
        store: BudgetLedgerStore,
        ledger_id: str,
        limits: BudgetLimits | None = None,
        *,
        tenant_id: str = "default",
        reservation_ttl_ms: int = DEFAULT_RESERVATION_TTL_MS,
        clock: Callable[[], int] | None = None,
    ) -> DurableBudgetLedger:
        """Create the ledger row (zero counters), or join the existing one.

        Args:
            store: the ledger store.
            ledger_id: the row's id.
            limits: the limits of a new row; when the row exists they must equal its limits
                (None: take the stored ones; a missing row is then created unbounded).
            tenant_id: the row's tenant.
            reservation_ttl_ms: see the class.
            clock: see the class.

        Raises:
            OrchestrationConfigError: the row exists with other limits.
        """
        record = await store.get(tenant_id=tenant_id, ledger_id=ledger_id)
        if record is None:
            try:
                record = await store.create(
                    tenant_id=tenant_id,
                    ledger_id=ledger_id,
                    limits=_store_limits(limits or BudgetLimits()),
                )
            except StorageConflictError:  # another process created it first: join it
                record = await store.get(tenant_id=tenant_id, ledger_id=ledger_id)
                assert record is not None
        stored = _limits(record)
        if limits is not None and limits != stored:
            raise OrchestrationConfigError(
                f'Budget ledger "{ledger_id}" exists with other limits.',
                details={"ledgerId": ledger_id},
            )
        return cls(
            store,
            tenant_id=tenant_id,
            ledger_id=ledger_id,
            limits=stored,
            reservation_ttl_ms=reservation_ttl_ms,
            clock=clock,
        )

    @property
    def limits(self) -> BudgetLimits:
        """See :class:`~actoviq.orchestration.budget.BudgetLedger`."""
        return self._limits

    def _key(self) -> dict[str, str]:
        return {"tenant_id": self.tenant_id, "ledger_id": self.ledger_id}

    async def claim_child(self, depth: int) -> None:
        """See :class:`~actoviq.orchestration.budget.BudgetLedger` (one guarded update)."""
        if type(depth) is not int or not 1 <= depth <= _MAX_SAFE:
            raise OrchestrationConfigError(
                "Child depth must be a positive safe integer.", details={"field": "depth"}
            )
        max_depth = self._limits.max_depth
        if max_depth is not None and depth > max_depth:
            raise BudgetExceededError(
                f"Child depth {depth} exceeds budget maxDepth {max_depth}.",
                details={"kind": "depth", "limit": max_depth, "used": depth},
            )
        update = await self.store.claim_child(**self._key())
        if not update.applied:
            limit = update.record.limits.max_child_runs
            raise BudgetExceededError(
                f"Child run budget {limit} is exhausted.",
                details={"kind": "childRuns", "limit": limit, "used": limit},
            )

    async def reserve(self, *, tokens: int = 0, cost_usd: float = 0.0) -> BudgetReservation:
        """See :class:`~actoviq.orchestration.budget.BudgetLedger` (expired holds are reclaimed)."""
        reservation = BudgetReservation(
            id=f"reservation-{uuid.uuid4().hex}", tokens=tokens, cost_usd=float(cost_usd)
        )

        async def attempt() -> BudgetLedgerRecord | None:
            update = await self.store.reserve(
                **self._key(),
                reservation_id=reservation.id,
                tokens=tokens,
                cost_usd=float(cost_usd),
                expires_at=self._clock() + self._ttl,
            )
            return None if update.applied else update.record

        refused = await attempt()
        if refused is not None:
            await self.store.release_expired(**self._key(), now_ms=self._clock())
            refused = await attempt()
        if refused is None:
            return reservation
        limits = refused.limits
        if (
            tokens
            and limits.max_total_tokens is not None
            and refused.total_tokens_used + refused.reserved_tokens + tokens
            > limits.max_total_tokens
        ):
            raise BudgetExceededError(
                f"Child token budget {limits.max_total_tokens} cannot cover the reservation.",
                details={
                    "kind": "tokens",
                    "limit": limits.max_total_tokens,
                    "used": refused.total_tokens_used,
                },
            )
        limit = limits.max_cost_usd or 0.0
        raise BudgetExceededError(
            f"Child cost budget {_number(limit)} cannot cover the reservation.",
            details={"kind": "costUsd", "limit": limit, "used": refused.cost_usd_used},
        )

    async def release(self, reservation: BudgetReservation) -> None:
        """See :class:`~actoviq.orchestration.budget.BudgetLedger` (idempotent)."""
        await self.store.release(**self._key(), reservation_id=reservation.id)

    async def record_usage(
        self, usage: Usage, *, reservation: BudgetReservation | None = None
    ) -> None:
        """See :class:`~actoviq.orchestration.budget.BudgetLedger`: recorded, then checked."""
        record = await self.store.record_usage(
            **self._key(),
            tokens=usage.total_tokens,
            cost_usd=float(usage.cost_usd),
            reservation_id=None if reservation is None else reservation.id,
        )
        limits = record.limits
        if (
            limits.max_total_tokens is not None
            and record.total_tokens_used > limits.max_total_tokens
        ):
            raise BudgetExceededError(
                f"Child token budget {limits.max_total_tokens} is exceeded.",
                details={
                    "kind": "tokens",
                    "limit": limits.max_total_tokens,
                    "used": record.total_tokens_used,
                },
            )
        if limits.max_cost_usd is not None and record.cost_usd_used > limits.max_cost_usd:
            raise BudgetExceededError(
                f"Child cost budget {_number(limits.max_cost_usd)} is exceeded.",
                details={
                    "kind": "costUsd",
                    "limit": limits.max_cost_usd,
                    "used": record.cost_usd_used,
                },
            )

    async def snapshot(self) -> BudgetSnapshot:
        """See :class:`~actoviq.orchestration.budget.BudgetLedger` (read from the row).

        Raises:
            OrchestrationConfigError: the row no longer exists.
        """
        record = await self.store.get(**self._key())
        if record is None:
            raise OrchestrationConfigError(
                f'Budget ledger "{self.ledger_id}" does not exist.',
                details={"ledgerId": self.ledger_id},
            )
        return BudgetSnapshot(
            limits=_limits(record),
            child_runs_started=record.child_runs_started,
            total_tokens_used=record.total_tokens_used,
            cost_usd_used=record.cost_usd_used,
            reserved_tokens=record.reserved_tokens,
            reserved_cost_usd=record.reserved_cost_usd,
        )
