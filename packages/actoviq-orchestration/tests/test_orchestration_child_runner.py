"""``ChildRunner`` (spec 04 §7.1 rows 16-17, §7.2 rows 18-23, §7.12 rows 122-123, §8.2-13/15/16/17)
and the migration acceptance list (seed 001 §12): parent cancel cancels the whole tree, ten members
share one provider and one session service, side-effect children are never retry-safe."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import pytest
from orchestration_testkit import agent, call, runtime_for, script, usage

from actoviq.core import ProviderResponseError, RunError, ToolCallItem
from actoviq.events import InMemoryEventSink
from actoviq.orchestration import (
    COLLECT,
    BudgetExceededError,
    BudgetLimits,
    ChildFailurePolicy,
    ChildPolicyError,
    ChildRunError,
    ChildRunner,
    ChildRunOutcome,
    ChildScopeError,
    ConcurrencyController,
    InMemoryBudgetLedger,
    NodeContext,
    RunTree,
    ScopeNarrowing,
    ScopeWideningError,
    TenantSessionNamespace,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowNode,
    child_session_id,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InMemorySessionStore,
    InterruptionDecision,
    RuntimeServices,
    RuntimeTool,
    StoreRuntimeSessionAdapter,
    ToolBehavior,
    ToolDescriptor,
    json_schema_input,
)


def _fails(times: int, then: str) -> list[Any]:
    return [ProviderResponseError("flaky", provider_id="worker")] * times + [then]


async def test_fail_fast_raises_child_run_error_and_collect_reports() -> None:
    provider = script("worker", [ProviderResponseError("boom", provider_id="worker")] * 2)
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root()
        with pytest.raises(ChildRunError, match="failed after 1 attempt\\.") as caught:
            await runner.run(root, agent("worker"), "go")
        assert caught.value.attempts == 1 and caught.value.name == "ChildRunError"
        assert isinstance(caught.value.__cause__, ProviderResponseError)
        outcome = await runner.run(root, agent("worker"), "go", failure_policy=COLLECT)
    assert (outcome.status, outcome.attempts) == ("failed", 1)
    assert outcome.error is not None and outcome.error.message == "boom"


@pytest.mark.parametrize(
    ("effect", "key", "message"),
    [
        (None, None, "only valid for read or idempotent-write"),
        ("side-effect", "k", "only valid for read or idempotent-write"),
        ("idempotent-write", None, "requires an idempotencyKey"),
        ("idempotent-write", " ", "requires an idempotencyKey"),
    ],
)
async def test_retry_safe_is_refused_for_unsafe_children_before_anything_runs(
    effect: Any, key: str | None, message: str
) -> None:
    provider = script("worker", ["never"])
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(budget=InMemoryBudgetLedger())
        with pytest.raises(ChildPolicyError, match=message):
            await runner.run(
                root,
                agent("worker"),
                "go",
                effect=effect,
                idempotency_key=key,
                failure_policy=ChildFailurePolicy.retry_safe(3),
            )
        assert len(runner.tree) == 1  # no child node was created
        assert (await root.budget.snapshot()).child_runs_started == 0
    assert provider.calls == []


def test_retry_safe_needs_at_least_two_attempts() -> None:
    with pytest.raises(ChildPolicyError, match="at least 2"):
        ChildFailurePolicy.retry_safe(1)


async def test_retry_safe_read_recovers_with_the_same_run_id_and_one_claim() -> None:
    provider = script("worker", _fails(2, "recovered"))
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root()
        outcome = await runner.run(
            root,
            agent("worker"),
            "go",
            effect="read",
            failure_policy=ChildFailurePolicy.retry_safe(3),
        )
    assert (outcome.status, outcome.attempts, outcome.output) == ("completed", 3, "recovered")
    assert {c.context.run_id for c in provider.calls} == {outcome.child_run_id}
    assert (await root.budget.snapshot()).child_runs_started == 1


async def test_retry_safe_idempotent_write_with_a_key_and_retry_when_veto() -> None:
    provider = script("worker", _fails(1, "written"))
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root()
        outcome = await runner.run(
            root,
            agent("worker"),
            "go",
            effect="idempotent-write",
            idempotency_key="write-42",
            failure_policy=ChildFailurePolicy.retry_safe(3),
        )
        assert (outcome.status, outcome.attempts) == ("completed", 2)
        vetoed = ChildFailurePolicy.retry_safe(5, retry_when=lambda error, attempt: False)
        failing = script("other", _fails(3, "late"))
        runtime.models.register(failing)
        with pytest.raises(ChildRunError, match="after 1 attempt"):
            await runner.run(root, agent("other"), "go", effect="read", failure_policy=vetoed)


async def test_a_budget_error_records_usage_and_is_never_retried() -> None:
    provider = script("worker", [ScriptedTurn(text="big", usage=usage(50))], repeat_last=True)
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(budget=InMemoryBudgetLedger(BudgetLimits(max_total_tokens=40)))
        with pytest.raises(ChildRunError, match="after 1 attempt") as raised:
            await runner.run(
                root,
                agent("worker"),
                "go",
                effect="read",
                failure_policy=ChildFailurePolicy.retry_safe(3),
            )
        outcome = await runner.run(root, agent("worker"), "again", failure_policy=COLLECT)
    assert isinstance(raised.value.__cause__, BudgetExceededError)
    assert outcome.status == "failed" and outcome.attempts == 1
    assert outcome.error is not None and outcome.error.code == "BUDGET_EXCEEDED"
    assert len(provider.calls) == 2  # one call per child: the budget error is not retried
    assert (await root.budget.snapshot()).total_tokens_used == 100


async def test_budget_claims_propagate_raw_even_with_collect() -> None:
    async with runtime_for(script("worker", ["a", "b"])) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(budget=InMemoryBudgetLedger(BudgetLimits(max_child_runs=1)))
        await runner.run(root, agent("worker"), "go")
        with pytest.raises(BudgetExceededError, match="exhausted"):
            await runner.run(root, agent("worker"), "go", failure_policy=COLLECT)
        assert len(runner.tree) == 1


async def test_a_reservation_is_held_while_the_child_runs_and_settled_by_its_usage() -> None:
    seen: list[int] = []
    ledger = InMemoryBudgetLedger(BudgetLimits(max_total_tokens=100))

    def answer(request: Any) -> ScriptedTurn:
        seen.append(ledger.snapshot_now().reserved_tokens)
        return ScriptedTurn(text="ok", usage=usage(10))

    async with runtime_for(script("worker", [answer])) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(budget=ledger)
        await runner.run(root, agent("worker"), "go", reserve_tokens=60)
        with pytest.raises(BudgetExceededError, match="reservation"):
            await runner.run(root, agent("worker"), "go", reserve_tokens=95)
    assert seen == [60]
    snapshot = ledger.snapshot_now()
    assert (snapshot.total_tokens_used, snapshot.reserved_tokens) == (10, 0)


async def test_a_foreign_services_scope_and_disallowed_tools_are_refused() -> None:
    async with runtime_for(script("worker", ["x"])) as runtime:
        runner = ChildRunner(runtime)
        foreign = RunTree().create_root(services=RuntimeServices())
        with pytest.raises(ChildScopeError, match="inherit"):
            await runner.run(foreign, agent("worker"), "go")
        root = runner.create_root(allowed_tools=["search"])
        with pytest.raises(ScopeWideningError, match="delete"):
            await runner.run(root, agent("worker", tools=("search", "delete")), "go")
        with pytest.raises(ScopeWideningError):
            await runner.run(
                root,
                agent("worker", tools=("search",)),
                "go",
                narrow=ScopeNarrowing(allowed_tools=frozenset({"other"})),
            )


async def test_metadata_injection_overrides_the_callers_orchestration_key() -> None:
    provider = script("worker", ["ok"])
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(
            run_id="root",
            tenant_session=TenantSessionNamespace(tenant_id="t", namespace="n"),
            budget=InMemoryBudgetLedger(BudgetLimits(max_child_runs=4)),
        )
        outcome = await runner.run(
            root,
            agent("worker"),
            "go",
            metadata={"orchestration": "caller", "mine": 1},
            effect="read",
            idempotency_key="k1",
        )
    assert outcome.result is not None and outcome.result.metadata is not None
    metadata = outcome.result.metadata
    assert metadata["mine"] == 1
    injected = metadata["orchestration"]
    assert isinstance(injected, dict)
    assert set(injected) == {
        "runId",
        "parentRunId",
        "depth",
        "deadline",
        "trace",
        "securityPolicy",
        "tenantSession",
        "workspacePolicy",
        "budget",
        "effect",
        "idempotencyKey",
        "attempt",
    }
    assert (injected["runId"], injected["parentRunId"], injected["depth"]) == (
        outcome.child_run_id,
        "root",
        1,
    )
    assert (injected["effect"], injected["idempotencyKey"], injected["attempt"]) == (
        "read",
        "k1",
        1,
    )
    budget = injected["budget"]
    assert isinstance(budget, dict) and budget["childRunsStarted"] == 1
    assert injected["tenantSession"] == {"tenantId": "t", "namespace": "n", "sessionId": None}


async def test_injected_budget_counters_are_the_ledgers_when_each_child_starts() -> None:
    provider = script("worker", [ScriptedTurn(text="ok", usage=usage(7, 0.5))], repeat_last=True)
    ledger = InMemoryBudgetLedger(BudgetLimits(max_child_runs=5))
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(run_id="root", budget=ledger)
        first = await runner.run(root, agent("worker"), "go")
        second = await runner.run(root, agent("worker"), "go", effect="read", idempotency_key="k")
    budgets: list[Any] = []
    for outcome in (first, second):
        assert outcome.result is not None and outcome.result.metadata is not None
        injected: Any = outcome.result.metadata["orchestration"]
        budgets.append(injected["budget"])
    assert budgets[0]["childRunsStarted"] == 1 and budgets[0]["totalTokensUsed"] == 0
    assert (budgets[1]["childRunsStarted"], budgets[1]["totalTokensUsed"]) == (2, 7)
    assert budgets[1]["costUsdUsed"] == 0.5 and budgets[1]["limits"]["maxChildRuns"] == 5
    assert ledger.counters_now() == (2, 14, 1.0)
    budgets[0]["limits"]["maxChildRuns"] = 0  # each child's copy is its own
    assert budgets[1]["limits"]["maxChildRuns"] == 5


async def test_siblings_fill_their_own_fields_into_the_parents_metadata_template() -> None:
    """The injected object is a per-parent template filled per child: each child gets its own
    run id, span id and key, a plain copy of its own, and a value that is not strict JSON is
    still refused (typed) before the child runs."""
    provider = script("worker", ["ok"], repeat_last=True)
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(run_id="root")
        outcomes = await asyncio.gather(
            *(
                runner.run(root, agent("worker"), "go", effect="read", idempotency_key=f"k{i}")
                for i in range(3)
            )
        )
        bad = await runner.run(
            root, agent("worker"), "go", idempotency_key="\ud800", failure_policy=COLLECT
        )
        # Another parent of the same shape shares the compiled builder, never the values.
        other = runner.create_root(run_id="other")
        elsewhere = await runner.run(other, agent("worker"), "go")
    assert elsewhere.result is not None and elsewhere.result.metadata is not None
    theirs: Any = elsewhere.result.metadata["orchestration"]
    assert (theirs["parentRunId"], theirs["runId"]) == ("other", elsewhere.child_run_id)
    assert theirs["trace"]["traceId"] == other.trace.trace_id != root.trace.trace_id
    injected: list[Any] = []
    for outcome in outcomes:
        assert outcome.result is not None and outcome.result.metadata is not None
        injected.append(outcome.result.metadata["orchestration"])
    assert [item["runId"] for item in injected] == [item.child_run_id for item in outcomes]
    spans = [item.scope.trace.span_id for item in outcomes]
    assert [item["trace"]["spanId"] for item in injected] == spans and len(set(spans)) == 3
    assert [item["idempotencyKey"] for item in injected] == ["k0", "k1", "k2"]
    assert [item["budget"]["childRunsStarted"] for item in injected] == [1, 2, 3]
    injected[0]["securityPolicy"]["id"] = "changed"
    injected[0]["trace"]["traceId"] = "changed"
    injected[0]["securityPolicy"]["attributes"]["added"] = 1
    injected[0]["workspacePolicy"]["allowedRoots"].append("/elsewhere")
    assert injected[1]["securityPolicy"] == injected[2]["securityPolicy"]
    assert injected[1]["securityPolicy"]["attributes"] == {}
    assert injected[1]["workspacePolicy"]["allowedRoots"] == []
    assert injected[1]["parentRunId"] == "root" and injected[1]["depth"] == 1
    assert injected[1]["securityPolicy"]["id"] != "changed"
    assert injected[1]["trace"]["traceId"] == outcomes[1].scope.trace.trace_id
    assert bad.status == "failed" and bad.error is not None
    assert bad.error.code == "INVALID_JSON_VALUE" and len(provider.calls) == 4


async def test_a_child_that_waited_for_a_permit_sees_the_ledger_when_it_starts() -> None:
    """The injected metadata is built once the permit is held (a waiting child keeps none alive):
    the second child of capacity 1 sees the usage the first recorded while it waited."""
    provider = script("worker", [ScriptedTurn(text="ok", usage=usage(7, 0.5))], repeat_last=True)
    ledger = InMemoryBudgetLedger(BudgetLimits(max_child_runs=5))
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(
            run_id="root", budget=ledger, concurrency=ConcurrencyController(1)
        )
        first, second = await asyncio.gather(
            runner.run(root, agent("worker"), "one"), runner.run(root, agent("worker"), "two")
        )
    budgets: list[Any] = []
    for outcome in (first, second):
        assert outcome.result is not None and outcome.result.metadata is not None
        injected: Any = outcome.result.metadata["orchestration"]
        budgets.append(injected["budget"])
    assert (budgets[0]["childRunsStarted"], budgets[0]["totalTokensUsed"]) == (1, 0)
    assert (budgets[1]["childRunsStarted"], budgets[1]["totalTokensUsed"]) == (2, 7)
    assert budgets[1]["costUsdUsed"] == 0.5


def test_child_session_ids_are_url_encoded_like_encode_uri_component() -> None:
    tree = RunTree()
    root = tree.create_root(
        services=RuntimeServices(),
        tenant_session=TenantSessionNamespace(
            tenant_id="acme corp", namespace="ns/1", session_id="s:1(x)"
        ),
    )
    child = tree.derive_child(root, "child-run")
    assert child_session_id(child, "child") == "acme%20corp:ns%2F1:s%3A1(x):child-run"
    assert child_session_id(child, "transfer") == "s:1(x)"
    assert child_session_id(child, "ephemeral") is None
    plain = tree.derive_child(tree.create_root(services=RuntimeServices()), "c2")
    assert child_session_id(plain, "child") == "default:default:c2"


async def test_children_run_ephemeral_without_a_session_service() -> None:
    provider = script("worker", ["ok"])
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        outcome = await runner.run(runner.create_root(), agent("worker"), "go")
    assert outcome.status == "completed" and outcome.result is not None
    assert outcome.result.session_id is None


async def test_child_sessions_are_tagged_with_the_parent_run() -> None:
    store = InMemorySessionStore()
    services = RuntimeServices({"sessions": lambda: StoreRuntimeSessionAdapter(store)})
    provider = script("worker", ["ok"])
    async with runtime_for(provider, services=services) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(run_id="root")
        outcome = await runner.run(root, agent("worker"), "go")
    assert outcome.result is not None and outcome.result.session_id is not None
    record = await store.get(tenant_id="default", session_id=outcome.result.session_id)
    assert record is not None and record.metadata is not None
    assert record.metadata["parentRunId"] == "root"
    assert record.metadata["childRunId"] == outcome.child_run_id
    assert record.revision == 1  # the child's turn was appended to its own session


async def test_ten_children_share_one_runtime_provider_and_session_service() -> None:
    constructions = {"providers": 0, "sessions": 0}

    class CountingProvider(ScriptedProvider):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            constructions["providers"] += 1
            super().__init__(*args, **kwargs)

    store = InMemorySessionStore()

    def sessions() -> StoreRuntimeSessionAdapter:
        constructions["sessions"] += 1
        return StoreRuntimeSessionAdapter(store)

    provider = CountingProvider(["member says hi"], id="member", repeat_last=True)
    services = RuntimeServices({"sessions": sessions})
    async with AgentRuntime(models=ModelRegistry([provider]), services=services) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(run_id="root")
        outcomes = await asyncio.gather(
            *(runner.run(root, agent("member"), f"q{n}") for n in range(10))
        )
    assert [o.status for o in outcomes] == ["completed"] * 10
    assert constructions == {"providers": 1, "sessions": 1}
    assert len(provider.calls) == 10
    assert len({o.child_run_id for o in outcomes}) == 10
    scopes = [o.scope for o in outcomes]
    for scope in scopes:
        assert scope.services is root.services and scope.budget is root.budget
        assert scope.concurrency is root.concurrency and scope.deadline == root.deadline
        assert scope.trace.trace_id == root.trace.trace_id
        assert scope.trace.parent_span_id == root.trace.span_id
    assert (await root.budget.snapshot()).child_runs_started == 10
    assert len(runner.tree) == 1


async def test_child_runs_adopt_the_scope_trace_verbatim() -> None:
    sink = InMemoryEventSink()
    async with runtime_for(script("worker", ["ok"]), event_sinks=[sink]) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(run_id="root")
        outcome = await runner.run(root, agent("worker"), "go")
    child_events = [e for e in sink.events if e.run_id == outcome.child_run_id]
    assert child_events
    trace = outcome.scope.trace
    for event in child_events:
        assert (event.trace_id, event.span_id, event.parent_span_id) == (
            trace.trace_id,
            trace.span_id,
            root.trace.span_id,
        )
        assert event.parent_run_id == "root"


async def test_parent_cancel_cancels_the_whole_child_tree_and_leaves_no_task() -> None:
    started = asyncio.Event()
    before = asyncio.all_tasks()

    def slow(request: Any) -> ScriptedTurn:
        started.set()
        return ScriptedTurn(text="late", delay=30)

    grandchild_agent = agent("grandchild")
    provider = script("grandchild", [slow])

    async def delegate(ctx: Any, data: Any) -> str:
        scope = runner.tree.scope(ctx.run_id)
        assert scope is not None
        outcome = await runner.run(scope, grandchild_agent, "deeper")
        return str(outcome.status)

    tool = RuntimeTool(
        descriptor=ToolDescriptor(
            name="delegate",
            input=json_schema_input({"type": "object"}),
            behavior=ToolBehavior(effect="read"),
        ),
        execute=delegate,
    )
    child_provider = script("child", [call("delegate"), "never"])
    async with runtime_for(provider, child_provider, tools=[tool]) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(run_id="root")
        task = asyncio.create_task(runner.run(root, agent("child", tools=("delegate",)), "go"))
        async with asyncio.timeout(5):
            await started.wait()
        assert runtime.active_runs == 2
        runner.tree.cancel_tree("root")
        async with asyncio.timeout(5):
            outcome = await task
        assert outcome.status == "cancelled"
        assert runtime.active_runs == 0
        assert len(runner.tree) == 1  # only the root is left
    assert asyncio.all_tasks() - before <= {asyncio.current_task()}


async def test_an_interrupted_child_is_an_outcome_and_resumes_through_the_runner() -> None:
    executed: list[str] = []

    def wipe(ctx: Any, data: Any) -> str:
        executed.append(ctx.call_id)
        return "wiped"

    tool = RuntimeTool(
        descriptor=ToolDescriptor(
            name="wipe",
            input=json_schema_input({"type": "object"}),
            behavior=ToolBehavior(effect="side-effect", requires_approval=True),
        ),
        execute=wipe,
    )
    provider = script("worker", [call("wipe"), ScriptedTurn(text="done")])
    async with runtime_for(provider, tools=[tool]) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(budget=InMemoryBudgetLedger())
        worker = agent("worker", tools=("wipe",))
        outcome = await runner.run(root, worker, "clean up")
        assert outcome.status == "interrupted" and executed == []
        [approval] = outcome.interruptions
        assert approval.tool_name == "wipe"
        assert outcome.result is not None and outcome.result.state is not None
        resumed = await runner.resume(
            root, worker, outcome.result.state, [InterruptionDecision.approve(approval.id)]
        )
    assert (resumed.status, resumed.output, resumed.child_run_id) == (
        "completed",
        "done",
        outcome.child_run_id,
    )
    assert executed == ["call-1"]
    assert (await root.budget.snapshot()).child_runs_started == 1


async def test_a_deadline_reaches_the_child_run_as_its_run_deadline() -> None:
    import time

    provider = script("worker", [ScriptedTurn(text="slow", delay=5)])
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(deadline=time.time() * 1000 + 100)
        async with asyncio.timeout(5):
            outcome = await runner.run(root, agent("worker"), "go", failure_policy=COLLECT)
    assert outcome.status == "cancelled"
    assert outcome.error is not None and outcome.error.code in (
        "ORCHESTRATION_DEADLINE_EXCEEDED",
        "RUN_CANCELLED",
    )


def test_run_errors_keep_their_code_in_the_outcome() -> None:
    from actoviq.orchestration import ChildError

    error = ChildError.of(RunError("x", code="MAX_TURNS_EXCEEDED"))
    assert error.to_json() == {"name": "RunError", "message": "x", "code": "MAX_TURNS_EXCEEDED"}
    assert ChildError.of("plain").to_json() == {"name": "Error", "message": "plain"}
    assert ChildError.of(ToolCallItem).name == "Error"


async def test_many_children_share_the_permits_and_give_every_one_back() -> None:
    """Children take free permits at once and queue for the rest: never more than the capacity
    run, every permit comes back whether the child completed, failed or was cancelled."""
    turns: list[Any] = [ScriptedTurn(text="ok", usage=usage(2)) for _ in range(29)]
    turns[7] = ProviderResponseError("down", provider_id="worker")
    permits = ConcurrencyController(3)
    async with runtime_for(script("worker", turns)) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(concurrency=permits)
        doomed = runner.tree.derive_child(root, "doomed")
        runner.tree.cancel_tree("doomed")
        outcomes = await asyncio.gather(
            *(
                runner.run(root, agent("worker"), f"q{index}", failure_policy=COLLECT)
                for index in range(29)
            ),
            runner.run(doomed, agent("worker"), "never", failure_policy=COLLECT),
        )
    statuses = sorted(outcome.status for outcome in outcomes)
    assert statuses == ["cancelled"] + ["completed"] * 28 + ["failed"]
    assert permits.peak == 3 and permits.active == 0 and permits.pending == 0
    assert (await root.budget.snapshot()).total_tokens_used == 2 * 28


async def test_outcomes_and_node_contexts_are_the_frozen_classes_with_every_field() -> None:
    """Outcomes and node contexts are built by slot stores into drafts: each must be exactly its
    frozen class, every field set, and read-only."""
    seen: list[Any] = []

    async def member(ctx: NodeContext) -> Any:
        seen.append(ctx)
        return await runner.run(ctx.scope, agent("worker"), ctx.node_id)

    async with runtime_for(script("worker", ["ok"], repeat_last=True)) as runtime:
        runner = ChildRunner(runtime)
        root = runner.create_root(run_id="root")
        graph = WorkflowGraph(
            id="g",
            nodes=[
                WorkflowNode(id="a", execute=member),
                WorkflowNode(id="b", reduce=lambda ctx: (seen.append(ctx), dict(ctx.inputs))[1]),
            ],
            edges=[WorkflowEdge(source="a", target="b")],
        )
        result = await graph.execute(input="in", scope=root)
    outcome = result.outputs["a"]
    assert type(outcome) is ChildRunOutcome and outcome.status == "completed"
    assert outcome.attempts == 1 and outcome.error is None and outcome.output == "ok"
    assert outcome.scope.parent_run_id == "root" and outcome.result is not None
    for ctx in seen:
        assert type(ctx) is NodeContext and ctx.input == "in" and ctx.scope is root
        assert ctx.signal is not None
    assert [ctx.node_id for ctx in seen] == ["a", "b"]
    assert dict(seen[0].inputs) == {} and dict(seen[1].inputs) == {"a": outcome}
    assert dict(seen[1].outputs) == {"a": outcome}
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        outcome.status = "failed"  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        seen[0].node_id = "x"
    assert attrs.evolve(outcome, attempts=2).attempts == 2 and outcome.attempts == 1
