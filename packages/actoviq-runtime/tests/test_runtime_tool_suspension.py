"""A running tool suspends the run (``ToolSuspension``) and runs again with the host's decisions;
hosts emit their own events into a live run (``emit_run_event``). Used by agent-as-tool so a
child's approval surfaces in, and resumes through, the manager (spec 04 §8.2-15)."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_testkit import json_tool, make_agent, scripted_runtime

from actoviq.core import Interruption, RunError, RunResult, ToolCallItem, ToolResultItem
from actoviq.events import InMemoryEventSink
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InterruptionDecision,
    ToolExecutionContext,
    ToolResumption,
    ToolSuspension,
)


def _nested(*ids: str) -> list[Interruption]:
    return [
        Interruption(
            id=interruption_id,
            kind="approval",
            reason=f"{interruption_id} needs approval",
            tool_name="wipe",
            call_id=interruption_id.split(":")[-1],
            metadata={"childState": {"n": 1}} if index == 0 else None,
        )
        for index, interruption_id in enumerate(ids)
    ]


class Delegate:
    """A tool that suspends until every nested interruption is decided."""

    def __init__(self, *ids: str) -> None:
        self.open = list(ids)
        self.seen: list[ToolResumption | None] = []

    def __call__(self, ctx: ToolExecutionContext, _input: Any) -> str:
        self.seen.append(ctx.resumption)
        if ctx.resumption is not None:
            decided = {decision.interruption_id for decision in ctx.resumption.decisions}
            self.open = [entry for entry in self.open if entry not in decided]
        if self.open:
            raise ToolSuspension(_nested(*self.open))
        return "delegated"


async def _resume(
    runtime: AgentRuntime, result: RunResult[Any], *decisions: InterruptionDecision
) -> RunResult[Any]:
    async with runtime.resume(result.state, decisions) as handle:
        return await handle.result()


def _provider(*tail: str) -> ScriptedProvider:
    call = ToolCallItem(id="call-1", name="delegate", input={})
    return ScriptedProvider([ScriptedTurn(tool_calls=[call]), *tail])


async def test_a_suspended_tool_surfaces_its_interruptions_and_runs_again_when_decided() -> None:
    delegate = Delegate("child:c9")
    sink = InMemoryEventSink()
    runtime = scripted_runtime(
        _provider("manager done"),
        tools=[json_tool("delegate", delegate, effect="side-effect")],
        event_sinks=[sink],
    )
    agent = make_agent(tools=("delegate",))
    async with runtime:
        first = await runtime.run(agent, "go")
        assert first.status == "interrupted"
        [surfaced] = first.interruptions
        assert (surfaced.id, surfaced.tool_name, surfaced.reason) == (
            "child:c9",
            "wipe",
            "child:c9 needs approval",
        )
        assert surfaced.metadata == {
            "childState": {"n": 1},
            "suspendedCallId": "call-1",
            "suspendedToolName": "delegate",
        }
        assert first.state is not None
        pending = first.state["pendingTools"]
        assert isinstance(pending, list) and pending[0]["status"] == "awaiting_approval"  # type: ignore[index]
        suspended = [e for e in sink.events if e.type == "tool.suspended"]
        assert suspended[0].data == {
            "callId": "call-1",
            "name": "delegate",
            "interruptionIds": ["child:c9"],
        }
        # No decision: the run interrupts again and the tool does not run.
        again = await _resume(runtime, first)
        assert again.status == "interrupted" and [i.id for i in again.interruptions] == ["child:c9"]
        assert len(delegate.seen) == 1
        done = await _resume(runtime, again, InterruptionDecision.approve("child:c9"))
    assert done.status == "completed" and done.output == "manager done"
    resumption = delegate.seen[-1]
    assert resumption is not None
    assert [d.interruption_id for d in resumption.decisions] == ["child:c9"]
    assert [i.id for i in resumption.interruptions] == ["child:c9"]
    assert resumption.interruptions[0].metadata is not None
    assert resumption.interruptions[0].metadata["childState"] == {"n": 1}
    result = next(i for i in done.items if isinstance(i, ToolResultItem))
    assert (result.status, result.output) == ("success", "delegated")


@pytest.mark.parametrize("effect", ["read", "side-effect"])
async def test_deciding_part_of_a_suspension_suspends_again_with_the_rest(effect: str) -> None:
    # read: the parallel batch path; side-effect: the one-by-one path (started is persisted)
    delegate = Delegate("child:a", "child:b")
    tool = json_tool("delegate", delegate, effect=effect)
    runtime = scripted_runtime(_provider("manager done"), tools=[tool])
    async with runtime:
        first = await runtime.run(make_agent(tools=("delegate",)), "go")
        assert [i.id for i in first.interruptions] == ["child:a", "child:b"]
        second = await _resume(runtime, first, InterruptionDecision.reject("child:b", "no"))
        assert [i.id for i in second.interruptions] == ["child:a"]
        third = await _resume(runtime, second, InterruptionDecision.approve("child:a"))
    assert third.status == "completed"
    assert [len(r.decisions) for r in delegate.seen if r is not None] == [1, 1]
    assert third.state is None


async def test_a_decision_for_no_open_interruption_is_still_refused() -> None:
    runtime = scripted_runtime(_provider("x"), tools=[json_tool("delegate", Delegate("c:1"))])
    async with runtime:
        first = await runtime.run(make_agent(tools=("delegate",)), "go")
        from actoviq.runtime import InterruptionDecisionError

        with pytest.raises(InterruptionDecisionError, match="c:2"):
            runtime.resume(first.state, [InterruptionDecision.approve("c:2")])


async def test_an_approved_tool_that_suspends_is_not_asked_for_approval_again() -> None:
    delegate = Delegate("child:c9")
    tool = json_tool("delegate", delegate, requires_approval=True)
    runtime = scripted_runtime(_provider("manager done"), tools=[tool])
    async with runtime:
        first = await runtime.run(make_agent(tools=("delegate",)), "go")
        [approval] = first.interruptions
        second = await _resume(runtime, first, InterruptionDecision.approve(approval.id))
        assert [i.id for i in second.interruptions] == ["child:c9"]
        done = await _resume(runtime, second, InterruptionDecision.approve("child:c9"))
    assert done.status == "completed"


async def test_an_empty_or_clashing_suspension_is_a_tool_error() -> None:
    def empty(ctx: ToolExecutionContext, _input: Any) -> str:
        raise ToolSuspension([])

    runtime = scripted_runtime(_provider("after"), tools=[json_tool("delegate", empty)])
    async with runtime:
        result = await runtime.run(make_agent(tools=("delegate",)), "go")
    assert result.status == "completed"
    failed = next(i for i in result.items if isinstance(i, ToolResultItem))
    assert failed.status == "error"


async def test_a_suspension_inside_a_parallel_read_batch_keeps_the_other_results() -> None:
    lookups: list[str] = []

    def lookup(ctx: ToolExecutionContext, _input: Any) -> str:
        lookups.append(ctx.call_id)
        return "found"

    delegate = Delegate("child:p")
    provider = ScriptedProvider(
        [
            ScriptedTurn(
                tool_calls=[
                    ToolCallItem(id="r1", name="lookup", input={}),
                    ToolCallItem(id="r2", name="delegate", input={}),
                ]
            ),
            "both done",
        ]
    )
    runtime = scripted_runtime(
        provider, tools=[json_tool("lookup", lookup), json_tool("delegate", delegate)]
    )
    async with runtime:
        first = await runtime.run(make_agent(tools=("lookup", "delegate")), "go")
        assert [i.id for i in first.interruptions] == ["child:p"]
        done = await _resume(runtime, first, InterruptionDecision.approve("child:p"))
    assert lookups == ["r1"]  # committed in the batch, never run again
    results = {i.call_id: i.status for i in done.items if isinstance(i, ToolResultItem)}
    assert results == {"r1": "success", "r2": "success"}


async def test_hosts_emit_events_into_a_live_run_only() -> None:
    sink = InMemoryEventSink()
    emitted: list[bool] = []

    async def report(ctx: ToolExecutionContext, _input: Any) -> str:
        assert runtime.is_run_active(ctx.run_id)
        emitted.append(await runtime.emit_run_event(ctx.run_id, "host.note", {"n": 1}))
        return "ok"

    provider = ScriptedProvider(
        [ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="report", input={})]), "done"]
    )
    runtime = scripted_runtime(provider, tools=[json_tool("report", report)], event_sinks=[sink])
    async with runtime:
        async with runtime.stream(make_agent(tools=("report",)), "go", run_id="r1") as handle:
            streamed = [event async for event in handle]
        assert emitted == [True]
        assert not runtime.is_run_active("r1")
        assert not await runtime.emit_run_event("r1", "host.note", {"n": 2})
        with pytest.raises(RunError) as reserved:
            await runtime.emit_run_event("r1", "run.completed", {})
        assert reserved.value.code == "RUN_EVENT_RESERVED"
    note = next(e for e in streamed if e.type == "host.note")
    assert note.run_id == "r1" and note.data == {"n": 1}
    sequences = [e.sequence for e in streamed]
    assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)
    assert [e.type for e in sink.events].count("host.note") == 1
