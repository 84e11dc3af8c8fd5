"""AgentRuntime core behaviour (spec 03 §7.1) and validation/limits/lifecycle (§7.2)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from runtime_testkit import (
    RecordingCheckpointStore,
    json_tool,
    make_agent,
    scripted_runtime,
    signalled_turn,
    wait_event,
)

from actoviq.core import (
    AbortController,
    AgentSpec,
    AgentSpecError,
    GuardrailDecision,
    InputGuardrail,
    OutputGuardrail,
    OutputSchema,
    RunContext,
    RunError,
    RunLimitsPatch,
    TextItem,
    ToolCallItem,
    ToolResultItem,
)
from actoviq.events import InMemoryEventSink
from actoviq.providers import ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRegistrationError,
    MiddlewareInvariantViolationError,
    MiddlewareStage,
    RunAlreadyActiveError,
    RuntimeClosedError,
    RuntimeConfigurationError,
    RuntimeServices,
    ServiceDefinition,
    ToolExecutionContext,
    define_middleware,
)


def _allow(ctx: RunContext[Any], value: Any) -> GuardrailDecision:
    return GuardrailDecision(allowed=True)


def _deny(ctx: RunContext[Any], value: Any) -> GuardrailDecision:
    return GuardrailDecision(allowed=False)


def _answer(value: Any) -> int:
    return int(value["answer"])


def _one(ctx: ToolExecutionContext, value: Any) -> int:
    return 1


async def test_minimal_text_run_never_resolves_unused_services() -> None:
    calls: list[str] = []

    def memory_factory() -> object:
        calls.append("memory")
        return object()

    services = RuntimeServices({"memory": ServiceDefinition(factory=memory_factory)})
    provider = ScriptedProvider(["hello"])
    runtime = scripted_runtime(provider, services=services)
    result = await runtime.run(make_agent(), "hi")
    assert result.status == "completed" and result.output == "hello"
    assert list(provider.requests[0].input) == [
        TextItem(role="system", text="Answer briefly."),
        TextItem(role="user", text="hi"),
    ]
    await runtime.close()
    assert calls == []
    assert services.is_initialized("memory") is False


async def test_tool_loop_feeds_results_back_and_aggregates_usage() -> None:
    def double_value(ctx: ToolExecutionContext, value: Any) -> int:
        return value["value"] * 2

    double = json_tool("double", double_value)
    provider = ScriptedProvider(
        [
            ScriptedTurn(
                tool_calls=[ToolCallItem(id="call-1", name="double", input={"value": 3})],
                usage={"inputTokens": 5, "outputTokens": 1, "cacheReadTokens": 1},
            ),
            ScriptedTurn(
                text="6", usage={"inputTokens": 6, "outputTokens": 2, "reasoningTokens": 2}
            ),
        ]
    )
    runtime = scripted_runtime(provider, tools=[double])
    result = await runtime.run(make_agent(tools=("double",)), "double 3")
    assert result.output == "6"
    second = provider.requests[1].input
    assert ToolResultItem(call_id="call-1", name="double", status="success", output=6) in second
    usage = result.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens, usage.total_tokens) == (
        2,
        11,
        3,
        14,
    )
    assert usage.cache_read_tokens == 1 and usage.reasoning_tokens == 2


async def test_parallel_reads_run_concurrently_and_keep_call_order() -> None:
    active = 0
    peak = 0
    release_a = asyncio.Event()

    async def tool_a(ctx: ToolExecutionContext, value: Any) -> str:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await release_a.wait()
        active -= 1
        return "a"

    async def tool_b(ctx: ToolExecutionContext, value: Any) -> str:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0)
        active -= 1
        release_a.set()  # b resolves first, then a
        return "b"

    provider = ScriptedProvider(
        [
            ScriptedTurn(
                tool_calls=[
                    ToolCallItem(id="ca", name="a", input={}),
                    ToolCallItem(id="cb", name="b", input={}),
                ]
            ),
            "done",
        ]
    )
    runtime = scripted_runtime(provider, tools=[json_tool("a", tool_a), json_tool("b", tool_b)])
    agent = make_agent(tools=("a", "b"), limits=RunLimitsPatch(max_parallel_tools=2))
    await runtime.run(agent, "go")
    assert peak == 2
    results = [item for item in provider.requests[1].input if isinstance(item, ToolResultItem)]
    assert [item.call_id for item in results] == ["ca", "cb"]


async def test_structured_output_is_parsed() -> None:
    provider = ScriptedProvider([ScriptedTurn(structured_output={"answer": 42})])
    schema: OutputSchema[int] = OutputSchema(
        name="answer",
        schema={"type": "object"},
        parse=_answer,
    )
    result = await scripted_runtime(provider).run(make_agent(output=schema), "q")
    request: ModelRequest = provider.requests[0]
    assert request.output_schema is not None and request.output_schema.name == "answer"
    assert result.output == 42


async def test_structured_output_missing_and_raw_value() -> None:
    missing = ScriptedProvider(["no structure"])
    with pytest.raises(RunError) as info:
        await scripted_runtime(missing).run(
            make_agent(output=OutputSchema(name="s", schema={"type": "object"}), output_retries=0),
            "q",
        )
    assert info.value.code == "STRUCTURED_OUTPUT_MISSING"
    raw = ScriptedProvider([ScriptedTurn(structured_output=[1, 2])])
    result = await scripted_runtime(raw).run(
        make_agent(output=OutputSchema(name="s", schema={"type": "array"})), "q"
    )
    assert result.output == [1, 2]


async def test_wrap_model_call_order_and_inspection() -> None:
    order: list[str] = []

    def wrapper(name: str) -> Any:
        async def handle(ctx: Any, next: Any) -> Any:
            order.append(f"{name}.before")
            value = await next()
            order.append(f"{name}.after")
            return value

        return handle

    runtime = scripted_runtime(
        ScriptedProvider(["ok"]),
        middleware=[
            define_middleware(
                "inner", MiddlewareStage.WRAP_MODEL_CALL, wrapper("inner"), priority=20
            ),
            define_middleware(
                "outer", MiddlewareStage.WRAP_MODEL_CALL, wrapper("outer"), priority=10
            ),
        ],
    )
    await runtime.run(make_agent(), "x")
    assert order == ["outer.before", "inner.before", "inner.after", "outer.after"]
    assert "wrapModelCall[0] @10 outer" in runtime.inspect_middleware()


async def test_wrap_model_call_cannot_skip_the_provider() -> None:
    provider = ScriptedProvider(["never"])

    def forge(ctx: Any, next: Any) -> Any:
        return object()

    runtime = scripted_runtime(
        provider, middleware=[define_middleware("forge", MiddlewareStage.WRAP_MODEL_CALL, forge)]
    )
    with pytest.raises(MiddlewareInvariantViolationError):
        await runtime.run(make_agent(), "x")
    assert provider.calls == []


async def test_after_model_response_must_return_a_model_response() -> None:
    provider = ScriptedProvider(["text"])

    async def bad(ctx: Any, next: Any) -> Any:
        await next()
        return {"output": [{"type": "mystery"}]}

    runtime = scripted_runtime(
        provider, middleware=[define_middleware("bad", MiddlewareStage.AFTER_MODEL_RESPONSE, bad)]
    )
    with pytest.raises(MiddlewareInvariantViolationError):
        await runtime.run(make_agent(), "x")
    assert len(provider.calls) == 1


async def test_wrap_tool_call_must_return_the_runner_output_unchanged() -> None:
    executed: list[str] = []

    def run_tool(ctx: ToolExecutionContext, value: Any) -> Any:
        executed.append("run")
        return {"v": 1}

    tool = json_tool("t", run_tool)

    async def swap(ctx: Any, next: Any) -> Any:
        await next()
        return {"value": 1}

    provider = ScriptedProvider(
        [ScriptedTurn(tool_calls=[ToolCallItem(id="c", name="t", input={})]), "done"]
    )
    runtime = scripted_runtime(
        provider,
        tools=[tool],
        middleware=[define_middleware("swap", MiddlewareStage.WRAP_TOOL_CALL, swap)],
    )
    with pytest.raises(MiddlewareInvariantViolationError):
        await runtime.run(make_agent(tools=("t",)), "x")
    assert executed == ["run"]


async def test_agent_validation_happens_at_spec_construction() -> None:
    with pytest.raises(AgentSpecError, match=r"Agent id must not be empty"):
        make_agent(id=" ")
    with pytest.raises(AgentSpecError, match="name must not be empty"):
        make_agent(name="")
    with pytest.raises(AgentSpecError, match="instructions must be a string or function"):
        make_agent(instructions=3)
    for bad in (
        {"max_turns": 0},
        {"max_turns": 1.5},
        {"stream_buffer_size": 1},
        {"max_cost_usd": float("nan")},
    ):
        with pytest.raises(AgentSpecError, match="limits"):
            RunLimitsPatch(**bad)  # type: ignore[arg-type]


async def test_dynamic_instructions_and_guardrails() -> None:
    seen: list[str] = []

    def instructions(ctx: RunContext[Any]) -> str:
        seen.append(ctx.run_id)
        return f"You are run {ctx.run_id}."

    provider = ScriptedProvider(["fine"])
    agent = make_agent(
        instructions=instructions,
        input_guardrails=(InputGuardrail(id="in", evaluate=_allow),),
        output_guardrails=(OutputGuardrail(id="out", evaluate=_allow),),
    )
    result = await scripted_runtime(provider).run(agent, "x", run_id="r-dyn")
    assert result.status == "completed" and seen == ["r-dyn"]
    assert provider.requests[0].input[0] == TextItem(role="system", text="You are run r-dyn.")

    def bad_instructions(ctx: RunContext[Any]) -> Any:
        return 3

    bad = make_agent(id="bad", instructions=bad_instructions)
    with pytest.raises(RunError, match="resolve to a string"):
        await scripted_runtime(ScriptedProvider(["x"])).run(bad, "x")


async def test_guardrail_rejections_have_codes_and_phases() -> None:
    deny_in = make_agent(input_guardrails=(InputGuardrail(id="in", evaluate=_deny),))
    with pytest.raises(RunError) as info:
        await scripted_runtime(ScriptedProvider(["x"])).run(deny_in, "x")
    assert info.value.code == "INPUT_GUARDRAIL_REJECTED" and info.value.phase == "prepare_input"

    async def deny(ctx: RunContext[Any], output: Any) -> GuardrailDecision:
        return GuardrailDecision(allowed=False, reason="no secrets")

    deny_out = make_agent(output_guardrails=(OutputGuardrail(id="out", evaluate=deny),))
    with pytest.raises(RunError, match="no secrets") as info:
        await scripted_runtime(ScriptedProvider(["x"])).run(deny_out, "x")
    assert info.value.code == "OUTPUT_GUARDRAIL_REJECTED"


async def test_model_required_and_tool_not_found() -> None:
    with pytest.raises(RunError) as info:
        await scripted_runtime(ScriptedProvider(["x"])).run(make_agent(model=None), "x")
    assert info.value.code == "MODEL_REQUIRED"
    with pytest.raises(RunError) as info:
        await scripted_runtime(ScriptedProvider(["x"])).run(make_agent(tools=("missing",)), "x")
    assert info.value.code == "TOOL_NOT_FOUND" and info.value.phase == "before_run"


async def test_default_model_and_empty_instructions() -> None:
    provider = ScriptedProvider(["ok"])
    runtime = scripted_runtime(provider, default_model="scripted:fallback")
    result = await runtime.run(make_agent(model=None, instructions=""), "x")
    assert result.output == "ok"
    first = provider.requests[0].input[0]
    assert isinstance(first, TextItem) and first.role == "user"


async def test_registration_identity_and_digest() -> None:
    runtime = scripted_runtime(ScriptedProvider(["x"]))
    agent = make_agent()
    assert runtime.register_agent(agent) is runtime
    assert runtime.register_agent(agent) is runtime
    runtime.register_agent(make_agent())  # an equal-digest spec is accepted (Q22)
    with pytest.raises(AgentRegistrationError, match="already registered"):
        runtime.register_agent(make_agent(instructions="Something else."))


async def test_duplicate_active_run_close_and_closed_runtime() -> None:
    called = asyncio.Event()
    # a model call that does not end by itself: runtime.close() cancels it
    provider = ScriptedProvider([signalled_turn(ScriptedTurn(text="slow", delay=30), called)])
    runtime = scripted_runtime(provider)
    agent = make_agent()
    first = asyncio.create_task(runtime.run(agent, "x", run_id="same"))
    await wait_event(called)
    with pytest.raises(RunAlreadyActiveError, match=r'Run "same" is already active\.'):
        await runtime.run(agent, "x", run_id="same")
    await runtime.close()
    assert (await first).status == "cancelled"
    with pytest.raises(RuntimeClosedError, match=r"AgentRuntime is closed\."):
        await runtime.run(agent, "x")
    await runtime.close()


async def test_usage_budgets() -> None:
    tokens = ScriptedProvider([ScriptedTurn(text="x", usage={"requests": 0, "totalTokens": 3})])
    with pytest.raises(RunError) as info:
        await scripted_runtime(tokens).run(
            make_agent(limits=RunLimitsPatch(max_total_tokens=2)), "x"
        )
    assert info.value.code == "USAGE_LIMIT_EXCEEDED"
    cost = ScriptedProvider([ScriptedTurn(text="x", usage={"costUsd": 2})])
    with pytest.raises(RunError) as info:
        await scripted_runtime(cost).run(make_agent(limits=RunLimitsPatch(max_cost_usd=1)), "x")
    assert info.value.code == "USAGE_LIMIT_EXCEEDED"


async def test_requests_carry_no_output_token_limit_the_run_limit_is_a_budget() -> None:
    # Issue 13 defect 1: the run limit's default (64,000) went out as every request's output
    # limit, above many models' maximum. The request carries a limit only when a user sets one
    # in model settings; the run limit is checked against the run's cumulative output tokens.
    provider = ScriptedProvider([ScriptedTurn(text="x", usage={"outputTokens": 5})])
    result = await scripted_runtime(provider).run(make_agent(), "x")
    assert result.output == "x"
    assert provider.requests[0].max_output_tokens is None
    over = ScriptedProvider([ScriptedTurn(text="x", usage={"outputTokens": 6, "totalTokens": 6})])
    with pytest.raises(RunError) as info:
        await scripted_runtime(over).run(
            make_agent(limits=RunLimitsPatch(max_output_tokens=5)), "x"
        )
    assert info.value.code == "USAGE_LIMIT_EXCEEDED"
    assert info.value.details == {"totalTokens": 6, "outputTokens": 6, "costUsd": 0}
    equal = ScriptedProvider([ScriptedTurn(text="ok", usage={"outputTokens": 5})])
    done = await scripted_runtime(equal).run(
        make_agent(limits=RunLimitsPatch(max_output_tokens=5)), "x"
    )
    assert done.output == "ok"


async def test_failing_tool_becomes_an_error_result() -> None:
    def boom(ctx: ToolExecutionContext, value: Any) -> Any:
        raise RuntimeError("kaput")

    provider = ScriptedProvider(
        [ScriptedTurn(tool_calls=[ToolCallItem(id="c", name="boom", input={})]), "recovered"]
    )
    result = await scripted_runtime(provider, tools=[json_tool("boom", boom)]).run(
        make_agent(tools=("boom",)), "x"
    )
    assert result.output == "recovered"
    error = next(i for i in provider.requests[1].input if isinstance(i, ToolResultItem))
    assert error.status == "error" and error.output["kind"] == "execution"  # type: ignore[index]


async def test_max_turns_exceeded() -> None:
    provider = ScriptedProvider(
        [ScriptedTurn(tool_calls=[ToolCallItem(id="c", name="t", input={})])], repeat_last=True
    )
    with pytest.raises(RunError) as info:
        await scripted_runtime(provider, tools=[json_tool("t", _one)]).run(
            make_agent(tools=("t",), limits=RunLimitsPatch(max_turns=1)), "x"
        )
    assert info.value.code == "MAX_TURNS_EXCEEDED"


async def test_pre_aborted_signal_cancels_without_calling_the_provider() -> None:
    provider = ScriptedProvider(["never"])
    controller = AbortController()
    controller.abort("stop")
    result = await scripted_runtime(provider).run(make_agent(), "x", signal=controller.signal)
    assert result.status == "cancelled" and provider.calls == []


async def test_max_concurrent_runs_is_validated() -> None:
    with pytest.raises(RuntimeConfigurationError, match="maxConcurrentRuns must be a positive"):
        scripted_runtime(ScriptedProvider(), max_concurrent_runs=0)


async def test_inspect_middleware_for_plain_agent_is_empty() -> None:
    runtime = scripted_runtime(ScriptedProvider())
    agent = make_agent()
    assert runtime.inspect_middleware(agent) == "" == runtime.inspect_middleware(agent)


async def test_checkpoints_saved_and_deleted_once() -> None:
    store = RecordingCheckpointStore()
    await scripted_runtime(ScriptedProvider(["x"]), checkpoint_store=store).run(make_agent(), "x")
    assert len(store.saves) > 1 and len(store.deletes) == 1


async def test_failed_run_event_carries_the_error_code() -> None:
    sink = InMemoryEventSink()
    with pytest.raises(RunError):
        await scripted_runtime(ScriptedProvider(["x"]), event_sinks=[sink]).run(
            make_agent(model=None), "x"
        )
    failed = sink.events[-1]
    assert failed.type == "run.failed"
    assert failed.data["error"]["code"] == "MODEL_REQUIRED"  # type: ignore[index,call-overload]


async def test_agent_spec_repr_is_usable_in_tests() -> None:
    assert isinstance(make_agent(), AgentSpec)
