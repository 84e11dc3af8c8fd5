"""Conformance checks of budget ledger stores (spec 04 §8.2-13)."""

from __future__ import annotations

import asyncio

from actoviq.runtime.stores.conformance._base import T0, T1, StoreBundle, expect_error, register
from actoviq.runtime.stores.errors import (
    StorageConflictError,
    StorageDataError,
    StorageNotFoundError,
)
from actoviq.runtime.stores.ledgers import BudgetLedgerLimits

__all__: list[str] = []


@register
async def check_ledger_create_get_and_validation(s: StoreBundle, ns: str) -> None:
    limits = BudgetLedgerLimits(
        max_child_runs=3, max_depth=2, max_total_tokens=10, max_cost_usd=1.5
    )
    created = await s.ledgers.create(
        tenant_id=ns, ledger_id="L", limits=limits, metadata={"tree": "root"}, created_at=T0
    )
    assert (created.revision, created.limits, created.metadata) == (0, limits, {"tree": "root"})
    assert (created.child_runs_started, created.total_tokens_used, created.cost_usd_used) == (
        0,
        0,
        0.0,
    )
    assert (created.reserved_tokens, created.reserved_cost_usd) == (0, 0.0)
    assert (created.created_at, created.updated_at) == (T0, T0)
    assert await s.ledgers.get(tenant_id=ns, ledger_id="L") == created
    assert await s.ledgers.get(tenant_id=ns, ledger_id="missing") is None
    assert await s.ledgers.get(tenant_id=f"{ns}-other", ledger_id="L") is None
    conflict = await expect_error(
        StorageConflictError,
        s.ledgers.create(tenant_id=ns, ledger_id="L", limits=BudgetLedgerLimits()),
    )
    assert (conflict.expected_revision, conflict.actual_revision) == (None, 0)
    for bad in (
        BudgetLedgerLimits(max_child_runs=-1),
        BudgetLedgerLimits(max_depth=1.5),  # type: ignore[arg-type]
        BudgetLedgerLimits(max_cost_usd=float("inf")),
        BudgetLedgerLimits(max_total_tokens=True),
    ):
        await expect_error(
            StorageDataError, s.ledgers.create(tenant_id=ns, ledger_id="bad", limits=bad)
        )
    assert await s.ledgers.get(tenant_id=ns, ledger_id="bad") is None
    await expect_error(
        StorageNotFoundError, s.ledgers.claim_child(tenant_id=ns, ledger_id="missing")
    )
    await expect_error(
        StorageNotFoundError,
        s.ledgers.record_usage(tenant_id=ns, ledger_id="missing", tokens=1, cost_usd=0.0),
    )
    unbounded = await s.ledgers.create(tenant_id=ns, ledger_id="U", limits=BudgetLedgerLimits())
    assert unbounded.limits == BudgetLedgerLimits()
    assert await s.ledgers.delete(tenant_id=ns, ledger_id="U") is True
    assert await s.ledgers.delete(tenant_id=ns, ledger_id="U") is False
    assert await s.ledgers.get(tenant_id=ns, ledger_id="U") is None


@register
async def check_ledger_claims_stop_at_the_limit(s: StoreBundle, ns: str) -> None:
    await s.ledgers.create(tenant_id=ns, ledger_id="L", limits=BudgetLedgerLimits(max_child_runs=2))
    first = await s.ledgers.claim_child(tenant_id=ns, ledger_id="L", updated_at=T1)
    assert (first.applied, first.record.child_runs_started, first.record.revision) == (True, 1, 1)
    assert first.record.updated_at == T1
    second = await s.ledgers.claim_child(tenant_id=ns, ledger_id="L")
    assert (second.applied, second.record.child_runs_started) == (True, 2)
    refused = await s.ledgers.claim_child(tenant_id=ns, ledger_id="L")
    assert (refused.applied, refused.record.child_runs_started, refused.record.revision) == (
        False,
        2,
        2,
    )
    # Many claims at once against one slot: exactly one applies.
    await s.ledgers.create(
        tenant_id=ns, ledger_id="race", limits=BudgetLedgerLimits(max_child_runs=3)
    )
    results = await asyncio.gather(
        *(s.ledgers.claim_child(tenant_id=ns, ledger_id="race") for _ in range(10))
    )
    assert sum(1 for r in results if r.applied) == 3
    final = await s.ledgers.get(tenant_id=ns, ledger_id="race")
    assert final is not None
    assert final.child_runs_started == 3


@register
async def check_ledger_reservations_are_guarded(s: StoreBundle, ns: str) -> None:
    await s.ledgers.create(
        tenant_id=ns,
        ledger_id="L",
        limits=BudgetLedgerLimits(max_total_tokens=10, max_cost_usd=1.0),
    )
    held = await s.ledgers.reserve(
        tenant_id=ns, ledger_id="L", reservation_id="r1", tokens=6, cost_usd=0.5
    )
    assert (held.applied, held.record.reserved_tokens, held.record.reserved_cost_usd) == (
        True,
        6,
        0.5,
    )
    too_many = await s.ledgers.reserve(
        tenant_id=ns, ledger_id="L", reservation_id="r2", tokens=5, cost_usd=0.0
    )
    assert (too_many.applied, too_many.record.reserved_tokens) == (False, 6)
    too_dear = await s.ledgers.reserve(
        tenant_id=ns, ledger_id="L", reservation_id="r2", tokens=0, cost_usd=0.75
    )
    assert (too_dear.applied, too_dear.record.reserved_cost_usd) == (False, 0.5)
    exact = await s.ledgers.reserve(
        tenant_id=ns, ledger_id="L", reservation_id="r2", tokens=4, cost_usd=0.5, expires_at=50
    )
    assert (exact.applied, exact.record.reserved_tokens, exact.record.reserved_cost_usd) == (
        True,
        10,
        1.0,
    )
    again = await s.ledgers.reserve(
        tenant_id=ns, ledger_id="L", reservation_id="r1", tokens=6, cost_usd=0.5
    )
    assert (again.applied, again.record.revision) == (True, exact.record.revision)
    await expect_error(
        StorageDataError,
        s.ledgers.reserve(tenant_id=ns, ledger_id="L", reservation_id="r1", tokens=1, cost_usd=0.5),
    )
    await expect_error(
        StorageDataError,
        s.ledgers.reserve(tenant_id=ns, ledger_id="L", reservation_id="r9", tokens=-1, cost_usd=0),
    )
    rows = await s.ledgers.list_reservations(tenant_id=ns, ledger_id="L")
    assert sorted((r.reservation_id, r.tokens, r.cost_usd, r.expires_at) for r in rows) == [
        ("r1", 6, 0.5, None),
        ("r2", 4, 0.5, 50),
    ]
    # An expired hold is given back; one without expiry stays.
    after = await s.ledgers.release_expired(tenant_id=ns, ledger_id="L", now_ms=50)
    assert (after.reserved_tokens, after.reserved_cost_usd) == (6, 0.5)
    assert [
        r.reservation_id for r in await s.ledgers.list_reservations(tenant_id=ns, ledger_id="L")
    ] == ["r1"]
    same = await s.ledgers.release_expired(tenant_id=ns, ledger_id="L", now_ms=10**12)
    assert same.revision == after.revision
    released = await s.ledgers.release(tenant_id=ns, ledger_id="L", reservation_id="r1")
    assert (released.reserved_tokens, released.reserved_cost_usd) == (0, 0.0)
    unchanged = await s.ledgers.release(tenant_id=ns, ledger_id="L", reservation_id="r1")
    assert unchanged.revision == released.revision
    assert await s.ledgers.list_reservations(tenant_id=ns, ledger_id="L") == []


@register
async def check_ledger_usage_is_always_recorded(s: StoreBundle, ns: str) -> None:
    await s.ledgers.create(
        tenant_id=ns,
        ledger_id="L",
        limits=BudgetLedgerLimits(max_total_tokens=10, max_cost_usd=1.0),
    )
    await s.ledgers.reserve(
        tenant_id=ns, ledger_id="L", reservation_id="r1", tokens=6, cost_usd=0.25
    )
    used = await s.ledgers.record_usage(
        tenant_id=ns, ledger_id="L", tokens=7, cost_usd=0.5, reservation_id="r1", updated_at=T1
    )
    assert (used.total_tokens_used, used.cost_usd_used) == (7, 0.5)
    assert (used.reserved_tokens, used.reserved_cost_usd, used.updated_at) == (0, 0.0, T1)
    # Past the limit: still recorded (the caller raises afterwards, with nothing lost).
    over = await s.ledgers.record_usage(tenant_id=ns, ledger_id="L", tokens=8, cost_usd=0.75)
    assert (over.total_tokens_used, over.cost_usd_used) == (15, 1.25)
    # A reservation id no longer held releases nothing.
    plain = await s.ledgers.record_usage(
        tenant_id=ns, ledger_id="L", tokens=0, cost_usd=0.0, reservation_id="r1"
    )
    assert (plain.total_tokens_used, plain.reserved_tokens) == (15, 0)
    await expect_error(
        StorageDataError,
        s.ledgers.record_usage(tenant_id=ns, ledger_id="L", tokens=1, cost_usd=float("nan")),
    )
    totals = await asyncio.gather(
        *(
            s.ledgers.record_usage(tenant_id=ns, ledger_id="L", tokens=1, cost_usd=0.0)
            for _ in range(8)
        )
    )
    assert max(t.total_tokens_used for t in totals) == 23
    stored = await s.ledgers.get(tenant_id=ns, ledger_id="L")
    assert stored is not None
    assert stored.total_tokens_used == 23
