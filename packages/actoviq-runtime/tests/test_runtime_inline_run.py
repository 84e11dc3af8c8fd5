"""``runtime.run`` executes in its caller's task (``actoviq.runtime.inline_run``).

No task and no shield per run, with everything a task of its own guaranteed: context variables
stay in the run's copy, the caller's cancellation cancels the run (saved, ``run.cancelled``) and
then reaches the caller, the run's own aborts are withdrawn when it ends, ``close`` waits for the
run (not the caller), and a run started inside a run gets its own task.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest
from runtime_testkit import RecordingCheckpointStore, json_tool, make_agent, scripted_runtime

from actoviq.core import AbortController, JsonObject, RunResult, ToolCallItem
from actoviq.events import InMemoryEventSink
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, RuntimeTool

BOUND = 10.0  # seconds any wait may take (only reached when broken)

_var: contextvars.ContextVar[str] = contextvars.ContextVar("inline_run_var", default="caller")


def _calls(name: str) -> ScriptedProvider:
    return ScriptedProvider(
        [ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name=name, input={})]), "done"]
    )


def _blocking(entered: asyncio.Event) -> RuntimeTool:
    async def block(ctx: Any, args: Any) -> JsonObject:
        entered.set()
        await asyncio.sleep(BOUND)  # held until the run is cancelled
        return {"late": True}

    return json_tool("block", block)


def _ended_cancelled(store: RecordingCheckpointStore, sink: InMemoryEventSink) -> bool:
    final = store.saves[-1]
    return final["status"] == "cancelled" and sink.events[-1].type == "run.cancelled"


async def test_the_run_executes_in_the_callers_task_and_its_context_changes_stay_its_own() -> None:
    tasks: list[asyncio.Task[Any] | None] = []
    seen: list[str] = []

    async def probe(ctx: Any, args: Any) -> JsonObject:
        tasks.append(asyncio.current_task())
        seen.append(_var.get())
        _var.set("tool")
        return {"ok": True}

    _var.set("before")
    async with scripted_runtime(_calls("probe"), tools=[json_tool("probe", probe)]) as runtime:
        result = await runtime.run(make_agent(tools=("probe",)), "go")
    assert result.output == "done"
    assert tasks == [asyncio.current_task()]  # no task of its own
    assert seen == ["before"]  # the run starts from the caller's context ...
    assert _var.get() == "before"  # ... and what it sets stays in its copy


async def test_cancelling_the_caller_cancels_the_run_then_the_caller_gets_its_cancel() -> None:
    entered = asyncio.Event()
    store, sink = RecordingCheckpointStore(), InMemoryEventSink()
    runtime = scripted_runtime(
        _calls("block"), tools=[_blocking(entered)], checkpoint_store=store, event_sinks=[sink]
    )
    async with runtime:
        caller = asyncio.create_task(runtime.run(make_agent(tools=("block",)), "go"))
        async with asyncio.timeout(BOUND):
            await entered.wait()
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert runtime.active_runs == 0
    assert _ended_cancelled(store, sink)
    assert store.saves[-1]["lastEventSequence"] == sink.events[-1].sequence


async def test_a_timeout_around_the_run_still_raises_timeout_error() -> None:
    # The caller's cancellation request is not withdrawn by the run: asyncio.timeout sees it.
    scopes: list[asyncio.Timeout] = []

    async def expire(ctx: Any, args: Any) -> JsonObject:
        scopes[0].reschedule(-1.0)  # the caller's timeout expires while the run is in a tool
        await asyncio.sleep(BOUND)  # held until the run is cancelled
        return {"late": True}

    store, sink = RecordingCheckpointStore(), InMemoryEventSink()
    runtime = scripted_runtime(
        _calls("expire"),
        tools=[json_tool("expire", expire)],
        checkpoint_store=store,
        event_sinks=[sink],
    )

    async def run_under_timeout() -> None:
        async with asyncio.timeout(BOUND) as scope:
            scopes.append(scope)
            await runtime.run(make_agent(tools=("expire",)), "go")

    async with runtime:
        with pytest.raises(TimeoutError):
            await run_under_timeout()
    assert _ended_cancelled(store, sink)
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0


async def test_the_runs_own_abort_is_withdrawn_and_the_caller_goes_on() -> None:
    entered = asyncio.Event()
    controller = AbortController()

    async def block(ctx: Any, args: Any) -> JsonObject:
        entered.set()
        asyncio.get_running_loop().call_soon(controller.abort, "stop")
        await asyncio.sleep(BOUND)
        return {"late": True}

    async with scripted_runtime(_calls("block"), tools=[json_tool("block", block)]) as runtime:
        result = await runtime.run(make_agent(tools=("block",)), "go", signal=controller.signal)
        assert result.status == "cancelled"
        current = asyncio.current_task()
        assert current is not None and current.cancelling() == 0
        await asyncio.sleep(0)  # no cancellation left over for the caller
    assert entered.is_set()


async def test_close_waits_for_the_run_not_for_its_callers_task() -> None:
    entered, after = asyncio.Event(), asyncio.Event()
    runtime = scripted_runtime(_calls("block"), tools=[_blocking(entered)])
    outcome: list[RunResult[Any]] = []

    async def caller() -> None:
        outcome.append(await runtime.run(make_agent(tools=("block",)), "go"))
        async with asyncio.timeout(BOUND):
            await after.wait()  # the caller goes on after its run; close must not wait for it

    task = asyncio.create_task(caller())
    async with asyncio.timeout(BOUND):
        await entered.wait()
        await runtime.close()
    assert [r.status for r in outcome] == ["cancelled"] and not task.done()
    after.set()
    await task


async def test_a_run_started_inside_a_run_gets_its_own_task_and_the_parents_cancel() -> None:
    entered = asyncio.Event()
    store = RecordingCheckpointStore()
    hosts: list[asyncio.Task[Any] | None] = []
    runtime: AgentRuntime

    async def spawn(ctx: Any, args: Any) -> JsonObject:
        hosts.append(asyncio.current_task())
        child = await runtime.run(make_agent(id="child", model="kid:m", tools=("block",)), "child")
        return {"child": child.status}

    kid = ScriptedProvider(
        [ScriptedTurn(tool_calls=[ToolCallItem(id="k1", name="block", input={})])], id="kid"
    )
    runtime = AgentRuntime(
        models=ModelRegistry([_calls("spawn"), kid]),
        tools=[json_tool("spawn", spawn), _blocking(entered)],
        checkpoint_store=store,
    )
    controller = AbortController()
    async with runtime:
        parent = asyncio.create_task(
            runtime.run(make_agent(tools=("spawn",)), "go", signal=controller.signal)
        )
        async with asyncio.timeout(BOUND):
            await entered.wait()
            controller.abort("stop")
            result = await parent
    assert result.status == "cancelled"
    assert hosts == [parent]
    statuses = {str(s["agentId"]): s["status"] for s in store.saves}
    assert statuses == {"assistant": "cancelled", "child": "cancelled"}


async def test_a_run_lets_the_loop_run_other_tasks_before_it_starts() -> None:
    # As awaiting a run task did: runs gathered together start side by side (permits, fairness).
    order: list[str] = []

    async def other() -> None:
        order.append("other")

    def instructions(ctx: Any) -> str:
        order.append("run")
        return "Be brief."

    async with scripted_runtime(ScriptedProvider(["done"])) as runtime:
        sibling = asyncio.create_task(other())
        result = await runtime.run(make_agent(instructions=instructions), "go")
        await sibling
    assert result.output == "done" and order == ["other", "run"]
