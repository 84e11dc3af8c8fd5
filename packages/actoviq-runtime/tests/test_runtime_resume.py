"""Interruptions, resume and the durable pending-tool state machine (§7.3 and the D5 fixes)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, cast

import pytest
from runtime_testkit import RecordingCheckpointStore, json_tool, make_agent, scripted_runtime

from actoviq.core import JsonObject, RunError, RunLimitsPatch, ToolCallItem, ToolResultItem
from actoviq.events import InMemoryEventSink
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InterruptionDecision,
    InterruptionDecisionError,
    MiddlewareStage,
    ReconciliationDecisionError,
    RunStateError,
    RunStateVersionError,
    ToolCallDenied,
    ToolExecutionContext,
    define_middleware,
)

EMAIL = ToolCallItem(id="call_email", name="send_email", input={"to": "ops@example.test"})
WEATHER = ToolCallItem(id="call_weather", name="get_weather", input={"city": "Paris"})


class Harness:
    def __init__(self, script: list[Any], *, timeout_ms: float | None = None) -> None:
        self.sent: list[str] = []
        self.weather: list[str] = []
        self.provider = ScriptedProvider(script)
        self.store = RecordingCheckpointStore()
        self.sink = InMemoryEventSink()

        async def send(ctx: ToolExecutionContext, value: Any) -> JsonObject:
            self.sent.append(ctx.call_id)
            if timeout_ms is not None:
                await asyncio.sleep(10)  # a send slower than its timeout: the behaviour tested
            return {"sent": True}

        self.tools = [
            json_tool(
                "send_email",
                send,
                effect="side-effect",
                requires_approval=timeout_ms is None,
                timeout_ms=timeout_ms,
            ),
            json_tool("get_weather", self._weather),
        ]
        self.agent = make_agent(id="mailer", tools=("send_email", "get_weather"))

    def _weather(self, ctx: ToolExecutionContext, value: Any) -> str:
        self.weather.append(ctx.call_id)
        return "sunny"

    def runtime(self, **options: Any) -> AgentRuntime:
        if self.sink.events and options.pop("fresh_sink", False):
            self.sink = InMemoryEventSink()
        return scripted_runtime(
            self.provider,
            tools=self.tools,
            checkpoint_store=self.store,
            event_sinks=[self.sink],
            agents=[self.agent],
            **options,
        )


_EMAIL_RESULT: JsonObject = {
    "type": "tool_result",
    "callId": "call_email",
    "name": "send_email",
    "status": "success",
    "output": {"sent": True},
}


def _two_call_script() -> list[Any]:
    return [ScriptedTurn(tool_calls=[EMAIL, WEATHER]), "Email sent."]


async def test_interruption_keeps_every_call_and_resume_finishes_the_turn() -> None:
    h = Harness(_two_call_script())
    runtime = h.runtime()
    result = await runtime.run(h.agent, "mail ops", run_id="r1")
    assert result.status == "interrupted" and result.output == ""
    assert [i.id for i in result.interruptions] == ["r1:call_email"]
    assert result.interruptions[0].kind == "approval"
    state = cast(JsonObject, result.state)
    pending = cast(list[JsonObject], state["pendingTools"])
    assert [(p["call"]["id"], p["status"]) for p in pending] == [  # type: ignore[index]
        ("call_email", "awaiting_approval"),
        ("call_weather", "prepared"),
    ]
    assert h.sent == [] and h.weather == []  # nothing ran before the decision (Q1/Q2)
    assert "tool.started" not in h.sink.types()

    handle = runtime.resume(state, [InterruptionDecision.approve("r1:call_email")])
    final = await handle.result()
    assert final.status == "completed" and final.output == "Email sent."
    assert h.sent == ["call_email"] and h.weather == ["call_weather"]
    second = h.provider.requests[1].input
    results = [i.call_id for i in second if isinstance(i, ToolResultItem)]
    assert results == ["call_email", "call_weather"]  # the whole turn, in call order
    snapshot = await handle.snapshot()
    assert snapshot["pendingTools"] == [] and snapshot["status"] == "completed"
    decisions = cast(list[JsonObject], snapshot["decisions"])
    assert decisions[0]["outcome"] == "approve"


async def test_sequence_continues_across_resume() -> None:
    h = Harness(_two_call_script())
    runtime = h.runtime()
    result = await runtime.run(h.agent, "mail ops", run_id="r2")
    last = h.sink.last_sequence("r2")
    assert cast(JsonObject, result.state)["lastEventSequence"] == last
    await runtime.resume(result.state, [InterruptionDecision.approve("r2:call_email")]).result()
    events = h.sink.events_for_run("r2")
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    resumed = next(e for e in events if e.type == "run.resumed")
    assert resumed.sequence == last + 1


async def test_resume_without_decision_interrupts_again() -> None:
    h = Harness(_two_call_script())
    runtime = h.runtime()
    result = await runtime.run(h.agent, "mail ops", run_id="r3")
    again = await runtime.resume(result.state).result()
    assert again.status == "interrupted" and [i.id for i in again.interruptions] == [
        "r3:call_email"
    ]
    assert h.sent == []


async def test_reject_gives_a_denied_result_and_never_runs_the_tool() -> None:
    h = Harness(_two_call_script())
    runtime = h.runtime()
    result = await runtime.run(h.agent, "mail ops", run_id="r4")
    final = await runtime.resume(
        result.state, [InterruptionDecision.reject("r4:call_email", "not today")]
    ).result()
    assert final.status == "completed" and h.sent == []
    denied = next(
        i
        for i in h.provider.requests[1].input
        if isinstance(i, ToolResultItem) and i.call_id == "call_email"
    )
    assert denied.status == "error" and denied.output["kind"] == "denied"  # type: ignore[index]
    assert "tool.rejected" in h.sink.types()


async def test_started_side_effect_requires_reconciliation_and_accepts_decisions() -> None:
    h = Harness(_two_call_script())
    runtime = h.runtime()
    result = await runtime.run(h.agent, "mail ops", run_id="r5")
    state = copy.deepcopy(cast(JsonObject, result.state))
    pending = cast(list[JsonObject], state["pendingTools"])
    pending[0]["status"] = "started"
    del pending[0]["interruptionId"]
    again = await runtime.resume(state, []).result()
    assert again.status == "interrupted"
    assert again.interruptions[0].id == "r5:call_email:reconcile"
    assert again.interruptions[0].kind == "reconciliation"
    unknown = cast(list[JsonObject], cast(JsonObject, again.state)["pendingTools"])[0]
    assert unknown["status"] == "unknown"
    with pytest.raises(ReconciliationDecisionError):
        runtime.resume(again.state, [InterruptionDecision.retry("r5:call_email:reconcile")])
    final = await runtime.resume(
        again.state, [InterruptionDecision.committed("r5:call_email:reconcile", {"sent": True})]
    ).result()
    assert final.status == "completed" and h.sent == []  # never re-executed
    audit = cast(list[JsonObject], h.store.latest["r5"]["decisions"])
    assert audit[-1]["outcome"] == "committed"


async def test_committed_result_is_replayed_not_re_executed() -> None:
    h = Harness(_two_call_script())
    runtime = h.runtime()
    result = await runtime.run(h.agent, "mail ops", run_id="r6")
    state = copy.deepcopy(cast(JsonObject, result.state))
    pending = cast(list[JsonObject], state["pendingTools"])
    pending[0]["status"] = "committed"
    pending[0]["result"] = copy.deepcopy(_EMAIL_RESULT)
    final = await runtime.resume(state).result()
    assert final.status == "completed" and h.sent == []
    transcript = cast(list[JsonObject], h.store.latest["r6"]["transcript"])
    assert sum(1 for i in transcript if i.get("callId") == "call_email") == 1


async def test_committed_result_already_in_transcript_is_not_duplicated() -> None:
    h = Harness(_two_call_script())
    runtime = h.runtime()
    result = await runtime.run(h.agent, "mail ops", run_id="r7")
    state = copy.deepcopy(cast(JsonObject, result.state))
    item = copy.deepcopy(_EMAIL_RESULT)
    pending = cast(list[JsonObject], state["pendingTools"])
    pending[0]["status"] = "committed"
    pending[0]["result"] = cast(Any, item)
    cast(list[Any], state["transcript"]).append(item)
    cast(list[Any], state["generatedItems"]).append(item)
    final = await runtime.resume(state).result()
    assert final.status == "completed" and h.sent == []
    transcript = cast(list[JsonObject], h.store.latest["r7"]["transcript"])
    assert sum(1 for i in transcript if i.get("callId") == "call_email") == 1


async def test_resume_validation_is_synchronous() -> None:
    h = Harness(_two_call_script())
    runtime = h.runtime()
    result = await runtime.run(h.agent, "mail ops", run_id="r8")
    state = cast(JsonObject, result.state)
    with pytest.raises(RunStateVersionError):
        runtime.resume({**state, "schemaVersion": 3})
    with pytest.raises(RunStateError, match="missing identity"):
        runtime.resume({**state, "runId": ""})
    with pytest.raises(RunError, match="not registered") as info:
        runtime.resume({**state, "agentId": "ghost"})
    assert info.value.code == "AGENT_NOT_REGISTERED"
    with pytest.raises(RunError, match="configuration changed") as info:
        runtime.resume({**state, "agentConfigDigest": "sha256v1:other"})
    assert info.value.code == "AGENT_CONFIG_MISMATCH"
    with pytest.raises(InterruptionDecisionError):
        runtime.resume(state, [InterruptionDecision.approve("no-such-interruption")])


async def test_invalid_deadline_fails_with_a_typed_error() -> None:
    h = Harness(_two_call_script())
    runtime = h.runtime()
    result = await runtime.run(h.agent, "mail ops", run_id="r9")
    state = {**cast(JsonObject, result.state), "deadlineAt": "not-a-date"}
    del state["remainingRunMs"]
    with pytest.raises(RunError) as info:
        await runtime.resume(state).result()
    assert info.value.code == "RUN_DEADLINE_INVALID"


async def test_approval_wait_does_not_consume_the_run_deadline() -> None:
    h = Harness(_two_call_script())
    runtime = h.runtime()
    result = await runtime.run(
        h.agent, "mail ops", run_id="r10", limits=RunLimitsPatch(run_deadline_ms=200)
    )
    state = cast(JsonObject, result.state)
    assert "deadlineAt" not in state and 0 < cast(int, state["remainingRunMs"]) <= 200
    # wall time passing while the approval waits is the behaviour tested (nothing is ordered by
    # it); a slower machine only lets more time pass
    await asyncio.sleep(0.3)  # longer than the whole run budget
    final = await runtime.resume(state, [InterruptionDecision.approve("r10:call_email")]).result()
    assert final.status == "completed"


async def test_v1_reference_state_resumes() -> None:
    h = Harness(_two_call_script())
    runtime = h.runtime()
    result = await runtime.run(h.agent, "mail ops", run_id="r11")
    v2 = cast(JsonObject, result.state)
    pending = cast(list[JsonObject], v2["pendingTools"])
    v1 = {
        k: v
        for k, v in v2.items()
        if k
        not in ("pendingTools", "lastEventSequence", "remainingRunMs", "decisions", "interruptions")
    }
    v1["schemaVersion"] = 1
    v1["pendingTool"] = pending[0]
    v1["deadlineAt"] = "2999-01-01T00:00:00.000Z"
    # v1 states carry no lastEventSequence: that leg restarts at 1, so give it a fresh sink.
    runtime = h.runtime(fresh_sink=True)
    final = await runtime.resume(v1, [InterruptionDecision.approve("r11:call_email")]).result()
    assert final.status == "completed" and h.sent == ["call_email"]


async def test_side_effect_timeout_is_unknown_not_committed() -> None:
    h = Harness([ScriptedTurn(tool_calls=[EMAIL]), "never"], timeout_ms=20)
    runtime = h.runtime()
    result = await runtime.run(h.agent, "mail ops", run_id="r12")
    assert result.status == "interrupted"
    assert result.interruptions[0].kind == "reconciliation"
    pending = cast(list[JsonObject], cast(JsonObject, result.state)["pendingTools"])
    assert pending[0]["status"] == "unknown"
    final = await runtime.resume(
        result.state, [InterruptionDecision.failed("r12:call_email:reconcile", "bounced")]
    ).result()
    assert final.status == "completed" and h.sent == ["call_email"]


async def test_cancelled_side_effect_becomes_unknown() -> None:
    started = asyncio.Event()
    h = Harness([ScriptedTurn(tool_calls=[EMAIL]), "never"])

    async def slow_send(ctx: ToolExecutionContext, value: Any) -> JsonObject:
        started.set()
        await asyncio.sleep(10)  # a send still running when cancelled (ordered by `started`)
        return {}

    h.tools[0] = json_tool("send_email", slow_send, effect="side-effect")
    runtime = h.runtime()
    handle = runtime.stream(h.agent, "mail ops", run_id="r13")
    await started.wait()
    handle.cancel("user pressed stop")
    result = await handle.result()
    assert result.status == "cancelled"
    pending = cast(list[JsonObject], cast(JsonObject, result.state)["pendingTools"])
    assert pending[0]["status"] == "unknown"
    cancelled = h.sink.events[-1]
    assert cancelled.type == "run.cancelled" and cancelled.data["reason"] == "user pressed stop"  # type: ignore[index,call-overload]


async def test_tool_outside_the_agent_list_is_not_found() -> None:
    h = Harness(
        [ScriptedTurn(tool_calls=[ToolCallItem(id="c", name="get_weather", input={})]), "ok"]
    )
    runtime = h.runtime()
    agent = make_agent(id="narrow", tools=("send_email",))
    result = await runtime.run(agent, "x")
    assert result.status == "completed" and h.weather == []
    error = next(i for i in h.provider.requests[1].input if isinstance(i, ToolResultItem))
    assert error.output["kind"] == "not_found"  # type: ignore[index]


async def test_tool_call_denied_in_before_tool_call() -> None:
    def deny(ctx: Any, next: Any) -> Any:
        raise ToolCallDenied("not allowed here")

    h = Harness([ScriptedTurn(tool_calls=[WEATHER]), "ok"])
    runtime = h.runtime(
        middleware=[define_middleware("deny", MiddlewareStage.BEFORE_TOOL_CALL, deny)]
    )
    result = await runtime.run(h.agent, "x")
    assert result.status == "completed" and h.weather == []
    denied = next(i for i in h.provider.requests[1].input if isinstance(i, ToolResultItem))
    assert denied.output["kind"] == "denied"  # type: ignore[index]


async def test_checkpoint_survives_a_new_runtime() -> None:
    h = Harness(_two_call_script())
    first = h.runtime()
    await first.run(h.agent, "mail ops", run_id="r14")
    await first.close()
    saved = await h.store.load("r14")
    assert saved is not None and saved["status"] == "interrupted"
    second = h.runtime(fresh_sink=True)
    final = await second.resume(saved, [InterruptionDecision.approve("r14:call_email")]).result()
    assert final.status == "completed" and h.sent == ["call_email"]
    assert h.store.deletes == ["r14"]
