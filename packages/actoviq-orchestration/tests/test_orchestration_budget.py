"""The budget ledger (spec 04 §7.1 rows 1-6, §8.2-13): validation, claims, usage recorded before
a budget error, reservations, sub-budgets, snapshots with the reference sentinels."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest

from actoviq.core import Usage
from actoviq.orchestration import (
    UNBOUNDED_COST_USD,
    UNBOUNDED_INT,
    BudgetExceededError,
    BudgetLedger,
    BudgetLimits,
    BudgetSnapshot,
    InMemoryBudgetLedger,
    OrchestrationConfigError,
    SubBudgetLedger,
)


@pytest.mark.parametrize(
    ("limits", "field"),
    [
        ({"max_child_runs": -1}, "maxChildRuns"),
        ({"max_depth": 1.5}, "maxDepth"),
        ({"max_total_tokens": math.inf}, "maxTotalTokens"),
        ({"max_cost_usd": -0.1}, "maxCostUsd"),
        ({"max_cost_usd": math.nan}, "maxCostUsd"),
        ({"max_child_runs": True}, "maxChildRuns"),
        ({"max_total_tokens": 2**53}, "maxTotalTokens"),
    ],
)
def test_limits_are_validated(limits: dict[str, Any], field: str) -> None:
    with pytest.raises(OrchestrationConfigError, match="must be") as caught:
        BudgetLimits(**limits)
    assert caught.value.details == {"field": field}
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    "counters",
    [
        {"child_runs_started": -1},
        {"child_runs_started": 0.5},
        {"total_tokens_used": 1.5},
        {"cost_usd_used": math.nan},
        {"cost_usd_used": -1.0},
    ],
)
def test_initial_counters_are_validated(counters: dict[str, Any]) -> None:
    with pytest.raises(OrchestrationConfigError, match="counters"):
        InMemoryBudgetLedger(**counters)


async def test_claims_check_depth_then_runs_and_count_only_successes() -> None:
    ledger = InMemoryBudgetLedger(BudgetLimits(max_child_runs=1, max_depth=1))
    with pytest.raises(OrchestrationConfigError, match="positive"):
        await ledger.claim_child(0)
    with pytest.raises(BudgetExceededError, match="maxDepth") as depth:
        await ledger.claim_child(2)
    assert depth.value.details == {"kind": "depth", "limit": 1, "used": 2}
    await ledger.claim_child(1)
    with pytest.raises(BudgetExceededError, match="exhausted") as runs:
        await ledger.claim_child(1)
    assert not runs.value.retryable and runs.value.code == "BUDGET_EXCEEDED"
    assert (await ledger.snapshot()).child_runs_started == 1


async def test_usage_is_recorded_before_the_budget_error() -> None:
    ledger = InMemoryBudgetLedger(BudgetLimits(max_total_tokens=2, max_cost_usd=1))
    await ledger.record_usage(Usage(total_tokens=2, cost_usd=1))
    with pytest.raises(BudgetExceededError, match="token budget 2 is exceeded") as tokens:
        await ledger.record_usage(Usage(total_tokens=1))
    assert tokens.value.details == {"kind": "tokens", "limit": 2, "used": 3}
    # The reference dropped this usage; the ledger keeps it.
    assert (await ledger.snapshot()).total_tokens_used == 3
    costly = InMemoryBudgetLedger(BudgetLimits(max_cost_usd=1))
    with pytest.raises(BudgetExceededError, match="cost budget 1 is exceeded"):
        await costly.record_usage(Usage(cost_usd=2))
    assert (await costly.snapshot()).cost_usd_used == 2


async def test_snapshots_round_trip_with_the_reference_sentinels() -> None:
    ledger = InMemoryBudgetLedger(BudgetLimits(max_child_runs=5))
    await ledger.claim_child(1)
    await ledger.record_usage(Usage(total_tokens=2, cost_usd=1))
    snapshot = await ledger.snapshot()
    wire = json.loads(json.dumps(snapshot.to_json(), allow_nan=False))
    assert wire == {
        "limits": {
            "maxChildRuns": 5,
            "maxDepth": UNBOUNDED_INT,
            "maxTotalTokens": UNBOUNDED_INT,
            "maxCostUsd": UNBOUNDED_COST_USD,
        },
        "childRunsStarted": 1,
        "totalTokensUsed": 2,
        "costUsdUsed": 1.0,
    }
    restored = BudgetSnapshot.from_json(wire)
    assert restored == snapshot
    assert restored.limits.max_depth is None and restored.limits.max_cost_usd is None
    again = InMemoryBudgetLedger.from_snapshot(restored).snapshot_now()
    assert (again.child_runs_started, again.total_tokens_used, again.cost_usd_used) == (1, 2, 1)
    with pytest.raises(OrchestrationConfigError, match="counters"):
        BudgetSnapshot.from_json({**wire, "totalTokensUsed": -4})


async def test_reservations_hold_room_and_are_released_by_the_recorded_usage() -> None:
    ledger = InMemoryBudgetLedger(BudgetLimits(max_total_tokens=100))
    first = await ledger.reserve(tokens=60)
    with pytest.raises(BudgetExceededError, match="reservation") as refused:
        await ledger.reserve(tokens=50)
    assert refused.value.details is not None and refused.value.details["kind"] == "tokens"
    assert ledger.snapshot_now().reserved_tokens == 60
    await ledger.record_usage(Usage(total_tokens=30), reservation=first)
    assert ledger.snapshot_now().reserved_tokens == 0
    second = await ledger.reserve(tokens=70)
    await ledger.release(second)
    await ledger.release(second)  # idempotent
    snapshot = ledger.snapshot_now()
    assert (snapshot.total_tokens_used, snapshot.reserved_tokens) == (30, 0)
    assert snapshot.remaining().max_total_tokens == 70


async def test_concurrent_reservations_never_overshoot_the_limit() -> None:
    ledger = InMemoryBudgetLedger(BudgetLimits(max_total_tokens=100))

    async def child() -> bool:
        try:
            reservation = await ledger.reserve(tokens=30)
        except BudgetExceededError:
            return False
        await asyncio.sleep(0)
        await ledger.record_usage(Usage(total_tokens=30), reservation=reservation)
        return True

    ran = await asyncio.gather(*(child() for _ in range(10)))
    assert sum(ran) == 3
    assert ledger.snapshot_now().total_tokens_used == 90


async def test_a_sub_budget_charges_its_parent_and_records_both_before_raising() -> None:
    parent = InMemoryBudgetLedger(BudgetLimits(max_child_runs=10, max_total_tokens=1000))
    sub = SubBudgetLedger(parent, BudgetLimits(max_child_runs=1, max_total_tokens=10))
    assert isinstance(sub, BudgetLedger)
    await sub.claim_child(2)
    with pytest.raises(BudgetExceededError, match="exhausted"):
        await sub.claim_child(2)
    assert parent.snapshot_now().child_runs_started == 1  # the refused claim counted nowhere
    with pytest.raises(BudgetExceededError, match="token budget 10"):
        await sub.record_usage(Usage(total_tokens=25))
    assert sub.snapshot_now().total_tokens_used == 25
    assert parent.snapshot_now().total_tokens_used == 25
    reservation = await sub.reserve(tokens=0)
    await sub.release(reservation)
