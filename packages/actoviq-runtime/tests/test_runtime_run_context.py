"""The run's ``RunContext`` (built on first use): one object, the run's values, live usage."""

from __future__ import annotations

from typing import Any

from runtime_testkit import make_agent, scripted_runtime

from actoviq.core import GuardrailDecision, InputGuardrail, OutputGuardrail, RunContext
from actoviq.providers.testing import ScriptedProvider


async def test_instructions_and_guardrails_share_one_context_with_the_runs_values() -> None:
    seen: list[RunContext[Any]] = []
    tokens: list[int] = []

    def instructions(ctx: RunContext[Any]) -> str:
        seen.append(ctx)
        return "Be brief."

    def check_input(ctx: RunContext[Any], value: Any) -> GuardrailDecision:
        seen.append(ctx)
        return GuardrailDecision(allowed=True)

    def check_output(ctx: RunContext[Any], value: Any) -> GuardrailDecision:
        seen.append(ctx)
        tokens.append(ctx.usage.snapshot().requests)  # the model call is counted by now
        return GuardrailDecision(allowed=True)

    agent = make_agent(
        instructions=instructions,
        input_guardrails=(InputGuardrail(id="in", evaluate=check_input),),
        output_guardrails=(OutputGuardrail(id="out", evaluate=check_output),),
    )
    marker = object()
    async with scripted_runtime(ScriptedProvider(["fine"])) as runtime:
        result = await runtime.run(agent, "x", run_id="r-ctx", context=marker, metadata={"k": "v"})
    assert result.status == "completed" and len(seen) == 3
    ctx = seen[0]
    assert all(other is ctx for other in seen)
    assert (ctx.run_id, ctx.agent_id, ctx.context, ctx.metadata) == (
        "r-ctx",
        agent.id,
        marker,
        {"k": "v"},
    )
    assert ctx.started_at == result.started_at and ctx.deadline_at is not None
    assert ctx.session_id is None and tokens == [1]
