"""Run tree and scopes (spec 04 §7.1 rows 10-15), narrowing that never widens (§8.2-18) and
persisted scopes."""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs
import pytest

from actoviq.core import AbortController
from actoviq.events import SequentialIdFactory
from actoviq.orchestration import (
    BudgetExceededError,
    BudgetLimits,
    ConcurrencyController,
    InMemoryBudgetLedger,
    OrchestrationConfigError,
    OrchestrationDeadlineExceededError,
    OrchestrationScope,
    PersistedScope,
    RunTree,
    RunTreeConflictError,
    ScopeNarrowing,
    ScopeWideningError,
    SecurityPolicyRef,
    SubBudgetLedger,
    TenantSessionNamespace,
    WorkspacePolicy,
    persist_scope,
    restore_scope,
)
from actoviq.runtime import RuntimeServices

SERVICES = RuntimeServices()


def _tree() -> RunTree:
    return RunTree(ids=SequentialIdFactory())


def test_create_root_validates_before_changing_the_tree() -> None:
    tree = _tree()
    for deadline in (math.nan, -1, math.inf):
        with pytest.raises(OrchestrationConfigError, match="deadline"):
            tree.create_root(services=SERVICES, deadline=deadline)
    with pytest.raises(OrchestrationConfigError, match="policy id"):
        SecurityPolicyRef(id=" ")
    with pytest.raises(OrchestrationConfigError, match="Tenant id"):
        TenantSessionNamespace(tenant_id="")
    with pytest.raises(OrchestrationConfigError, match="JSON"):
        tree.create_root(services=SERVICES, metadata={"bad": {1, 2}})
    assert len(tree) == 0


def test_root_defaults_freeze_policy_values_and_refuse_duplicates() -> None:
    tree = _tree()
    root = tree.create_root(
        services=SERVICES,
        run_id="root",
        security_policy=SecurityPolicyRef(id="strict", attributes={"tags": ["a"]}),
        workspace_policy=WorkspacePolicy(allowed_roots=["/srv/a"]),
        metadata={"k": {"v": 1}},
    )
    assert root.depth == 0 and root.parent_run_id is None and root.lineage == ()
    assert root.tenant_session == TenantSessionNamespace()
    assert root.workspace_policy.access == "read-write"
    assert isinstance(root.security_policy.attributes, MappingProxyType)
    with pytest.raises(TypeError):
        root.security_policy.attributes["x"] = 1  # type: ignore[index]
    assert root.security_policy.attributes["tags"] == ("a",)
    assert isinstance(root.workspace_policy.allowed_roots, tuple)
    with pytest.raises(TypeError):
        root.metadata["k"]["v"] = 2  # type: ignore[index]
    assert len(root.trace.trace_id) == 32 and len(root.trace.span_id) == 16
    with pytest.raises(RunTreeConflictError, match="already contains"):
        tree.create_root(services=SERVICES, run_id="root")
    tree.adopt(root)  # known: a no-op
    assert len(tree) == 1


def test_children_inherit_by_reference_and_inspect_sorts() -> None:
    tree = _tree()
    root = tree.create_root(services=SERVICES, run_id="root", deadline=time.time() * 1000 + 1e6)
    child = tree.derive_child(root, "child")
    grandchild = tree.derive_child(child, "grandchild")
    with pytest.raises(RunTreeConflictError, match="already contains child"):
        tree.derive_child(root, "child")
    for scope in (child, grandchild):
        for field in (
            "services",
            "budget",
            "concurrency",
            "security_policy",
            "tenant_session",
            "workspace_policy",
            "metadata",
        ):
            assert getattr(scope, field) is getattr(root, field)
        assert scope.deadline == root.deadline
        assert scope.trace.trace_id == root.trace.trace_id
    assert (child.depth, grandchild.depth) == (1, 2)
    assert grandchild.lineage == ("root", "child")
    assert child.trace.parent_span_id == root.trace.span_id
    assert grandchild.trace.parent_run_id == "child"
    assert [node.run_id for node in tree.inspect()] == ["child", "grandchild", "root"]
    assert tree.inspect()[2].child_run_ids == ("child",)


def test_cancel_and_complete_prune_the_tree() -> None:
    tree = _tree()
    tree.cancel_tree("missing")
    tree.complete("missing")
    root = tree.create_root(services=SERVICES, run_id="root")
    child = tree.derive_child(root, "child")
    grandchild = tree.derive_child(child, "grandchild")
    tree.complete("root")
    tree.complete("child")
    assert len(tree) == 3
    tree.complete("grandchild")
    assert len(tree) == 0
    assert not grandchild.signal.aborted


def test_cancel_tree_aborts_every_descendant_with_one_reason() -> None:
    tree = _tree()
    root = tree.create_root(services=SERVICES, run_id="root")
    child = tree.derive_child(root, "child")
    grandchild = tree.derive_child(child, "grandchild")
    sibling = tree.derive_child(root, "sibling")
    tree.cancel_tree("child")
    assert child.signal.aborted and grandchild.signal.aborted
    assert child.signal.reason is grandchild.signal.reason
    assert not root.signal.aborted and not sibling.signal.aborted
    tree.cancel_tree("root")
    assert sibling.signal.aborted


async def test_signals_and_deadlines_abort_roots_and_children() -> None:
    tree = _tree()
    controller = AbortController()
    controller.abort(RuntimeError("stop"))
    assert tree.create_root(services=SERVICES, signal=controller.signal).signal.aborted
    soon = tree.create_root(services=SERVICES, deadline=time.time() * 1000 + 5)
    child = tree.derive_child(soon)
    fired = asyncio.Event()
    child.signal.add_listener(lambda reason: fired.set())
    async with asyncio.timeout(2):
        await fired.wait()
    assert isinstance(child.signal.reason, OrchestrationDeadlineExceededError)
    assert "deadline exceeded" in str(child.signal.reason)


async def test_persisted_scopes_round_trip_and_restore_with_given_parts() -> None:
    tree = _tree()
    root = tree.create_root(
        services=SERVICES,
        run_id="root",
        budget=InMemoryBudgetLedger(BudgetLimits(max_child_runs=3)),
        tenant_session=TenantSessionNamespace(tenant_id="t", namespace="n", session_id="s"),
        metadata={"k": 1},
    )
    child = tree.derive_child(root, "child")
    await child.budget.claim_child(1)
    persisted = await persist_scope(child)
    wire = json.loads(json.dumps(persisted.to_json()))
    assert wire["runId"] == "child" and wire["parentRunId"] == "root"
    assert wire["budget"]["childRunsStarted"] == 1
    assert wire["tenantSession"] == {"tenantId": "t", "namespace": "n", "sessionId": "s"}
    back = PersistedScope.from_json(wire)
    assert back.to_json() == persisted.to_json()
    signal = AbortController().signal
    concurrency = ConcurrencyController(2)
    restored = restore_scope(back, services=SERVICES, signal=signal, concurrency=concurrency)
    assert restored.signal is signal and restored.concurrency is concurrency
    assert restored.trace == child.trace and restored.lineage == ("root",)
    fresh = restore_scope(back, services=SERVICES)
    assert fresh.concurrency is not root.concurrency and fresh.concurrency.capacity == 8
    assert (await fresh.budget.snapshot()).child_runs_started == 1
    with pytest.raises(OrchestrationConfigError):
        PersistedScope.from_json({"runId": " "})


# -- narrowing (§8.2-18) -------------------------------------------------------------------------


def test_a_child_may_narrow_every_field(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    tree = _tree()
    root = tree.create_root(
        services=SERVICES,
        deadline=time.time() * 1000 + 60_000,
        workspace_policy=WorkspacePolicy(
            workspace_id="w", root=str(tmp_path), allowed_roots=[str(tmp_path)]
        ),
        allowed_tools=["read", "write"],
        budget=InMemoryBudgetLedger(BudgetLimits(max_child_runs=10, max_total_tokens=100)),
        metadata={"a": 1},
    )
    earlier = time.time() * 1000 + 1_000
    child = tree.derive_child(
        root,
        narrow=ScopeNarrowing(
            deadline=earlier,
            access="read-only",
            allowed_roots=[str(tmp_path / "a")],
            root=str(tmp_path / "a" / "b"),
            allowed_tools=["read"],
            budget=BudgetLimits(max_child_runs=2, max_total_tokens=50),
            metadata={"b": 2},
        ),
    )
    assert child.deadline == earlier
    assert child.workspace_policy.access == "read-only"
    assert child.workspace_policy.workspace_id == "w"
    assert child.allowed_tools == frozenset({"read"})
    assert isinstance(child.budget, SubBudgetLedger) and child.budget.parent is root.budget
    assert dict(child.metadata) == {"a": 1, "b": 2}
    assert child.concurrency is root.concurrency and child.services is root.services
    grandchild = tree.derive_child(child)
    assert grandchild.budget is child.budget and grandchild.allowed_tools == {"read"}


@pytest.mark.parametrize(
    ("narrow", "field"),
    [
        ({"deadline_offset": 120_000}, "deadline"),
        ({"access": "read-write"}, "workspace.access"),
        ({"allowed_roots": "outside"}, "workspace.allowedRoots"),
        ({"allowed_roots": "symlink"}, "workspace.allowedRoots"),
        ({"root": "outside"}, "workspace.root"),
        ({"allowed_tools": ["read", "delete"]}, "allowedTools"),
        ({"budget": BudgetLimits(max_total_tokens=101)}, "budget.maxTotalTokens"),
        ({"budget": BudgetLimits(max_child_runs=11)}, "budget.maxChildRuns"),
        ({"budget": BudgetLimits(max_depth=4)}, "budget.maxDepth"),
    ],
)
def test_widening_is_refused_typed_and_changes_nothing(
    tmp_path: Path, narrow: dict[str, Any], field: str
) -> None:
    inside = tmp_path / "inside"
    outside = tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    os.symlink(outside, inside / "escape")
    tree = _tree()
    root = tree.create_root(
        services=SERVICES,
        run_id="root",
        deadline=time.time() * 1000 + 60_000,
        workspace_policy=WorkspacePolicy(access="read-only", allowed_roots=[str(inside)]),
        allowed_tools=["read"],
        budget=InMemoryBudgetLedger(
            BudgetLimits(max_child_runs=10, max_total_tokens=100, max_depth=3)
        ),
    )
    values = dict(narrow)
    if "deadline_offset" in values:
        values = {"deadline": time.time() * 1000 + values.pop("deadline_offset")}
    for key in ("allowed_roots", "root"):
        if values.get(key) == "outside":
            values[key] = [str(outside)] if key == "allowed_roots" else str(outside)
        if values.get(key) == "symlink":
            values[key] = [str(inside / "escape")]
    if "allowed_tools" in values:
        values["allowed_tools"] = frozenset(values["allowed_tools"])
    with pytest.raises(ScopeWideningError) as caught:
        tree.derive_child(root, "child", narrow=ScopeNarrowing(**values))
    assert caught.value.code == "SCOPE_WIDENING"
    assert caught.value.details is not None and caught.value.details["field"] == field
    assert "child" not in tree


async def test_a_sub_budget_is_checked_against_what_the_parent_has_left() -> None:
    tree = _tree()
    root = tree.create_root(
        services=SERVICES, budget=InMemoryBudgetLedger(BudgetLimits(max_total_tokens=100))
    )
    from actoviq.core import Usage

    await root.budget.record_usage(Usage(total_tokens=80))
    with pytest.raises(ScopeWideningError, match="left"):
        tree.derive_child(root, narrow=ScopeNarrowing(budget=BudgetLimits(max_total_tokens=30)))
    child = tree.derive_child(root, narrow=ScopeNarrowing(budget=BudgetLimits(max_total_tokens=20)))
    with pytest.raises(BudgetExceededError):
        await child.budget.record_usage(Usage(total_tokens=21))
    assert (await root.budget.snapshot()).total_tokens_used == 101


def test_a_wide_tree_links_its_children_with_one_listener_and_aborts_them_all() -> None:
    tree = _tree()
    outside = AbortController()
    root = tree.create_root(services=SERVICES, run_id="root", signal=outside.signal)
    children = [tree.derive_child(root, f"c{index:02d}") for index in range(40)]
    grandchild = tree.derive_child(children[3], "g")
    assert root.signal.listener_count == 1  # one link for every child, not one each
    assert children[3].signal.listener_count == 1
    tree.complete("c00")  # pruned: no longer linked
    assert tree.scope("c00") is None
    reason = RuntimeError("host stop")
    outside.abort(reason)
    assert all(child.signal.reason is reason for child in children[1:])
    assert grandchild.signal.reason is reason
    assert not children[0].signal.aborted
    late = tree.derive_child(root, "late")  # a child of an aborted parent is born aborted
    assert late.signal.reason is reason


def test_pruning_a_tree_removes_every_link_it_made() -> None:
    """A node's disposers (its listener on the outside signal, its children's fan-out link)
    run when it is pruned, and a node that never linked anything has nothing to run."""
    tree = _tree()
    outside = AbortController()
    root = tree.create_root(services=SERVICES, run_id="root", signal=outside.signal)
    children = [tree.derive_child(root, f"c{index}") for index in range(3)]
    assert (outside.signal.listener_count, root.signal.listener_count) == (1, 1)
    for child in children:
        tree.complete(child.run_id)
    assert root.signal.listener_count == 1  # the root itself is not completed yet
    tree.complete("root")
    assert (outside.signal.listener_count, root.signal.listener_count, len(tree)) == (0, 0, 0)
    outside.abort("late")
    assert not root.signal.aborted and not children[0].signal.aborted


async def test_a_child_keeps_its_parents_deadline_when_the_root_was_made_without_a_loop() -> None:
    tree = _tree()
    deadline = time.time() * 1000 + 30
    holder: list[Any] = []

    def outside_the_loop() -> None:
        holder.append(tree.create_root(services=SERVICES, deadline=deadline))

    await asyncio.get_running_loop().run_in_executor(None, outside_the_loop)
    child = tree.derive_child(holder[0])  # same deadline, but nothing armed above it
    narrower = tree.derive_child(child, narrow=ScopeNarrowing(deadline=deadline - 10))
    fired = asyncio.Event()
    child.signal.add_listener(lambda reason: fired.set())
    async with asyncio.timeout(2):
        await fired.wait()
    assert isinstance(child.signal.reason, OrchestrationDeadlineExceededError)
    assert narrower.signal.aborted


def test_a_derived_child_is_the_scope_its_fields_describe_and_stays_frozen() -> None:
    """A child without narrowing is built from a guard-free draft: it must be exactly an
    ``OrchestrationScope`` with every field set as the constructor would, and read-only."""
    tree = _tree()
    root = tree.create_root(
        services=SERVICES,
        run_id="root",
        deadline=time.time() * 1000 + 1e6,
        allowed_tools=["a", "b"],
        metadata={"k": [1]},
    )
    child = tree.derive_child(root, "child")
    expected = OrchestrationScope(
        run_id="child",
        parent_run_id="root",
        depth=1,
        lineage=("root",),
        trace=child.trace,
        signal=child.signal,
        deadline=root.deadline,
        security_policy=root.security_policy,
        tenant_session=root.tenant_session,
        workspace_policy=root.workspace_policy,
        allowed_tools=root.allowed_tools,
        budget=root.budget,
        concurrency=root.concurrency,
        services=root.services,
        metadata=root.metadata,
    )
    assert type(child) is OrchestrationScope
    for field in attrs.fields(OrchestrationScope):
        mine, theirs = getattr(child, field.name), getattr(expected, field.name)
        assert mine is theirs or (type(mine) is tuple and mine == theirs), field.name
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        child.depth = 5  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        del child.run_id  # type: ignore[misc]
    assert attrs.evolve(child, depth=3).depth == 3 and child.depth == 1
    assert child.signal is not root.signal and not child.signal.aborted
    tree.cancel_tree("root")
    assert child.signal.aborted
