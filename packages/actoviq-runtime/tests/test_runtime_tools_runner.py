"""The tool runner (spec 03 §7.8 rows 76-80, 82, 83; D5 fixes Q7-Q10)."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from runtime_testkit import Recorder, StaticPolicy, expect_failure, make_tool, tool_context

from actoviq.core import AbortController, AbortSignal
from actoviq.runtime.tools import (
    AllowDecision,
    DenyDecision,
    InterruptDecision,
    ToolApproval,
    ToolArtifact,
    ToolAuthorizationRequest,
    ToolDecision,
    ToolExecutionContext,
    ToolExecutionError,
    ToolFailure,
    ToolInterruptionRequiredError,
    ToolOutput,
    ToolRegistry,
    ToolRunner,
    ToolSchema,
    epoch_ms,
    format_failure,
)

# --- rows 76-80, 82, 83: runner ------------------------------------------------------------


async def test_valid_input_executes_once_and_returns_value() -> None:
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]))
    output = await runner.execute("double", {"value": 3}, tool_context())
    assert output.value == 6
    assert output.json_value() == 6
    assert recorder.calls == 1


async def test_invalid_input_is_validation_and_executor_not_called() -> None:
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]))
    failure = await expect_failure(runner.execute("double", {"value": "3"}, tool_context()))
    assert failure.kind == "validation"
    assert failure.message.startswith("Invalid input for tool \"double\". $['value']: ")
    assert "is not of type 'integer'" in failure.message  # the model sees what to fix
    assert failure.cause is not None and "value" in str(failure.cause)
    assert recorder.calls == 0


async def test_policy_deny_is_denied_and_executor_not_called() -> None:
    recorder = Recorder()
    policy = StaticPolicy(DenyDecision(reason="not permitted"))
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]), policy=policy)
    failure = await expect_failure(runner.execute("double", {"value": 1}, tool_context()))
    assert (failure.kind, failure.message) == ("denied", "not permitted")
    assert recorder.calls == 0
    # the policy saw the parsed input and the descriptor
    assert policy.requests[0].input == {"value": 1}
    assert policy.requests[0].tool.name == "double"


async def test_requires_approval_without_policy_interrupts() -> None:
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder, requires_approval=True)]))
    with pytest.raises(ToolInterruptionRequiredError) as caught:
        await runner.execute("double", {"value": 1}, tool_context("c9"))
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
        runner.execute("double", {"value": 1}, tool_context(approval=approval))
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
        await runner.execute("double", {"value": 1}, tool_context())
    assert recorder.calls == 0
    approved = tool_context(approval=ToolApproval(interruption_id="run-1:call-1"))
    assert (await runner.execute("double", {"value": 1}, approved)).value == 2


async def test_requires_approval_with_approval_and_no_policy_executes() -> None:
    runner = ToolRunner(ToolRegistry([make_tool(requires_approval=True)]))
    approved = tool_context(approval=ToolApproval(interruption_id="run-1:call-1"))
    output = await runner.execute("double", {"value": 1}, approved)
    assert output.json_value() == 2


async def test_policy_interrupt_raises_and_the_matching_approval_passes() -> None:
    recorder = Recorder()
    decision = InterruptDecision(interruption_id="ask-1", reason="ask the user")
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]), policy=StaticPolicy(decision))
    with pytest.raises(ToolInterruptionRequiredError) as caught:
        await runner.execute("double", {"value": 1}, tool_context())
    assert caught.value.decision is decision
    assert recorder.calls == 0
    other = tool_context(approval=ToolApproval(interruption_id="something-else"))
    with pytest.raises(ToolInterruptionRequiredError):
        await runner.execute("double", {"value": 1}, other)
    matching = tool_context(approval=ToolApproval(interruption_id="ask-1"))
    assert (await runner.execute("double", {"value": 1}, matching)).value == 2
    assert recorder.calls == 1


async def test_timeout_with_a_never_resolving_executor() -> None:
    async def hang(ctx: ToolExecutionContext, args: Any) -> object:
        await asyncio.Event().wait()
        return None

    runner = ToolRunner(ToolRegistry([make_tool(execute=hang, timeout_ms=10)]))
    failure = await expect_failure(runner.execute("double", {"value": 1}, tool_context()))
    assert failure.kind == "timeout"
    assert failure.message == 'Tool "double" exceeded its deadline.'
    assert failure.retryable is False


async def test_unknown_tool_and_tool_outside_the_agent_list_are_not_found() -> None:
    """Q7: the agent's tool list is enforced at execution."""
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]))
    failure = await expect_failure(runner.execute("nope", {}, tool_context()))
    assert (failure.kind, failure.message) == (
        "not_found",
        'Unknown tool "nope". Available tools: double.',
    )
    failure = await expect_failure(
        runner.execute("double", {"value": 1}, tool_context(), allowed_tools=("other",))
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
    output = await runner.execute("double", {"value": 1}, tool_context())
    assert output.model_text == "two rows"
    assert output.artifacts[0].id == "a1"
    assert output.artifacts_json() == [{"id": "a1", "mediaType": "text/csv"}]
    assert output.json_value() == {"rows": [1, 2]}


async def test_a_dict_with_a_value_key_is_not_an_envelope() -> None:
    runner = ToolRunner(ToolRegistry([make_tool(execute=lambda ctx, args: {"value": 5})]))
    output = await runner.execute("double", {"value": 1}, tool_context())
    assert output.json_value() == {"value": 5}


async def test_output_parser_failure_is_validation_and_runs_once() -> None:
    seen: list[object] = []

    def parse(value: object) -> object:
        seen.append(value)
        raise ValueError("bad output")

    runner = ToolRunner(ToolRegistry([make_tool(output=ToolSchema(parse=parse))]))
    failure = await expect_failure(runner.execute("double", {"value": 2}, tool_context()))
    assert (failure.kind, failure.message) == ("validation", 'Invalid output from tool "double".')
    assert seen == [4]


async def test_output_parser_result_is_used() -> None:
    runner = ToolRunner(
        ToolRegistry([make_tool(output=ToolSchema(parse=lambda value: {"doubled": value}))])
    )
    assert (await runner.execute("double", {"value": 2}, tool_context())).json_value() == {
        "doubled": 4
    }


async def test_non_json_output_is_a_validation_failure() -> None:
    """Q10: a non-JSON value is a tool error, not a failed run."""
    runner = ToolRunner(ToolRegistry([make_tool(execute=lambda ctx, args: {1, 2})]))
    failure = await expect_failure(runner.execute("double", {"value": 1}, tool_context()))
    assert failure.kind == "validation"
    nan = ToolRunner(ToolRegistry([make_tool(execute=lambda ctx, args: math.nan)]))
    assert (
        await expect_failure(nan.execute("double", {"value": 1}, tool_context()))
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
        await runner.execute("double", {"value": 1}, tool_context())
    assert caught.value.kind == "execution"
    assert runner.format_failure(caught.value) == "formatted:execution"
    assert format_failure(caught.value).startswith("execution:")
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert caught.value.failure.to_json() == {
        "kind": "execution",
        "toolName": "double",
        "callId": "call-1",
        "message": 'Tool "double" failed. RuntimeError: boom',
        "retryable": False,
        "cause": {"type": "RuntimeError", "message": "boom"},
    }


async def test_already_expired_deadline_is_timeout_without_running() -> None:
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]), clock=lambda: 10_000.0)
    failure = await expect_failure(
        runner.execute("double", {"value": 1}, tool_context(deadline=9_000))
    )
    assert failure.kind == "timeout"
    assert recorder.calls == 0


async def test_context_deadline_bounds_a_slow_tool() -> None:
    async def hang(ctx: ToolExecutionContext, args: Any) -> object:
        await asyncio.Event().wait()
        return None

    runner = ToolRunner(ToolRegistry([make_tool(execute=hang)]))
    failure = await expect_failure(
        runner.execute("double", {"value": 1}, tool_context(deadline=epoch_ms() + 20))
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
            runner.execute("double", {"value": 1}, tool_context(signal=controller.signal))
        )
    assert (failure.kind, failure.message) == ("cancelled", 'Tool "double" was cancelled.')
    assert failure.cause is reason
    assert seen[0] is not controller.signal and seen[0].aborted


async def test_pre_aborted_signal_never_starts_the_tool() -> None:
    """Q9: a cancelled run never starts a tool."""
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder)]))
    signal = AbortSignal.aborted_with("stop")
    failure = await expect_failure(
        runner.execute("double", {"value": 1}, tool_context(signal=signal))
    )
    assert failure.kind == "cancelled"
    assert recorder.calls == 0


async def test_outer_task_cancellation_is_not_swallowed() -> None:
    started = asyncio.Event()

    async def wait(ctx: ToolExecutionContext, args: Any) -> object:
        started.set()
        await asyncio.Event().wait()
        return None

    runner = ToolRunner(ToolRegistry([make_tool(execute=wait)]))
    task = asyncio.create_task(runner.execute("double", {"value": 1}, tool_context()))
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
    await runner.execute("save", {"value": 1}, tool_context("c1"))
    await runner.execute("send", {"value": 1}, tool_context("c2"))
    assert write.contexts[0].idempotency_key == "run-1:c1"
    assert effect.contexts[0].idempotency_key is None


async def test_prepare_does_not_run_the_tool_and_invoke_runs_it_once() -> None:
    recorder = Recorder()
    runner = ToolRunner(ToolRegistry([make_tool(execute=recorder, effect="read")]))
    prepared = await runner.prepare("double", {"value": 4}, tool_context())
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
        failure = await expect_failure(runner.execute("double", {"value": 1}, tool_context()))
        assert failure.kind == "execution"
    assert recorder.calls == 0


async def test_tool_output_is_deep_frozen() -> None:
    source = {"rows": [{"a": 1}]}
    runner = ToolRunner(ToolRegistry([make_tool(execute=lambda ctx, args: source)]))
    output = await runner.execute("double", {"value": 1}, tool_context())
    source["rows"].append({"a": 2})
    assert output.json_value() == {"rows": [{"a": 1}]}
    rows: Any = output.value
    with pytest.raises(TypeError):
        rows["rows"] = []
    with pytest.raises(AttributeError):
        rows["rows"].append(1)
