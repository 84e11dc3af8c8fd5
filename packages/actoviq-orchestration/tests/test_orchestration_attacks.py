"""Adversarial probes of the orchestration promises: scope narrowing, budgets (chained, raced,
failed children), cancellation, graph nodes raising, bad constructor inputs, adopted scopes."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

import pytest
from orchestration_testkit import agent, call, runtime_for, script, usage

from actoviq.core import ProviderResponseError, Usage
from actoviq.orchestration import (
    COLLECT,
    BackgroundChildManager,
    BudgetExceededError,
    BudgetLimits,
    BudgetReservation,
    ChildFailurePolicy,
    ChildRunError,
    ChildRunner,
    DurableBudgetLedger,
    HandoffLoop,
    InMemoryBudgetLedger,
    NodeContext,
    OrchestrationConfigError,
    PresetError,
    RunTree,
    ScopeNarrowing,
    ScopeWideningError,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowGraphError,
    WorkflowNode,
    WorkflowNodeExecutionError,
    WorkspacePolicy,
    agent_workflow_node,
    panel_preset,
    reviewer_preset,
    router_preset,
    swarm_preset,
    team_preset,
)
from actoviq.providers.testing import ScriptedTurn
from actoviq.runtime import (
    InMemoryDurableChildStore,
    RuntimeServices,
    RuntimeTool,
    ToolBehavior,
    ToolDescriptor,
    json_schema_input,
)
from actoviq.storage.sqlite import SqliteStorage


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


@pytest.mark.parametrize("policy", ["fail-fast", "collect"])
@pytest.mark.parametrize("is_async", [True, False])
async def test_a_node_raising_cancelled_error_itself_is_a_typed_node_failure(
    policy: str, is_async: bool
) -> None:
    async def async_node(_: NodeContext) -> None:
        raise asyncio.CancelledError

    def sync_node(_: NodeContext) -> None:
        raise asyncio.CancelledError

    sibling_started = asyncio.Event()

    async def sibling(_: NodeContext) -> int:
        sibling_started.set()
        await asyncio.Event().wait()  # cancelled with the graph
        return 1

    graph = WorkflowGraph(
        nodes=[
            WorkflowNode(
                id="bad", execute=async_node if is_async else sync_node, failure_policy=policy
            ),
            WorkflowNode(id="sibling", execute=sibling),
        ]
    )
    before = set(asyncio.all_tasks())
    with pytest.raises(WorkflowNodeExecutionError) as raised:
        async with asyncio.timeout(5):
            await graph.execute(input=None, scope=RunTree().create_root(services=RuntimeServices()))
    assert raised.value.node_id == "bad" and raised.value.code == "WORKFLOW_NODE_FAILED"
    assert isinstance(raised.value.cause, asyncio.CancelledError)
    assert not set(asyncio.all_tasks()) - before - {asyncio.current_task()}


async def test_concurrent_claims_and_reservations_through_a_sub_budget_never_overshoot(
    tmp_path: Path,
) -> None:
    # The parent ledger awaits (a SQLite row), so the claims and reservations interleave.
    async with await SqliteStorage.open(str(tmp_path / "ledger.db")) as storage:
        ledger = await DurableBudgetLedger.open(
            storage.ledgers, "tree", BudgetLimits(max_child_runs=10, max_total_tokens=1000)
        )
        tree = RunTree()
        root = tree.create_root(services=RuntimeServices(), budget=ledger)
        child = tree.derive_child(
            root, narrow=ScopeNarrowing(budget=BudgetLimits(max_child_runs=1, max_total_tokens=10))
        )
        claims = await asyncio.gather(
            *(child.budget.claim_child(2) for _ in range(4)), return_exceptions=True
        )
        holds = await asyncio.gather(
            *(child.budget.reserve(tokens=10) for _ in range(4)), return_exceptions=True
        )
        assert [type(c).__name__ for c in claims].count("NoneType") == 1
        assert sum(isinstance(c, BudgetExceededError) for c in claims) == 3
        [held] = [h for h in holds if isinstance(h, BudgetReservation)]
        assert sum(isinstance(h, BudgetExceededError) for h in holds) == 3
        tree_row = await ledger.snapshot()
        own = await child.budget.snapshot()
        # No phantom child and no reservation beyond the sub-budget, on either ledger.
        assert (tree_row.child_runs_started, tree_row.reserved_tokens) == (1, 10)
        assert (own.child_runs_started, own.reserved_tokens) == (1, 10)
        await child.budget.release(held)
        assert (await ledger.snapshot()).reserved_tokens == 0
        assert (await child.budget.snapshot()).reserved_tokens == 0


def _node(node_id: str = "n") -> WorkflowNode:
    return WorkflowNode(id=node_id, execute=lambda _: 1)


def _bad(value: object) -> Any:
    """A deliberately ill-typed argument."""
    return value


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (lambda: WorkspacePolicy(root=""), OrchestrationConfigError),
        (lambda: WorkspacePolicy(root=_bad(7)), OrchestrationConfigError),
        (lambda: WorkspacePolicy(root="/tmp\x00x"), OrchestrationConfigError),
        (lambda: WorkspacePolicy(workspace_id=" "), OrchestrationConfigError),
        (lambda: WorkspacePolicy(allowed_roots=_bad(3)), OrchestrationConfigError),
        (lambda: ScopeNarrowing(root=""), OrchestrationConfigError),
        (lambda: ScopeNarrowing(allowed_roots=[""]), OrchestrationConfigError),
        (lambda: ScopeNarrowing(allowed_roots=_bad(5)), OrchestrationConfigError),
        (lambda: ScopeNarrowing(allowed_tools=_bad(5)), OrchestrationConfigError),
        (lambda: ScopeNarrowing(allowed_tools=_bad([1])), OrchestrationConfigError),
        (lambda: ScopeNarrowing(metadata=_bad("x")), OrchestrationConfigError),
        (lambda: ScopeNarrowing(budget=_bad({"max_child_runs": 1})), OrchestrationConfigError),
        (
            lambda: RunTree().create_root(services=RuntimeServices(), allowed_tools=_bad(5)),
            OrchestrationConfigError,
        ),
        (
            lambda: RunTree().create_root(services=RuntimeServices(), run_id=_bad([])),
            OrchestrationConfigError,
        ),
        (
            lambda: RunTree().create_root(services=RuntimeServices(), run_id=" "),
            OrchestrationConfigError,
        ),
        (lambda: InMemoryBudgetLedger(_bad("unbounded")), OrchestrationConfigError),
        (lambda: WorkflowGraph(nodes=_bad(5)), WorkflowGraphError),
        (lambda: WorkflowGraph(nodes=_bad(["n"])), WorkflowGraphError),
        (lambda: WorkflowGraph(nodes=[WorkflowNode(id="n", execute=_bad(3))]), WorkflowGraphError),
        (lambda: WorkflowGraph(nodes=[_node()], edges=_bad([("n", "m")])), WorkflowGraphError),
        (
            lambda: WorkflowGraph(
                nodes=[_node(), _node("m")],
                edges=[WorkflowEdge(source="n", target="m", when=_bad(1))],
            ),
            WorkflowGraphError,
        ),
        (lambda: team_preset(_bad(5), _node("r")), PresetError),
        (lambda: panel_preset(_bad(["a"]), _node("r")), PresetError),
        (lambda: reviewer_preset(_node("a"), _bad(None), _node("r")), PresetError),
        (lambda: router_preset(_node(), _bad(["route"])), PresetError),
        (lambda: swarm_preset([_node()], routes=_bad([("n", "m")])), PresetError),
    ],
)
def test_bad_constructor_inputs_are_typed_errors(build: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        build()


async def test_agent_workflow_node_refuses_an_unknown_output_mode_and_a_non_callable_input() -> (
    None
):
    async with runtime_for(script("worker", ["x"])) as runtime:
        runner = ChildRunner(runtime)
        with pytest.raises(PresetError, match="output"):
            agent_workflow_node("n", runner, agent("worker"), input=lambda _: "x", output="values")  # type: ignore[arg-type]
        with pytest.raises(PresetError, match="input"):
            agent_workflow_node("n", runner, agent("worker"), input="x")  # type: ignore[arg-type]


def test_a_narrowed_blank_root_is_not_the_current_directory(tmp_path: Path) -> None:
    tree = RunTree()
    root = tree.create_root(
        services=RuntimeServices(), workspace_policy=WorkspacePolicy(root=os.getcwd())
    )
    with pytest.raises(OrchestrationConfigError):
        tree.derive_child(root, narrow=ScopeNarrowing(root=""))
    assert len(tree) == 1


async def test_streaming_a_scope_of_another_tree_leaves_nothing_adopted() -> None:
    async with runtime_for(script("a", ["one", "two"])) as runtime:
        runner = ChildRunner(runtime)
        loop = HandoffLoop(runner)
        foreign = RunTree().create_root(services=runtime.services)
        async with loop.stream(foreign, agent("a"), "hi") as stream:
            async for _ in stream:
                pass
            assert (await stream.result()).status == "completed"
        assert len(runner.tree) == 0
        other = RunTree().create_root(services=runtime.services)
        async with runner.stream_scope(other, agent("a"), "again") as handle:
            await handle.result()
        assert len(runner.tree) == 0
        own = runner.create_root()  # a scope of the runner's own tree stays until completed
        async with runner.stream_scope(own, agent("a"), "x") as handle:
            with contextlib.suppress(Exception):
                await handle.result()
        assert own.run_id in runner.tree


async def test_a_background_spawn_refuses_a_bad_session_mode_or_a_blank_id_up_front() -> None:
    async with runtime_for(script("a", ["x"])) as runtime:
        runner = ChildRunner(runtime)
        store = InMemoryDurableChildStore()
        async with BackgroundChildManager(runner, store) as manager:
            root = runner.create_root()
            with pytest.raises(OrchestrationConfigError, match="session_mode"):
                await manager.spawn(root, agent("a"), "go", effect="read", session_mode=_bad("x"))
            for blank in ("", "  "):
                with pytest.raises(OrchestrationConfigError, match="child id"):
                    await manager.spawn(root, agent("a"), "go", effect="read", child_id=blank)
            assert await store.list_children(tenant_id="default") == []
