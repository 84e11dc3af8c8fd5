"""``ClaimedLedger``: a tree's ledger for a child that was already claimed on it.

A budget counts *logical* children (spec 04 §1.3): a background child taken over by another
worker, or run again after a reconciliation, is the same child, so its next execution must not
take another child run from the tree. ``ChildRunner.run`` claims on every call; the background
engine runs a re-execution under a parent whose ledger is wrapped here: ``claim_child`` only
checks the depth, everything else (reservations, usage, snapshots) goes to the tree's ledger.
"""

from __future__ import annotations

from actoviq.core import Usage
from actoviq.orchestration.budget import (
    BudgetLedger,
    BudgetLimits,
    BudgetReservation,
    BudgetSnapshot,
)
from actoviq.orchestration.errors import BudgetExceededError, OrchestrationConfigError

__all__ = ["ClaimedLedger"]


class ClaimedLedger:
    """The :class:`~actoviq.orchestration.budget.BudgetLedger` of a child already counted."""

    def __init__(self, inner: BudgetLedger) -> None:
        self.inner = inner

    @property
    def limits(self) -> BudgetLimits:
        """The tree ledger's limits."""
        return self.inner.limits

    async def claim_child(self, depth: int) -> None:
        """Check the depth only: this child was counted when it first ran."""
        if type(depth) is not int or depth < 1:
            raise OrchestrationConfigError(
                "Child depth must be a positive safe integer.", details={"field": "depth"}
            )
        limit = self.inner.limits.max_depth
        if limit is not None and depth > limit:
            raise BudgetExceededError(
                f"Child depth {depth} exceeds budget maxDepth {limit}.",
                details={"kind": "depth", "limit": limit, "used": depth},
            )

    async def reserve(self, *, tokens: int = 0, cost_usd: float = 0.0) -> BudgetReservation:
        """See the tree's ledger."""
        return await self.inner.reserve(tokens=tokens, cost_usd=cost_usd)

    async def release(self, reservation: BudgetReservation) -> None:
        """See the tree's ledger."""
        await self.inner.release(reservation)

    async def record_usage(
        self, usage: Usage, *, reservation: BudgetReservation | None = None
    ) -> None:
        """See the tree's ledger (recorded there)."""
        await self.inner.record_usage(usage, reservation=reservation)

    async def snapshot(self) -> BudgetSnapshot:
        """The tree ledger's snapshot."""
        return await self.inner.snapshot()
