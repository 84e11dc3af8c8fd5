"""Durable budget ledgers: one row per run tree, updated atomically (spec 04 §8.2-13).

A run tree whose children live in several processes shares one budget: child runs started,
tokens and cost used, and what running children hold in reservation. Each operation is one
atomic update of the ledger row, so two workers can never both take the last child run:

* :meth:`BudgetLedgerStore.claim_child` adds one child run only while ``started + 1 <= limit``;
* :meth:`BudgetLedgerStore.reserve` holds tokens/cost only while
  ``used + reserved + n <= limit`` (the guarded ``UPDATE ... WHERE used + :n <= limit``);
* :meth:`BudgetLedgerStore.record_usage` always adds what a child spent (usage is recorded
  before any budget error is raised, never lost), releasing its reservation in the same update.

A ``None`` limit is unbounded. Reservations may carry an expiry (epoch ms) so that a crashed
worker's holds can be given back with :meth:`BudgetLedgerStore.release_expired`.

The orchestration package's ``DurableBudgetLedger`` implements its ``BudgetLedger`` protocol on
this store; backends (in memory here, SQL in ``actoviq.storage.sqlite``) pass one conformance
suite.
"""

from __future__ import annotations

import math
from typing import Protocol, cast, runtime_checkable

import attrs

from actoviq.core import JsonObject
from actoviq.runtime.stores.errors import StorageDataError
from actoviq.runtime.stores.validation import (
    MAX_SAFE_INTEGER,
    require_json_object,
    require_key,
)

__all__ = [
    "BudgetLedgerLimits",
    "BudgetLedgerRecord",
    "BudgetLedgerStore",
    "BudgetLedgerUpdate",
    "BudgetReservationRow",
    "check_metadata",
    "check_reservation_id",
    "claim_fits",
    "ledger_resource",
    "require_amount",
    "require_cost",
    "reserve_fits",
    "validate_ledger_limits",
]


def ledger_resource(tenant_id: str, ledger_id: str) -> str:
    """The resource string of a budget ledger in errors."""
    return f"budget ledger {tenant_id}/{ledger_id}"


def require_amount(value: object, field: str) -> int:
    """A non-negative safe integer (tokens, counts)."""
    if type(value) is not int or value < 0 or value > MAX_SAFE_INTEGER:
        raise StorageDataError(f"{field} must be a non-negative safe integer")
    return value


def require_cost(value: object, field: str) -> float:
    """A finite, non-negative number (USD), returned as float."""
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:  # type: ignore[arg-type]
        raise StorageDataError(f"{field} must be a finite, non-negative number")
    return float(value)  # type: ignore[arg-type]


@attrs.frozen(kw_only=True)
class BudgetLedgerLimits:
    """The limits of a ledger; ``None`` is unbounded."""

    max_child_runs: int | None = None
    max_depth: int | None = None
    max_total_tokens: int | None = None
    max_cost_usd: float | None = None


def validate_ledger_limits(limits: BudgetLedgerLimits) -> BudgetLedgerLimits:
    """Check every limit (safe integers, a finite cost) and return a normalised copy.

    Raises:
        StorageDataError: ``limits`` is not a :class:`BudgetLedgerLimits` record (a dict or tuple
            in its place), or a limit is negative, fractional, non-finite or not a number.
    """
    if not isinstance(limits, BudgetLedgerLimits):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise StorageDataError(
            "limits must be a BudgetLedgerLimits record, "
            f"got {type(cast(object, limits)).__name__}",
            details={"field": "limits"},
        )
    return BudgetLedgerLimits(
        max_child_runs=None
        if limits.max_child_runs is None
        else require_amount(limits.max_child_runs, "maxChildRuns"),
        max_depth=None
        if limits.max_depth is None
        else require_amount(limits.max_depth, "maxDepth"),
        max_total_tokens=None
        if limits.max_total_tokens is None
        else require_amount(limits.max_total_tokens, "maxTotalTokens"),
        max_cost_usd=None
        if limits.max_cost_usd is None
        else require_cost(limits.max_cost_usd, "maxCostUsd"),
    )


@attrs.frozen(kw_only=True)
class BudgetLedgerRecord:
    """A ledger row: its limits and counters.

    ``revision`` grows by one with every change (claims, reservations, usage, releases).
    """

    tenant_id: str
    ledger_id: str
    revision: int
    limits: BudgetLedgerLimits
    child_runs_started: int
    total_tokens_used: int
    cost_usd_used: float
    reserved_tokens: int
    reserved_cost_usd: float
    metadata: JsonObject
    created_at: str
    updated_at: str


@attrs.frozen(kw_only=True)
class BudgetLedgerUpdate:
    """The result of a guarded update: whether it applied, and the ledger afterwards.

    When ``applied`` is false nothing changed and ``record`` is the ledger that refused.
    """

    applied: bool
    record: BudgetLedgerRecord


@attrs.frozen(kw_only=True)
class BudgetReservationRow:
    """Tokens and cost one reservation holds on a ledger."""

    reservation_id: str
    tokens: int
    cost_usd: float
    expires_at: int | None
    created_at: str


def check_reservation_id(value: object) -> str:
    """The reservation id (a non-empty string)."""
    return require_key(value, "reservationId")


def check_metadata(value: JsonObject | None) -> JsonObject:
    """A copy of the ledger metadata (strict JSON object)."""
    return {} if value is None else require_json_object(value, "metadata")


def claim_fits(record: BudgetLedgerRecord) -> bool:
    """Whether one more child run fits (``child_runs_started + 1 <= max_child_runs``)."""
    limit = record.limits.max_child_runs
    return limit is None or record.child_runs_started + 1 <= limit


def reserve_fits(record: BudgetLedgerRecord, tokens: int, cost_usd: float) -> bool:
    """Whether a reservation fits (``used + reserved + n <= limit`` for tokens and cost).

    A zero amount always fits its limit (nothing is held against it).
    """
    limits = record.limits
    if (
        tokens
        and limits.max_total_tokens is not None
        and record.total_tokens_used + record.reserved_tokens + tokens > limits.max_total_tokens
    ):
        return False
    return not (
        cost_usd
        and limits.max_cost_usd is not None
        and record.cost_usd_used + record.reserved_cost_usd + cost_usd > limits.max_cost_usd
    )


@runtime_checkable
class BudgetLedgerStore(Protocol):
    """Budget ledger rows keyed by ``(tenant_id, ledger_id)``; every change is atomic.

    Every mutating method raises :class:`~actoviq.runtime.stores.StorageNotFoundError` when the
    ledger does not exist and :class:`~actoviq.runtime.stores.StorageDataError` for invalid
    arguments (before anything is written).
    """

    async def create(
        self,
        *,
        tenant_id: str,
        ledger_id: str,
        limits: BudgetLedgerLimits,
        metadata: JsonObject | None = None,
        created_at: str | None = None,
    ) -> BudgetLedgerRecord:
        """Create a ledger with zero counters at revision 0.

        Raises:
            StorageConflictError: the ledger exists (expected None, actual its revision).
        """
        ...

    async def get(self, *, tenant_id: str, ledger_id: str) -> BudgetLedgerRecord | None:
        """Return the ledger, or None."""
        ...

    async def claim_child(
        self, *, tenant_id: str, ledger_id: str, updated_at: str | None = None
    ) -> BudgetLedgerUpdate:
        """Count one more child run, only while ``child_runs_started + 1 <= max_child_runs``."""
        ...

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
        """Hold ``tokens``/``cost_usd``, only while ``used + reserved + n <= limit`` for each.

        Reserving an id that is already held with the same amounts applies nothing and reports
        ``applied`` (an idempotent retry).

        Raises:
            StorageDataError: the id is held with other amounts.
        """
        ...

    async def release(
        self,
        *,
        tenant_id: str,
        ledger_id: str,
        reservation_id: str,
        updated_at: str | None = None,
    ) -> BudgetLedgerRecord:
        """Give a reservation back unused; an unknown id changes nothing (idempotent)."""
        ...

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
        """Add what a child spent (never refused: limits are checked by the caller afterwards).

        The reservation, when given and still held, is released in the same update.
        """
        ...

    async def list_reservations(
        self, *, tenant_id: str, ledger_id: str
    ) -> list[BudgetReservationRow]:
        """The held reservations, ordered by ``created_at`` then id."""
        ...

    async def release_expired(
        self, *, tenant_id: str, ledger_id: str, now_ms: int, updated_at: str | None = None
    ) -> BudgetLedgerRecord:
        """Release every reservation whose ``expires_at`` is at or before ``now_ms``."""
        ...

    async def delete(self, *, tenant_id: str, ledger_id: str) -> bool:
        """Delete the ledger and its reservations; False when absent."""
        ...

    async def aclose(self) -> None:
        """Release resources; idempotent."""
        ...
