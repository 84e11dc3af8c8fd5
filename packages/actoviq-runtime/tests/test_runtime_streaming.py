"""Streaming and events inside the runtime (§7.4), sessions and concurrency (§7.5)."""

from __future__ import annotations

import asyncio

import pytest
from runtime_testkit import make_agent, scripted_runtime, signalled_turn, wait_event

from actoviq.core import TextItem
from actoviq.events import InMemoryEventSink, RunEvent, create_root_trace_context
from actoviq.providers import (
    ModelCallContext,
    ModelResponse,
    PreparedCall,
    ProviderEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageReport,
)
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    InMemorySessionStore,
    RunHandleConsumedError,
    RuntimeServices,
    ServiceDefinition,
    StoreRuntimeSessionAdapter,
)


async def test_streamed_deltas_concatenate_to_the_output() -> None:
    provider = ScriptedProvider([ScriptedTurn(text="streamed", stream_deltas=["str", "eam", "ed"])])
    async with scripted_runtime(provider) as runtime, runtime.stream(make_agent(), "x") as handle:
        deltas = [
            str(e.data["delta"])
            for e in [event async for event in handle]
            if e.type == "model.text.delta" and isinstance(e.data, dict)
        ]
        result = await handle.result()
    assert "".join(deltas) == "streamed" and result.output == "streamed"


async def test_every_stream_event_kind_is_mapped() -> None:
    from actoviq.core import Usage

    events = [
        TextDelta(delta="t"),
        ToolCallDelta(call_id="c", arguments_delta="{}", name="n"),
        ReasoningDelta(delta="r"),
        UsageReport(usage=Usage(requests=1)),
        ProviderEvent(provider="p", event={"raw": 1}),
    ]
    provider = ScriptedProvider([ScriptedTurn(text="t", events=events)])
    async with scripted_runtime(provider) as runtime, runtime.stream(make_agent(), "x") as handle:
        types = [event.type async for event in handle]
    for kind in (
        "model.text.delta",
        "model.tool_call.delta",
        "model.reasoning.delta",
        "model.usage",
        "model.provider.event",
        "model.response.completed",
    ):
        assert kind in types


async def test_a_dropping_processor_removes_events_from_stream_and_sinks() -> None:
    class DropRequested:
        id = "drop-requested"

        def process(self, event: RunEvent) -> RunEvent | None:
            return None if event.type == "model.requested" else event

    sink = InMemoryEventSink()
    runtime = scripted_runtime(
        ScriptedProvider(["x"]), event_processors=[DropRequested()], event_sinks=[sink]
    )
    async with runtime, runtime.stream(make_agent(), "x") as handle:
        types = [event.type async for event in handle]
    assert "model.requested" not in types and "model.requested" not in sink.types()
    assert sink.types()[-1] == "run.completed"


async def test_child_trace_fields_on_every_event() -> None:
    root = create_root_trace_context("parent")
    async with (
        scripted_runtime(ScriptedProvider(["x"])) as runtime,
        runtime.stream(make_agent(), "x", parent_run_id="parent", parent_trace=root) as handle,
    ):
        events = [event async for event in handle]
    assert events and all(
        e.parent_run_id == "parent"
        and e.trace_id == root.trace_id
        and e.parent_span_id == root.span_id
        and e.span_id != root.span_id
        for e in events
    )


async def test_leaving_the_handle_cancels_a_hung_provider() -> None:
    provider = ScriptedProvider([ScriptedTurn(text="never", delay=60)])
    runtime = scripted_runtime(provider)
    async with runtime:
        handle = runtime.stream(make_agent(), "x")
        async with handle:
            async for event in handle:
                assert event.type == "run.started"
                break
        result = await handle.result()
    assert result.status == "cancelled"


async def test_cancel_yields_run_cancelled_and_the_iteration_ends() -> None:
    provider = ScriptedProvider([ScriptedTurn(text="never", delay=60)])
    async with scripted_runtime(provider) as runtime:
        handle = runtime.stream(make_agent(), "x")
        seen: list[str] = []
        async for event in handle:
            seen.append(event.type)
            if event.type == "model.requested":
                handle.cancel()
        assert seen[-1] == "run.cancelled"
        assert (await handle.result()).status == "cancelled"


async def test_athrow_reraises_and_cancels() -> None:
    provider = ScriptedProvider([ScriptedTurn(text="never", delay=60)])
    async with scripted_runtime(provider) as runtime:
        handle = runtime.stream(make_agent(), "x")
        with pytest.raises(KeyError):
            await handle.athrow(KeyError("consumer broke"))
        assert (await handle.result()).status == "cancelled"


async def test_single_consumer_and_buffered_coalescing_after_completion() -> None:
    provider = ScriptedProvider([ScriptedTurn(text="ab", stream_deltas=["a", "b"], reasoning="r")])
    async with scripted_runtime(provider) as runtime:
        handle = runtime.stream(make_agent(), "x")
        await handle.result()
        events = [event async for event in handle]
        with pytest.raises(RunHandleConsumedError):
            handle.__aiter__()
        deltas = [e.data for e in events if e.type == "model.text.delta"]
    assert deltas == [{"delta": "ab", "outputIndex": 0}]


async def test_run_deadline_cancels_with_a_typed_reason() -> None:
    from actoviq.core import RunLimitsPatch

    sink = InMemoryEventSink()
    provider = ScriptedProvider([ScriptedTurn(text="slow", delay=5)])
    result = await scripted_runtime(provider, event_sinks=[sink]).run(
        make_agent(limits=RunLimitsPatch(run_deadline_ms=30)), "x"
    )
    assert result.status == "cancelled"
    assert sink.events[-1].data == {
        "reason": "Run deadline exceeded.",
        "code": "RUN_DEADLINE_EXCEEDED",
    }


async def test_model_call_timeout_is_a_typed_failure() -> None:
    from actoviq.core import RunLimitsPatch
    from actoviq.providers import ModelCallTimeoutError

    provider = ScriptedProvider([ScriptedTurn(text="slow", delay=5)])
    with pytest.raises(ModelCallTimeoutError) as info:
        await scripted_runtime(provider).run(
            make_agent(limits=RunLimitsPatch(model_call_timeout_ms=30)), "x"
        )
    assert info.value.code == "MODEL_CALL_TIMEOUT"


# -- sessions and concurrency -----------------------------------------------------------------


def _sessions() -> tuple[RuntimeServices, InMemorySessionStore, list[int]]:
    store = InMemorySessionStore()
    calls: list[int] = []

    def factory() -> object:
        calls.append(1)
        return StoreRuntimeSessionAdapter(store)

    return RuntimeServices({"sessions": ServiceDefinition(factory=factory)}), store, calls


async def test_two_sequential_session_runs_share_history() -> None:
    services, store, calls = _sessions()
    provider = ScriptedProvider(["first", "second"])
    runtime = scripted_runtime(provider, services=services)
    await runtime.run(make_agent(), "one", session_id="s")
    await runtime.run(make_agent(), "two", session_id="s")
    assert calls == [1]
    assert list(provider.requests[1].input) == [
        TextItem(role="system", text="Answer briefly."),
        TextItem(role="user", text="one"),
        TextItem(role="assistant", text="first"),
        TextItem(role="user", text="two"),
    ]
    record = await store.get(tenant_id="default", session_id="s")
    assert record is not None and record.revision == 2


async def test_session_service_required() -> None:
    from actoviq.core import RunError

    with pytest.raises(RunError) as info:
        await scripted_runtime(ScriptedProvider(["x"])).run(make_agent(), "x", session_id="s")
    assert info.value.code == "SESSION_SERVICE_REQUIRED"


async def test_caller_expected_revision_is_a_cas() -> None:
    from actoviq.core import RunError

    services, _, _ = _sessions()
    runtime = scripted_runtime(ScriptedProvider(["x"]), services=services)
    with pytest.raises(RunError) as info:
        await runtime.run(make_agent(), "x", session_id="s", expected_session_revision="7")
    assert info.value.code == "SESSION_REVISION_CONFLICT"


async def test_same_session_runs_are_serialised() -> None:
    services, _, _ = _sessions()
    called = asyncio.Event()
    # The first reply is slow only so that an unserialised runtime would call the provider again
    # meanwhile; no assertion waits on that delay.
    slow = signalled_turn(ScriptedTurn(text="reply-0", delay=0.2), called)
    provider = ScriptedProvider([slow, "reply-1"])
    runtime = scripted_runtime(provider, services=services)
    agent = make_agent()
    first = asyncio.create_task(runtime.run(agent, "a", session_id="s"))
    second = asyncio.create_task(runtime.run(agent, "b", session_id="s"))
    await wait_event(called)
    assert len(provider.calls) == 1
    await asyncio.gather(first, second)
    assert TextItem(role="assistant", text="reply-0") in provider.requests[1].input


class CountingProvider(ScriptedProvider):
    """Counts concurrent calls. The first ``full`` calls wait for each other (a barrier), so the
    peak reaches the permit limit however the loop schedules the runs; the last to arrive lets
    100 loop turns pass before releasing them, ample for a run past the limit to show up (loop
    turns, not a timer: the outcome does not depend on the machine's speed)."""

    def __init__(self, full: int) -> None:
        super().__init__(["ok"], repeat_last=True)
        self.active = 0
        self.peak = 0
        self.full = full
        self.filled = asyncio.Event()

    async def _generate(self, prepared: PreparedCall, context: ModelCallContext) -> ModelResponse:
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            if self.active >= self.full and not self.filled.is_set():
                for _ in range(100):
                    await asyncio.sleep(0)
                self.filled.set()
            await wait_event(self.filled)
            return await super()._generate(prepared, context)
        finally:
            self.active -= 1


async def test_run_gate_limits_concurrency() -> None:
    services, store, _ = _sessions()
    provider = CountingProvider(full=8)
    runtime = scripted_runtime(provider, max_concurrent_runs=8, services=services)
    agent = make_agent()
    results = await asyncio.gather(
        *(runtime.run(agent, f"q{i}", session_id=f"s{i}") for i in range(300))
    )
    assert all(r.status == "completed" for r in results)
    assert provider.peak == 8 and len(provider.calls) == 300
    assert len(await store.list_sessions(tenant_id="default", limit=1000)) == 300


async def test_run_cancelled_while_waiting_for_a_permit() -> None:
    called = asyncio.Event()
    # the first run holds the only permit until its (slow) model call returns
    provider = ScriptedProvider(
        [signalled_turn(ScriptedTurn(text="slow", delay=0.2), called), "never"]
    )
    runtime = scripted_runtime(provider, max_concurrent_runs=1)
    agent = make_agent()
    first = runtime.stream(agent, "a")
    second = runtime.stream(agent, "b")
    await wait_event(called)
    second.cancel("no longer needed")
    assert (await second.result()).status == "cancelled"
    assert (await first.result()).status == "completed"
    assert len(provider.calls) == 1
