"""Tools: descriptor, registry, policies, results, parallel safety (spec 03 §7.8 rows 75, 81)."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from runtime_testkit import NUMBER_INPUT, Recorder, expect_failure, make_tool, tool_context

from actoviq.core import ToolCallItem
from actoviq.runtime.tools import (
    InterruptDecision,
    RuleToolPolicy,
    RuntimeTool,
    ToolApproval,
    ToolArtifact,
    ToolBehavior,
    ToolCallDenied,
    ToolDefinitionError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionError,
    ToolFailure,
    ToolInterruptionRequiredError,
    ToolOutput,
    ToolRegistry,
    ToolRegistryError,
    ToolRunner,
    denial_result,
    failure_result,
    is_parallel_safe,
    run_in_call_order,
    success_result,
    tool_effect,
)

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
        await runner.execute("email.send", {"value": 1}, tool_context())
    approved = tool_context(approval=ToolApproval(interruption_id=caught.value.interruption_id))
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
        await runner.execute("own", {"value": 1}, tool_context())
    assert caught.value is own and caught.value.failure.retryable is True
    with pytest.raises(ToolInterruptionRequiredError) as interrupted:
        await runner.execute("ask", {"value": 1}, tool_context())
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
        runner.execute("double", {"value": 1}, tool_context(deadline=deadline))
    )
    assert failure.kind == "execution"
    assert isinstance(failure.cause, TimeoutError)
