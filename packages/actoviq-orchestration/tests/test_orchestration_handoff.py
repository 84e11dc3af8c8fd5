"""Handoff (spec 04 §7.2 rows 25, 30, 31; §8.2-20): ownership moves to the target even when it
fails, the target sees the history once, the model's handoff call is executed and a bounded
``HandoffLoop`` fails typed on a cycle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from orchestration_testkit import agent, call, runtime_for, script

from actoviq.core import (
    CanonicalItem,
    ErrorItem,
    HandoffRef,
    ProviderResponseError,
    RunContext,
    TextItem,
    ToolCallItem,
    ToolResultItem,
)
from actoviq.events import InMemoryEventSink
from actoviq.orchestration import (
    ChildRunner,
    ConversationOwner,
    ConversationState,
    HandoffError,
    HandoffFilterContext,
    HandoffLimitExceededError,
    HandoffLoop,
    HandoffSpec,
    TenantSessionNamespace,
    execute_handoff,
)
from actoviq.providers.testing import ScriptedTurn
from actoviq.runtime import (
    HandoffRequest,
    InMemorySessionStore,
    InterruptionDecision,
    MiddlewareStage,
    RuntimeServices,
    RuntimeTool,
    StoreRuntimeSessionAdapter,
    ToolBehavior,
    ToolDescriptor,
    define_middleware,
    json_schema_input,
)

OWNER = ConversationOwner(agent_id="manager", run_id="manager-run")


def _texts(items: Sequence[CanonicalItem]) -> list[str]:
    return [f"{i.role}:{i.text}" for i in items if isinstance(i, TextItem)]


def _sessions(store: InMemorySessionStore) -> RuntimeServices:
    return RuntimeServices({"sessions": lambda: StoreRuntimeSessionAdapter(store)})


async def test_execute_handoff_moves_ownership_and_transfers_the_session() -> None:
    store = InMemorySessionStore()
    provider = script("specialist", ["specialist answer"])
    async with runtime_for(provider, services=_sessions(store)) as runtime:
        runner = ChildRunner(runtime)
        parent = runner.create_root(
            run_id="manager-run",
            tenant_session=TenantSessionNamespace(session_id="session-main"),
        )

        def keep_last(items: Sequence[CanonicalItem], ctx: HandoffFilterContext) -> Any:
            assert ctx.parent is parent and ctx.conversation.owner is OWNER
            return [TextItem(role="user", text="filtered text")]

        conversation = ConversationState(
            owner=OWNER,
            items=(TextItem(role="user", text="long history"), TextItem(role="user", text="q")),
        )
        result = await execute_handoff(
            runner,
            HandoffSpec(id="to-specialist", target=agent("specialist"), input_filter=keep_last),
            parent=parent,
            conversation=conversation,
        )
    assert result.ownership_transferred and result.mode == "handoff"
    assert result.owner_before is OWNER
    assert result.owner_after.agent_id == "specialist"
    assert result.owner_after.run_id not in ("manager-run", OWNER.run_id)
    assert result.conversation.owner == result.owner_after
    assert _texts(result.filtered_input) == ["user:filtered text"]
    assert not any(isinstance(i, ToolResultItem) for i in result.conversation.items)
    assert result.child.result is not None
    assert result.child.result.session_id == "session-main"
    assert _texts(provider.calls[0].request.input)[-1] == "user:filtered text"


async def test_a_failing_target_still_owns_the_conversation_with_a_handoff_error() -> None:
    provider = script(
        "specialist",
        [
            ProviderResponseError("down", provider_id="specialist"),
            ProviderResponseError("gone", provider_id="specialist"),
        ],
    )
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        conversation = ConversationState(owner=OWNER, items=(TextItem(role="user", text="q"),))
        with pytest.raises(HandoffError, match="id"):
            await execute_handoff(
                runner,
                HandoffSpec(id=" ", target=agent("specialist")),
                parent=runner.create_root(),
                conversation=conversation,
            )
        result = await execute_handoff(
            runner,
            HandoffSpec(id="to-specialist", target=agent("specialist")),
            parent=runner.create_root(),
            conversation=conversation,
        )
    assert result.owner_after.agent_id == "specialist" and result.child.status == "failed"
    assert list(result.filtered_input) == list(conversation.items)
    last = result.conversation.items[-1]
    assert isinstance(last, ErrorItem)
    assert (last.source, last.code, last.retryable) == ("handoff", "HANDOFF_FAILED", False)
    assert last.message == 'Handoff "to-specialist" to "specialist" failed: down'
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        coded = await execute_handoff(
            runner,
            HandoffSpec(id="to-specialist", target=agent("specialist")),
            parent=runner.create_root(),
            conversation=conversation,
        )
    last = coded.conversation.items[-1]
    assert isinstance(last, ErrorItem) and last.code == "HANDOFF_FAILED"
    assert last.details is not None
    child_error = last.details["childError"]
    assert isinstance(child_error, dict) and child_error["code"] == "PROVIDER_RESPONSE_ERROR"


async def test_before_handoff_middleware_runs_once_and_its_items_reach_the_target() -> None:
    seen: list[tuple[str, str, str, str]] = []

    def note(ctx: Any, next: Any) -> Any:
        request: HandoffRequest = ctx.handoff
        seen.append(
            (
                request.source_agent_id,
                request.target_agent.id,
                request.parent_run_id,
                request.handoff_id,
            )
        )
        return [*ctx.input, TextItem(role="user", text="note from middleware")]

    provider = script("specialist", ["accepted"])
    middleware = [define_middleware("note", MiddlewareStage.BEFORE_HANDOFF, note)]
    async with runtime_for(provider, middleware=middleware) as runtime:
        runner = ChildRunner(runtime)
        result = await execute_handoff(
            runner,
            HandoffSpec(id="to-specialist", target=agent("specialist")),
            parent=runner.create_root(run_id="manager-run"),
            conversation=ConversationState(owner=OWNER, items=(TextItem(role="user", text="q"),)),
        )
    assert seen == [("manager", "specialist", "manager-run", "to-specialist")]
    assert _texts(result.filtered_input) == ["user:q", "user:note from middleware"]
    assert result.child.output == "accepted"


def _triage(*handoffs: HandoffRef) -> Any:
    return agent("triage", handoffs=handoffs)


async def test_the_models_handoff_call_is_executed_and_the_history_is_seen_once() -> None:
    store = InMemorySessionStore()
    triage_provider = script("triage", [call("to-billing", reason="invoice")])
    billing_provider = script("billing", ["Your invoice is fixed."])
    billing = agent("billing")
    async with runtime_for(triage_provider, billing_provider, services=_sessions(store)) as runtime:
        runner = ChildRunner(runtime)
        loop = HandoffLoop(runner, max_handoffs=2, agents=[billing])
        root = runner.create_root(
            run_id="conversation-1", tenant_session=TenantSessionNamespace(session_id="s1")
        )
        outcome = await loop.run(
            root, _triage(HandoffRef(id="to-billing", target_agent_id="billing")), "bad invoice"
        )
    assert outcome.status == "completed" and outcome.output == "Your invoice is fixed."
    assert outcome.owner.agent_id == "billing" and outcome.agent is billing
    assert [h.handoff_id for h in outcome.handoffs] == ["to-billing"]
    target_input = billing_provider.calls[0].request.input
    assert _texts(target_input).count("user:bad invoice") == 1  # once, not twice (§8.2-20)
    calls = [i for i in target_input if isinstance(i, ToolCallItem)]
    assert [c.name for c in calls] == ["to-billing"]
    loaded = await StoreRuntimeSessionAdapter(store).load(tenant_id="default", session_id="s1")
    assert _texts(loaded.items).count("user:bad invoice") == 1
    assert _texts(loaded.items)[-1] == "assistant:Your invoice is fixed."


async def test_a_handoff_ref_filter_is_the_input_filter() -> None:
    def only_user(context: RunContext[Any], items: Sequence[CanonicalItem]) -> list[CanonicalItem]:
        assert context.agent_id == "triage"
        return [i for i in items if isinstance(i, TextItem) and i.role == "user"]

    billing_provider = script("billing", ["ok"])
    async with runtime_for(script("triage", [call("to-billing")]), billing_provider) as runtime:
        runner = ChildRunner(runtime)
        ref = HandoffRef(id="to-billing", target_agent_id="billing", filter=only_user)
        outcome = await HandoffLoop(runner, agents=[agent("billing")]).run(
            runner.create_root(), _triage(ref), "question"
        )
    assert outcome.output == "ok"
    sent = [i for i in billing_provider.calls[0].request.input if not isinstance(i, TextItem)]
    assert sent == []


async def test_a_cycle_past_max_handoffs_fails_typed() -> None:
    ping = agent("ping", handoffs=(HandoffRef(id="to_pong", target_agent_id="pong"),))
    pong = agent("pong", handoffs=(HandoffRef(id="to_ping", target_agent_id="ping"),))
    async with runtime_for(
        script("ping", [call("to_pong")], repeat_last=True),
        script("pong", [call("to_ping")], repeat_last=True),
    ) as runtime:
        runner = ChildRunner(runtime)
        loop = HandoffLoop(runner, max_handoffs=3, agents=[ping, pong])
        with pytest.raises(HandoffLimitExceededError, match="max_handoffs=3") as caught:
            await loop.run(runner.create_root(), ping, "go")
    assert caught.value.code == "HANDOFF_LIMIT_EXCEEDED"
    assert caught.value.details is not None
    assert caught.value.details["chain"] == ["pong", "ping", "pong"]


async def test_an_unknown_target_and_bad_loop_options_are_refused() -> None:
    with pytest.raises(HandoffError, match="max_handoffs"):
        HandoffLoop(None, max_handoffs=-1)  # type: ignore[arg-type]
    async with runtime_for(script("triage", [call("to-nowhere")])) as runtime:
        runner = ChildRunner(runtime)
        loop = HandoffLoop(runner)
        with pytest.raises(HandoffError, match="Cannot resolve"):
            await loop.run(
                runner.create_root(),
                _triage(HandoffRef(id="to-nowhere", target_agent_id="nobody")),
                "go",
            )


async def test_explicit_specs_win_and_chains_stream_every_owner() -> None:
    sink = InMemoryEventSink()
    billing = agent("billing")
    spec = HandoffSpec(id="to-billing", target=billing, description="Billing.")
    triage = agent("triage", handoffs=(spec.ref(),))
    async with runtime_for(
        script(
            "triage",
            [
                ScriptedTurn(
                    text="Routing.", tool_calls=[ToolCallItem(id="h1", name="to-billing", input={})]
                )
            ],
        ),
        script("billing", [ScriptedTurn(text="Paid.", stream_deltas=["Pa", "id."])]),
        event_sinks=[sink],
    ) as runtime:
        runner = ChildRunner(runtime)
        loop = HandoffLoop(runner, handoffs=[spec])
        async with (
            runner.open_root("support-desk", run_id="desk") as desk,
            loop.stream(runner.tree.derive_child(desk, "root"), triage, "pay") as stream,
        ):
            events = [event async for event in stream]
            outcome = await stream.result()
    assert outcome.output == "Paid."
    runs = [e.run_id for e in events]
    target = outcome.owner.run_id
    assert runs[0] == "root" and runs[-1] == target
    deltas = [e.data for e in events if e.type == "model.text.delta" and e.run_id == target]
    assert [d["delta"] for d in deltas if isinstance(d, dict)] == ["Pa", "id."]
    requested = next(e for e in events if e.type == "handoff.requested")
    assert requested.data == {
        "handoffId": "to-billing",
        "callId": "h1",
        "sourceAgentId": "triage",
        "targetAgentId": "billing",
    }
    # The loop's scope ("root") was the triage run: it ended before the handoff, so the
    # handoff and child events go to the nearest live ancestor, the opened desk root.
    desk = [e for e in sink.events if e.run_id == "desk"]
    assert [e.type for e in desk] == [
        "orchestration.started",
        "orchestration.handoff.started",
        "orchestration.child.started",
        "orchestration.child.completed",
        "orchestration.handoff.completed",
        "orchestration.completed",
    ]
    assert desk[1].data == {
        "handoffId": "to-billing",
        "fromAgentId": "triage",
        "toAgentId": "billing",
        "fromRunId": "root",
        "toRunId": target,
    }
    assert {e.trace_id for e in sink.events} == {desk[0].trace_id}
    billing_run = next(e for e in sink.events if e.run_id == target)
    assert billing_run.parent_run_id == "root"


async def test_an_interrupted_target_resumes_through_the_loop() -> None:
    refund = RuntimeTool(
        descriptor=ToolDescriptor(
            name="refund",
            input=json_schema_input({"type": "object"}),
            behavior=ToolBehavior(requires_approval=True),
        ),
        execute=lambda ctx, data: "refunded",
    )
    billing = agent("billing", tools=("refund",))
    async with runtime_for(
        script("triage", [call("to-billing")]),
        script("billing", [call("refund", call_id="r1"), "Refund sent."]),
        tools=[refund],
    ) as runtime:
        runner = ChildRunner(runtime)
        loop = HandoffLoop(runner, agents=[billing])
        first = await loop.run(
            runner.create_root(),
            _triage(HandoffRef(id="to-billing", target_agent_id="billing")),
            "refund me",
        )
        assert first.status == "interrupted" and first.owner.agent_id == "billing"
        [approval] = first.interruptions
        done = await loop.resume(first, [InterruptionDecision.approve(approval.id)])
    assert done.status == "completed" and done.output == "Refund sent."
    assert done.owner == first.owner
    assert _texts(done.conversation.items)[-1] == "assistant:Refund sent."


async def test_an_async_input_filter_and_a_filter_returning_non_items() -> None:
    async def last_only(items: Sequence[CanonicalItem], ctx: HandoffFilterContext) -> Any:
        return list(items[-1:])

    def broken(items: Sequence[CanonicalItem], ctx: HandoffFilterContext) -> Any:
        return ["not an item"]

    provider = script("specialist", ["ok"])
    conversation = ConversationState(
        owner=OWNER,
        items=(TextItem(role="user", text="old"), TextItem(role="user", text="new")),
    )
    async with runtime_for(provider) as runtime:
        runner = ChildRunner(runtime)
        result = await execute_handoff(
            runner,
            HandoffSpec(id="h", target=agent("specialist"), input_filter=last_only),
            parent=runner.create_root(),
            conversation=conversation,
        )
        assert _texts(result.filtered_input) == ["user:new"]
        with pytest.raises(HandoffError, match="canonical items"):
            await execute_handoff(
                runner,
                HandoffSpec(id="h", target=agent("specialist"), input_filter=broken),
                parent=runner.create_root(),
                conversation=conversation,
            )
    assert len(provider.calls) == 1
