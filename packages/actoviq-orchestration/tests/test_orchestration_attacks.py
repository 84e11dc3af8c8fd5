"""Adversarial probes of the orchestration promises (scope narrowing, budget, cancellation)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from orchestration_testkit import agent, call, runtime_for, script, usage

from actoviq.core import ProviderResponseError, Usage
from actoviq.orchestration import (
    COLLECT,
    BudgetLimits,
    ChildFailurePolicy,
    ChildRunError,
    ChildRunner,
    InMemoryBudgetLedger,
    RunTree,
    ScopeNarrowing,
    ScopeWideningError,
    WorkspacePolicy,
)
from actoviq.providers.testing import ScriptedTurn
from actoviq.runtime import (
    RuntimeServices,
    RuntimeTool,
    ToolBehavior,
    ToolDescriptor,
    json_schema_input,
)


def _noop_tool() -> RuntimeTool:
    async def noop(_: Any, __: Any) -> str:
        return "ok"

    return RuntimeTool(
        descriptor=ToolDescriptor(
            name="noop",
            input=json_schema_input({"type": "object"}),
            behavior=ToolBehavior(effect="read"),
        ),
        execute=noop,
    )


async def test_a_child_that_fails_after_spending_tokens_is_still_charged() -> None:
    def spends_then_fails() -> list[Any]:
        return [
            ScriptedTurn(tool_calls=call("noop").tool_calls, usage=usage(30, 0.5)),
            ProviderResponseError("down", provider_id="worker"),
        ]

    provider = script("worker", spends_then_fails() * 3)
    async with runtime_for(provider, tools=[_noop_tool()]) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(budget=InMemoryBudgetLedger(BudgetLimits(max_total_tokens=1000)))
        worker = agent("worker", tools=("noop",))
        outcome = await runner.run(root, worker, "go", failure_policy=COLLECT)
        assert outcome.status == "failed"
        snapshot = await root.budget.snapshot()
        assert (snapshot.total_tokens_used, snapshot.cost_usd_used) == (30, 0.5)
        # Every failed attempt of a retried child is charged, and a budget it passes stops it.
        with pytest.raises(ChildRunError):
            await runner.run(
                root, worker, "go", effect="read", failure_policy=ChildFailurePolicy.retry_safe(2)
            )
        assert (await root.budget.snapshot()).total_tokens_used == 90
        provider.add_turns(*spends_then_fails() * 3)
        tight = runner.create_root(budget=InMemoryBudgetLedger(BudgetLimits(max_total_tokens=40)))
        calls = len(provider.calls)
        with pytest.raises(ChildRunError, match="after 2 attempts"):
            await runner.run(
                tight, worker, "go", effect="read", failure_policy=ChildFailurePolicy.retry_safe(3)
            )
        assert len(provider.calls) - calls == 4  # two attempts of two model calls, no third
        assert (await tight.budget.snapshot()).total_tokens_used == 60


async def test_a_grandchild_sub_budget_is_checked_against_the_whole_chain() -> None:
    tree = RunTree()
    root = tree.create_root(
        services=RuntimeServices(),
        budget=InMemoryBudgetLedger(BudgetLimits(max_total_tokens=100, max_child_runs=10)),
    )
    child = tree.derive_child(root, narrow=ScopeNarrowing(budget=BudgetLimits(max_total_tokens=80)))
    await root.budget.record_usage(Usage(total_tokens=90))  # a sibling spent most of the root
    with pytest.raises(ScopeWideningError, match="left"):
        tree.derive_child(child, narrow=ScopeNarrowing(budget=BudgetLimits(max_total_tokens=50)))


def test_dotdot_and_symlinked_roots_cannot_escape(tmp_path: Path) -> None:
    inside = tmp_path / "inside"
    outside = tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    os.symlink(outside, inside / "link")
    tree = RunTree()
    root = tree.create_root(
        services=RuntimeServices(), workspace_policy=WorkspacePolicy(root=str(inside))
    )
    for path in (str(inside / ".." / "outside"), str(inside / "link"), str(tmp_path)):
        with pytest.raises(ScopeWideningError):
            tree.derive_child(root, narrow=ScopeNarrowing(root=path))
        with pytest.raises(ScopeWideningError):
            tree.derive_child(root, narrow=ScopeNarrowing(allowed_roots=[path]))
    # A prefix that is not a parent directory: /x/inside-evil is not inside /x/inside.
    evil = tmp_path / "inside-evil"
    evil.mkdir()
    with pytest.raises(ScopeWideningError):
        tree.derive_child(root, narrow=ScopeNarrowing(root=str(evil)))
    assert len(tree) == 1


async def test_parent_cancel_mid_run_leaves_no_task() -> None:
    started = asyncio.Event()

    async def hang(_: Any, __: Any) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    tool = RuntimeTool(
        descriptor=ToolDescriptor(
            name="hang",
            input=json_schema_input({"type": "object"}),
            behavior=ToolBehavior(effect="read"),
        ),
        execute=hang,
    )
    before = set(asyncio.all_tasks())
    provider = script("worker", [call("hang"), "never"])
    async with runtime_for(provider, tools=[tool]) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(run_id="root")
        task = asyncio.create_task(
            runner.run(root, agent("worker", tools=("hang",)), "go", failure_policy=COLLECT)
        )
        async with asyncio.timeout(5):
            await started.wait()
        runner.tree.cancel_tree("root")
        async with asyncio.timeout(5):
            outcome = await task
        assert outcome.status == "cancelled"
    await asyncio.sleep(0)
    left = set(asyncio.all_tasks()) - before - {asyncio.current_task()}
    assert not left
