"""Tools: descriptor, registry, policy and runner (spec 03 §7.8 rows 75-83, D5 fixes Q7-Q10)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from actoviq.core import AbortController, AbortSignal, ToolCallItem
from actoviq.runtime.tools import (
    AllowDecision,
    DenyDecision,
    InterruptDecision,
    RuleToolPolicy,
    RuntimeTool,
    ToolApproval,
    ToolArtifact,
    ToolAuthorizationRequest,
    ToolBehavior,
    ToolCallDenied,
    ToolDecision,
    ToolDefinitionError,
    ToolDescriptor,
    ToolEffect,
    ToolExecutionContext,
    ToolExecutionError,
    ToolFailure,
    ToolInterruptionRequiredError,
    ToolOutput,
    ToolRegistry,
    ToolRegistryError,
    ToolRunner,
    ToolSchema,
    denial_result,
    epoch_ms,
    failure_result,
    format_failure,
    is_parallel_safe,
    json_schema_input,
    run_in_call_order,
    success_result,
    tool_effect,
)

NUMBER_INPUT = json_schema_input(
    {
        "type": "object",
        "properties": {"value": {"type": "integer"}},
        "required": ["value"],
        "additionalProperties": False,
    }
)


class Recorder:
    """Counts executions and records the contexts tools saw."""

    def __init__(self, result: Callable[[Any], object] = lambda args: args["value"] * 2) -> None:
        self.calls = 0
        self.contexts: list[ToolExecutionContext] = []
        self._result = result

    def __call__(self, ctx: ToolExecutionContext, args: Any) -> object:
        self.calls += 1
        self.contexts.append(ctx)
        return self._result(args)


def make_tool(
    name: str = "double",
    execute: Callable[[ToolExecutionContext, Any], object] | None = None,
    *,
    effect: ToolEffect | None = None,
    requires_approval: bool = False,
    timeout_ms: float | None = None,
    output: ToolSchema | None = None,
    input: ToolSchema = NUMBER_INPUT,
) -> RuntimeTool:
    return RuntimeTool(
        descriptor=ToolDescriptor(
            name=name,
            description=f"{name} tool",
            input=input,
            output=output,
            behavior=ToolBehavior(
                effect=effect, requires_approval=requires_approval, timeout_ms=timeout_ms
            ),
        ),
        execute=execute if execute is not None else Recorder(),
    )


def context(
    call_id: str = "call-1",
    *,
    signal: AbortSignal | None = None,
    deadline: float | None = None,
    approval: ToolApproval | None = None,
) -> ToolExecutionContext:
    return ToolExecutionContext(
        run_id="run-1",
        call_id=call_id,
        signal=signal if signal is not None else AbortController().signal,
        deadline=deadline,
        approval=approval,
    )


class StaticPolicy:
    def __init__(self, decision: ToolDecision) -> None:
        self.decision = decision
        self.requests: list[ToolAuthorizationRequest] = []

    async def authorize(self, request: ToolAuthorizationRequest) -> ToolDecision:
        self.requests.append(request)
        return self.decision


async def expect_failure(awaitable: Awaitable[object]) -> ToolFailure:
    with pytest.raises(ToolExecutionError) as caught:
        await awaitable
    return caught.value.failure


# --- row 75, 81: descriptor and registry ---------------------------------------------------


def test_undeclared_effect_is_side_effect_and_declared_read_is_read() -> None:
    assert tool_effect(make_tool().descriptor) == "side-effect"
    assert make_tool(effect="read").descriptor.effect == "read"


def test_duplicate_registration_raises_already_registered() -> None:
    registry = ToolRegistry([make_tool("a")])
    with pytest.raises(ToolRegistryError, match="already registered"):
        registry.register(make_tool("a"))


def test_registry_name_execute_list_and_resolve() -> None:
    with pytest.raises(ToolDefinitionError, match="name"):
        make_tool("  ")
    with pytest.raises(ToolDefinitionError, match="execute"):
        RuntimeTool(descriptor=ToolDescriptor(name="x"), execute=None)  # type: ignore[arg-type]
    registry = ToolRegistry([make_tool("z"), make_tool(" a ")])
    listed = registry.list()
    assert [descriptor.name for descriptor in listed] == ["a", "z"]
    assert isinstance(listed, tuple)
    assert registry.resolve("missing") is None
    assert registry.has("a") and "z" in registry and len(registry) == 2


@pytest.mark.parametrize("timeout", [0, -1, math.nan, math.inf, True])
def test_invalid_timeout_ms_raises(timeout: float) -> None:
    with pytest.raises(ToolDefinitionError, match="timeoutMs"):
        ToolBehavior(timeout_ms=timeout)


def test_invalid_effect_and_artifact_id_raise() -> None:
    with pytest.raises(ToolDefinitionError, match="effect"):
        ToolBehavior(effect="write")  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="artifact id"):
        ToolArtifact(id="")


def test_descriptor_to_json_is_the_digest_shape() -> None:
    descriptor = make_tool(effect="read", requires_approval=True).descriptor
    assert descriptor.to_json() == {
        "name": "double",
        "description": "double tool",
        "effect": "read",
        "requiresApproval": True,
        "inputSchema": NUMBER_INPUT.json_schema,
    }


# --- rows 76-80, 82, 83: runner ------------------------------------------------------------


async def test_valid_input_executes_once_and_returns_value() -> None:
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]))
    output = await runner.execute("double", {"value": 3}, context())
    assert output.value == 6
    assert output.json_value() == 6
    assert recorder.calls == 1


async def test_invalid_input_is_validation_and_executor_not_called() -> None:
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]))
    failure = await expect_failure(runner.execute("double", {"value": "3"}, context()))
    assert failure.kind == "validation"
    assert failure.message == 'Invalid input for tool "double".'
    assert failure.cause is not None and "value" in str(failure.cause)
    assert recorder.calls == 0


async def test_policy_deny_is_denied_and_executor_not_called() -> None:
    recorder = Recorder()
    policy = StaticPolicy(DenyDecision(reason="not permitted"))
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]), policy=policy)
    failure = await expect_failure(runner.execute("double", {"value": 1}, context()))
    assert (failure.kind, failure.message) == ("denied", "not permitted")
    assert recorder.calls == 0
    # the policy saw the parsed input and the descriptor
    assert policy.requests[0].input == {"value": 1}
    assert policy.requests[0].tool.name == "double"


async def test_requires_approval_without_policy_interrupts() -> None:
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder, requires_approval=True)]))
    with pytest.raises(ToolInterruptionRequiredError) as caught:
        await runner.execute("double", {"value": 1}, context("c9"))
    assert caught.value.interruption_id == "run-1:c9"
    assert str(caught.value) == 'Tool "double" requires approval.'
    assert recorder.calls == 0


async def test_deny_wins_over_an_approval() -> None:
    recorder = Recorder()
    runner = ToolRunner(
        ToolRegistry([make_tool(execute=recorder, requires_approval=True)]),
        policy=StaticPolicy(DenyDecision(reason="not permitted")),
    )
    approval = ToolApproval(interruption_id="run-1:call-1")
    failure = await expect_failure(
        runner.execute("double", {"value": 1}, context(approval=approval))
    )
    assert failure.kind == "denied"
    assert recorder.calls == 0


async def test_allow_policy_cannot_lift_requires_approval() -> None:
    """Q8: the approval gate is independent; an allow-all policy still interrupts."""
    recorder = Recorder()
    runner = ToolRunner(
        ToolRegistry([make_tool(execute=recorder, requires_approval=True)]),
        policy=StaticPolicy(AllowDecision()),
    )
    with pytest.raises(ToolInterruptionRequiredError):
        await runner.execute("double", {"value": 1}, context())
    assert recorder.calls == 0
    approved = context(approval=ToolApproval(interruption_id="run-1:call-1"))
    assert (await runner.execute("double", {"value": 1}, approved)).value == 2


async def test_requires_approval_with_approval_and_no_policy_executes() -> None:
    runner = ToolRunner(ToolRegistry([make_tool(requires_approval=True)]))
    approved = context(approval=ToolApproval(interruption_id="run-1:call-1"))
    output = await runner.execute("double", {"value": 1}, approved)
    assert output.json_value() == 2


async def test_policy_interrupt_raises_and_the_matching_approval_passes() -> None:
    recorder = Recorder()
    decision = InterruptDecision(interruption_id="ask-1", reason="ask the user")
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]), policy=StaticPolicy(decision))
    with pytest.raises(ToolInterruptionRequiredError) as caught:
        await runner.execute("double", {"value": 1}, context())
    assert caught.value.decision is decision
    assert recorder.calls == 0
    other = context(approval=ToolApproval(interruption_id="something-else"))
    with pytest.raises(ToolInterruptionRequiredError):
        await runner.execute("double", {"value": 1}, other)
    matching = context(approval=ToolApproval(interruption_id="ask-1"))
    assert (await runner.execute("double", {"value": 1}, matching)).value == 2
    assert recorder.calls == 1


async def test_timeout_with_a_never_resolving_executor() -> None:
    async def hang(ctx: ToolExecutionContext, args: Any) -> object:
        await asyncio.Event().wait()
        return None

    runner = ToolRunner(ToolRegistry([make_tool(execute=hang, timeout_ms=10)]))
    failure = await expect_failure(runner.execute("double", {"value": 1}, context()))
    assert failure.kind == "timeout"
    assert failure.message == 'Tool "double" exceeded its deadline.'
    assert failure.retryable is False


async def test_unknown_tool_and_tool_outside_the_agent_list_are_not_found() -> None:
    """Q7: the agent's tool list is enforced at execution."""
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]))
    failure = await expect_failure(runner.execute("nope", {}, context()))
    assert (failure.kind, failure.message) == ("not_found", 'Unknown tool "nope".')
    failure = await expect_failure(
        runner.execute("double", {"value": 1}, context(), allowed_tools=("other",))
    )
    assert failure.kind == "not_found"
    assert recorder.calls == 0


async def test_tool_output_envelope_keeps_artifacts_and_model_text() -> None:
    def envelope(ctx: ToolExecutionContext, args: Any) -> ToolOutput:
        return ToolOutput(
            value={"rows": [1, 2]},
            artifacts=(ToolArtifact(id="a1", media_type="text/csv"),),
            model_text="two rows",
        )

    runner = ToolRunner(ToolRegistry([make_tool(execute=envelope)]))
    output = await runner.execute("double", {"value": 1}, context())
    assert output.model_text == "two rows"
    assert output.artifacts[0].id == "a1"
    assert output.artifacts_json() == [{"id": "a1", "mediaType": "text/csv"}]
    assert output.json_value() == {"rows": [1, 2]}


async def test_a_dict_with_a_value_key_is_not_an_envelope() -> None:
    runner = ToolRunner(ToolRegistry([make_tool(execute=lambda ctx, args: {"value": 5})]))
    output = await runner.execute("double", {"value": 1}, context())
    assert output.json_value() == {"value": 5}


async def test_output_parser_failure_is_validation_and_runs_once() -> None:
    seen: list[object] = []

    def parse(value: object) -> object:
        seen.append(value)
        raise ValueError("bad output")

    runner = ToolRunner(ToolRegistry([make_tool(output=ToolSchema(parse=parse))]))
    failure = await expect_failure(runner.execute("double", {"value": 2}, context()))
    assert (failure.kind, failure.message) == ("validation", 'Invalid output from tool "double".')
    assert seen == [4]


async def test_output_parser_result_is_used() -> None:
    runner = ToolRunner(
        ToolRegistry([make_tool(output=ToolSchema(parse=lambda value: {"doubled": value}))])
    )
    assert (await runner.execute("double", {"value": 2}, context())).json_value() == {"doubled": 4}


async def test_non_json_output_is_a_validation_failure() -> None:
    """Q10: a non-JSON value is a tool error, not a failed run."""
    runner = ToolRunner(ToolRegistry([make_tool(execute=lambda ctx, args: {1, 2})]))
    failure = await expect_failure(runner.execute("double", {"value": 1}, context()))
    assert failure.kind == "validation"
    nan = ToolRunner(ToolRegistry([make_tool(execute=lambda ctx, args: math.nan)]))
    assert (
        await expect_failure(nan.execute("double", {"value": 1}, context()))
    ).kind == "validation"


class Formatter:
    def format(self, failure: ToolFailure) -> str:
        return f"formatted:{failure.kind}"


async def test_custom_formatter_and_non_error_throw() -> None:
    def boom(ctx: ToolExecutionContext, args: Any) -> object:
        raise RuntimeError("boom")

    runner = ToolRunner(
        ToolRegistry([make_tool(execute=boom)]),
        policy=StaticPolicy(AllowDecision()),
        error_formatter=Formatter(),
    )
    with pytest.raises(ToolExecutionError) as caught:
        await runner.execute("double", {"value": 1}, context())
    assert caught.value.kind == "execution"
    assert runner.format_failure(caught.value) == "formatted:execution"
    assert format_failure(caught.value).startswith("execution:")
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert caught.value.failure.to_json() == {
        "kind": "execution",
        "toolName": "double",
        "callId": "call-1",
        "message": 'Tool "double" failed.',
        "retryable": False,
        "cause": {"type": "RuntimeError", "message": "boom"},
    }


async def test_already_expired_deadline_is_timeout_without_running() -> None:
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]), clock=lambda: 10_000.0)
    failure = await expect_failure(runner.execute("double", {"value": 1}, context(deadline=9_000)))
    assert failure.kind == "timeout"
    assert recorder.calls == 0


async def test_context_deadline_bounds_a_slow_tool() -> None:
    async def hang(ctx: ToolExecutionContext, args: Any) -> object:
        await asyncio.Event().wait()
        return None

    runner = ToolRunner(ToolRegistry([make_tool(execute=hang)]))
    failure = await expect_failure(
        runner.execute("double", {"value": 1}, context(deadline=epoch_ms() + 20))
    )
    assert failure.kind == "timeout"


async def test_parent_abort_during_execution_is_cancelled_and_boundary_signal_aborts() -> None:
    controller = AbortController()
    started = asyncio.Event()
    seen: list[AbortSignal] = []

    async def wait(ctx: ToolExecutionContext, args: Any) -> object:
        seen.append(ctx.signal)
        started.set()
        await asyncio.Event().wait()
        return None

    runner = ToolRunner(ToolRegistry([make_tool(execute=wait)]))
    reason = RuntimeError("user pressed stop")

    async def abort_soon() -> None:
        await started.wait()
        controller.abort(reason)

    async with asyncio.TaskGroup() as group:
        group.create_task(abort_soon())
        failure = await expect_failure(
            runner.execute("double", {"value": 1}, context(signal=controller.signal))
        )
    assert (failure.kind, failure.message) == ("cancelled", 'Tool "double" was cancelled.')
    assert failure.cause is reason
    assert seen[0] is not controller.signal and seen[0].aborted


async def test_pre_aborted_signal_never_starts_the_tool() -> None:
    """Q9: a cancelled run never starts a tool."""
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]))
    signal = AbortSignal.aborted_with("stop")
    failure = await expect_failure(runner.execute("double", {"value": 1}, context(signal=signal)))
    assert failure.kind == "cancelled"
    assert recorder.calls == 0


async def test_outer_task_cancellation_is_not_swallowed() -> None:
    started = asyncio.Event()

    async def wait(ctx: ToolExecutionContext, args: Any) -> object:
        started.set()
        await asyncio.Event().wait()
        return None

    runner = ToolRunner(ToolRegistry([make_tool(execute=wait)]))
    task = asyncio.create_task(runner.execute("double", {"value": 1}, context()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_idempotency_key_only_for_idempotent_write() -> None:
    write = Recorder()
    effect = Recorder()
    runner = ToolRunner(
        ToolRegistry(
            [
                make_tool("save", write, effect="idempotent-write"),
                make_tool("send", effect, effect="side-effect"),
            ]
        )
    )
    await runner.execute("save", {"value": 1}, context("c1"))
    await runner.execute("send", {"value": 1}, context("c2"))
    assert write.contexts[0].idempotency_key == "run-1:c1"
    assert effect.contexts[0].idempotency_key is None


async def test_prepare_does_not_run_the_tool_and_invoke_runs_it_once() -> None:
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder, effect="read")]))
    prepared = await runner.prepare("double", {"value": 4}, context())
    assert recorder.calls == 0
    assert (prepared.name, prepared.effect, prepared.input) == ("double", "read", {"value": 4})
    first = await runner.invoke(prepared)
    assert first.value == 8 and recorder.calls == 1
    assert first is not await runner.invoke(prepared)  # a new frozen output each time


async def test_policy_errors_and_bad_decisions_are_execution_failures() -> None:
    class Broken:
        def authorize(self, request: ToolAuthorizationRequest) -> ToolDecision:
            raise LookupError("policy store down")

    class Weird:
        def authorize(self, request: ToolAuthorizationRequest) -> ToolDecision:
            return "allow"  # type: ignore[return-value]

    recorder = Recorder()
    for policy in (Broken(), Weird()):
        runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]), policy=policy)
        failure = await expect_failure(runner.execute("double", {"value": 1}, context()))
        assert failure.kind == "execution"
    assert recorder.calls == 0


async def test_tool_output_is_deep_frozen() -> None:
    source = {"rows": [{"a": 1}]}
    runner = ToolRunner(ToolRegistry([make_tool(execute=lambda ctx, args: source)]))
    output = await runner.execute("double", {"value": 1}, context())
    source["rows"].append({"a": 2})
    assert output.json_value() == {"rows": [{"a": 1}]}
    rows: Any = output.value
    with pytest.raises(TypeError):
        rows["rows"] = []
    with pytest.raises(AttributeError):
        rows["rows"].append(1)


# --- policies ------------------------------------------------------------------------------


async def test_rule_policy_allow_deny_ask_and_default() -> None:
    policy = RuleToolPolicy(allow=["read.*"], deny=["shell.*"], ask=["email.*"], default="deny")
    assert policy.decide("read.file", run_id="r", call_id="c").type == "allow"
    assert policy.decide("shell.rm", run_id="r", call_id="c").type == "deny"
    ask = policy.decide("email.send", run_id="r", call_id="c")
    assert isinstance(ask, InterruptDecision) and ask.interruption_id == "r:c"
    assert policy.decide("other", run_id="r", call_id="c").type == "deny"
    with pytest.raises(ValueError, match="default"):
        RuleToolPolicy(default="maybe")  # type: ignore[arg-type]
    runner = ToolRunner(
        ToolRegistry([make_tool("email.send")]), policy=RuleToolPolicy(ask=["email.*"])
    )
    with pytest.raises(ToolInterruptionRequiredError) as caught:
        await runner.execute("email.send", {"value": 1}, context())
    approved = context(approval=ToolApproval(interruption_id=caught.value.interruption_id))
    assert (await runner.execute("email.send", {"value": 1}, approved)).value == 2


# --- results -------------------------------------------------------------------------------


def test_result_items() -> None:
    call = ToolCallItem(id="c1", name="double", input={"value": 1})
    ok = success_result(call, ToolOutput(value=[1, {"x": 2}], model_text="hidden"))
    assert (ok.status, ok.output, ok.call_id, ok.name) == ("success", [1, {"x": 2}], "c1", "double")
    failure = ToolFailure(kind="timeout", tool_name="double", call_id="c1", message="slow")
    error = failure_result(failure)
    assert error.status == "error"
    assert error.output == {"kind": "timeout", "message": "timeout: slow", "retryable": False}
    denied = denial_result(call, "blocked by middleware")
    assert denied.output == {
        "kind": "denied",
        "message": "denied: blocked by middleware",
        "retryable": False,
    }
    assert ToolCallDenied().reason == "Tool call denied by middleware."
    assert ToolCallDenied("no").code == "TOOL_CALL_DENIED"


# --- parallel safety -----------------------------------------------------------------------


def test_is_parallel_safe_rules() -> None:
    read = make_tool(effect="read")
    assert is_parallel_safe(read, policy_configured=False, max_parallel_tools=10)
    assert not is_parallel_safe(None, policy_configured=False, max_parallel_tools=10)
    assert not is_parallel_safe(read, policy_configured=True, max_parallel_tools=10)
    assert not is_parallel_safe(read, policy_configured=False, max_parallel_tools=1)
    assert not is_parallel_safe(make_tool(), policy_configured=False, max_parallel_tools=10)
    gated = make_tool(effect="read", requires_approval=True)
    assert not is_parallel_safe(gated, policy_configured=False, max_parallel_tools=10)
    opted_out = RuntimeTool(
        descriptor=ToolDescriptor(
            name="r", behavior=ToolBehavior(effect="read", parallel_safe=False)
        ),
        execute=Recorder(),
    )
    assert not is_parallel_safe(opted_out, policy_configured=False, max_parallel_tools=10)


async def test_run_in_call_order_keeps_call_order_and_bounds_concurrency() -> None:
    running = 0
    peak = 0
    gates = {index: asyncio.Event() for index in range(5)}
    finished: list[int] = []
    all_in = asyncio.Event()

    async def worker(index: int) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == 5:
            all_in.set()
        await gates[index].wait()
        running -= 1
        finished.append(index)
        return f"r{index}"

    async def release_in_reverse() -> None:
        await all_in.wait()
        for index in reversed(range(5)):
            gates[index].set()
            await asyncio.sleep(0)

    async with asyncio.TaskGroup() as group:
        group.create_task(release_in_reverse())
        results = await run_in_call_order(list(range(5)), worker, max_parallel=5)
    assert results == ("r0", "r1", "r2", "r3", "r4")
    assert finished == [4, 3, 2, 1, 0]
    assert peak == 5

    limited_peak = 0
    limited_running = 0

    async def counted(index: int) -> int:
        nonlocal limited_peak, limited_running
        limited_running += 1
        limited_peak = max(limited_peak, limited_running)
        await asyncio.sleep(0)
        limited_running -= 1
        return index

    assert await run_in_call_order(list(range(6)), counted, max_parallel=2) == tuple(range(6))
    assert limited_peak == 2


async def test_run_in_call_order_cancels_siblings_on_error() -> None:
    cancelled: list[int] = []
    boom = RuntimeError("invariant broken")

    async def worker(index: int) -> int:
        if index == 0:
            await asyncio.sleep(0)
            raise boom
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(index)
            raise
        return index

    with pytest.raises(RuntimeError) as caught:
        await run_in_call_order([0, 1, 2], worker, max_parallel=3)
    assert caught.value is boom
    assert sorted(cancelled) == [1, 2]
    with pytest.raises(ValueError, match="max_parallel"):
        await run_in_call_order([1], worker, max_parallel=0)


async def test_tool_raised_tool_errors_pass_through_unchanged() -> None:
    own = ToolExecutionError(
        ToolFailure(
            kind="denied", tool_name="double", call_id="call-1", message="quota", retryable=True
        )
    )
    ask = ToolInterruptionRequiredError(
        InterruptDecision(interruption_id="inner", reason="needs a human"), "double", "call-1"
    )

    def raise_own(ctx: ToolExecutionContext, args: Any) -> object:
        raise own

    def raise_ask(ctx: ToolExecutionContext, args: Any) -> object:
        raise ask

    runner = ToolRunner(ToolRegistry([make_tool("own", raise_own), make_tool("ask", raise_ask)]))
    with pytest.raises(ToolExecutionError) as caught:
        await runner.execute("own", {"value": 1}, context())
    assert caught.value is own and caught.value.failure.retryable is True
    with pytest.raises(ToolInterruptionRequiredError) as interrupted:
        await runner.execute("ask", {"value": 1}, context())
    assert interrupted.value is ask


@pytest.mark.parametrize("deadline", [None, 10**15])
async def test_timeout_error_raised_by_the_tool_is_an_execution_failure(
    deadline: float | None,
) -> None:
    """With or without a deadline scope, a TimeoutError of the tool's own is not a timeout."""

    async def own_timeout(ctx: ToolExecutionContext, args: Any) -> object:
        raise TimeoutError("upstream timed out")

    runner = ToolRunner(ToolRegistry([make_tool(execute=own_timeout)]))
    failure = await expect_failure(
        runner.execute("double", {"value": 1}, context(deadline=deadline))
    )
    assert failure.kind == "execution"
    assert isinstance(failure.cause, TimeoutError)
