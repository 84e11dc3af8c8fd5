"""§7.1-7.5 / §7.12 rows and D5 fixes that had no dedicated test yet (see the README table)."""

from __future__ import annotations

from typing import Any, cast

import pytest
from runtime_testkit import RecordingCheckpointStore, json_tool, make_agent, scripted_runtime

from actoviq.core import JsonObject, RunLimitsPatch, ToolCallItem, ToolResultItem
from actoviq.events import InMemoryEventSink
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, InterruptionDecision, RunStateError, ToolExecutionContext

EMAIL = ToolCallItem(id="c1", name="send", input={})


def _approval_runtime(
    script: list[Any], sent: list[str], **options: Any
) -> tuple[AgentRuntime, Any]:
    def send(ctx: ToolExecutionContext, value: Any) -> str:
        sent.append(ctx.call_id)
        return "sent"

    agent = make_agent(id="mailer", tools=("send",))
    runtime = scripted_runtime(
        ScriptedProvider(script),
        tools=[json_tool("send", send, effect="side-effect", requires_approval=True)],
        agents=[agent],
        **options,
    )
    return runtime, agent


async def test_state_without_agent_config_digest_is_refused() -> None:
    """03 §1.18 step 5 / D3: a state must name the config it was produced with."""
    sent: list[str] = []
    runtime, agent = _approval_runtime([ScriptedTurn(tool_calls=[EMAIL]), "ok"], sent)
    async with runtime:
        result = await runtime.run(agent, "mail", run_id="d1")
        state = dict(cast(JsonObject, result.state))
        for blank in ("", "  "):
            with pytest.raises(RunStateError, match="agentConfigDigest") as info:
                runtime.resume({**state, "agentConfigDigest": blank})
            assert info.value.code == "RUN_STATE_INVALID"
        del state["agentConfigDigest"]
        with pytest.raises(RunStateError, match="agentConfigDigest"):
            runtime.resume(state, [InterruptionDecision.approve("d1:c1")])
    assert sent == []  # refused before anything ran


async def test_interrupted_state_is_checkpointed_and_resumable_after_restart() -> None:
    """§7.3 row 42 (CKPT): the interrupted checkpoint survives a runtime restart; resume with
    approve executes the side effect exactly once and the checkpoint is finally deleted."""
    store = RecordingCheckpointStore()
    sent: list[str] = []
    script: list[Any] = [ScriptedTurn(tool_calls=[EMAIL]), "written"]
    first, agent = _approval_runtime(script, sent, checkpoint_store=store)
    async with first:
        await first.run(agent, "mail", run_id="ck1")
    saved = await store.load("ck1")
    assert saved is not None and saved["status"] == "interrupted"
    pending = cast(list[JsonObject], saved["pendingTools"])
    assert [p["status"] for p in pending] == ["awaiting_approval"]
    second, agent = _approval_runtime(["written"], sent, checkpoint_store=store)
    async with second:
        final = await second.resume(saved, [InterruptionDecision.approve("ck1:c1")]).result()
    assert final.status == "completed" and final.output == "written" and sent == ["c1"]
    assert store.deletes == ["ck1"]
    assert store.saves[-1]["status"] == "completed"


async def test_parallel_batch_commits_once_in_call_order_and_policy_serialises() -> None:
    """§7.12 row 104: one checkpoint write for a parallel read batch, results in call order;
    with maxParallelTools=1 the same calls run one by one (each prepared/started/committed)."""
    calls = [ToolCallItem(id=f"r{i}", name="read", input={}) for i in range(3)]

    def read(ctx: ToolExecutionContext, value: Any) -> str:
        return ctx.call_id

    async def run(limits: RunLimitsPatch | None) -> tuple[list[JsonObject], list[str]]:
        store = RecordingCheckpointStore()
        provider = ScriptedProvider([ScriptedTurn(tool_calls=calls), "ok"])
        runtime = scripted_runtime(
            provider,
            tools=[json_tool("read", read)],
            checkpoint_store=store,
        )
        async with runtime:
            await runtime.run(make_agent(id="reader", tools=("read",), limits=limits), "go")
        order = [i.call_id for i in provider.requests[1].input if isinstance(i, ToolResultItem)]
        return store.saves, order

    saves, order = await run(None)
    assert order == ["r0", "r1", "r2"]
    tool_saves = [s for s in saves if s["turn"] == 1]
    # model response (all prepared) + one batch commit (results appended, pending cleared)
    assert len(tool_saves) == 2 and tool_saves[1]["pendingTools"] == []
    saves, order = await run(RunLimitsPatch(max_parallel_tools=1))
    assert order == ["r0", "r1", "r2"]
    states = [
        [cast(str, p["status"]) for p in cast(list[JsonObject], s["pendingTools"])]
        for s in saves
        if s["turn"] == 1
    ]
    assert ["started", "prepared", "prepared"] in states
    assert ["committed", "committed", "started"] in states


async def test_state_saves_precede_their_events() -> None:
    """§7.12 row 102 / 03 §5.2: the checkpoint for a change is written before its event."""
    sink = InMemoryEventSink()
    saves: list[tuple[str, int, int]] = []  # (status, pending calls, events dispatched so far)

    class OrderedStore(RecordingCheckpointStore):
        async def save(self, state: JsonObject) -> None:
            await super().save(state)
            pending = len(cast(list[Any], state["pendingTools"]))
            saves.append((cast(str, state["status"]), pending, len(sink.events)))

    def read(ctx: ToolExecutionContext, value: Any) -> str:
        return "x"

    call = ToolCallItem(id="a", name="read", input={})
    runtime = scripted_runtime(
        ScriptedProvider([ScriptedTurn(tool_calls=[call]), "ok"]),
        tools=[json_tool("read", read)],
        checkpoint_store=OrderedStore(),
        event_sinks=[sink],
    )
    async with runtime:
        await runtime.run(make_agent(id="r", tools=("read",)), "go")
    types = sink.types()

    def position(event_type: str) -> int:
        return types.index(event_type)

    # the model-response save (the call prepared) precedes model.completed
    prepared = next(seen for _, pending, seen in saves if pending == 1)
    assert prepared <= position("model.completed")
    # the batch commit (results appended, pending cleared) precedes tool.completed
    commit = next(seen for _, pending, seen in saves[2:] if pending == 0)
    assert position("tool.started") < commit <= position("tool.completed")
    # the completed save precedes run.completed
    completed = next(seen for status, _, seen in saves if status == "completed")
    assert completed == position("run.completed")


async def test_close_aggregates_sink_and_service_close_failures() -> None:
    """§7.3 row 43: a failing sink close and a failing service close end up in one group."""
    from actoviq.runtime import RuntimeServices, ServiceDefinition

    class FailingSink:
        @property
        def id(self) -> str:
            return "failing-sink"

        def write(self, event: Any) -> None:
            return None

        async def aclose(self) -> None:
            raise OSError("sink close failed")

    class FailingService:
        async def close(self) -> None:
            raise RuntimeError("service close failed")

    services = RuntimeServices({"memory": ServiceDefinition(factory=FailingService)})
    runtime = scripted_runtime(
        ScriptedProvider(["hi"]),
        services=services,
        event_sinks=[FailingSink()],
    )
    await services.resolve("memory")
    with pytest.raises(ExceptionGroup) as info:
        await runtime.close()
    assert info.value.message == "AgentRuntime close failed."
    messages = sorted(str(error) for error in _leaves(info.value))
    assert messages == ["service close failed", "sink close failed"]
    await runtime.close()  # idempotent


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    leaves: list[BaseException] = []
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            leaves.extend(_leaves(cast(BaseExceptionGroup[Any], error)))
        else:
            leaves.append(error)
    return leaves
