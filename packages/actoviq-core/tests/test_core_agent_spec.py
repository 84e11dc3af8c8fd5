from __future__ import annotations

from typing import Any

import attrs
import pytest

from actoviq.core import (
    AbortController,
    AgentSpec,
    AgentSpecError,
    GuardrailDecision,
    HandoffRef,
    InputGuardrail,
    ModelRefError,
    ModelRefParts,
    OutputSchema,
    RefSpec,
    RunContext,
    RunLimits,
    RunLimitsPatch,
    iso_now,
    model_ref_parts,
    resolve_instructions,
)


@attrs.frozen
class Tenant:
    tenant_id: str


def _context(tenant: str) -> RunContext[Tenant]:
    return RunContext(
        run_id="r",
        agent_id="a",
        context=Tenant(tenant),
        signal=AbortController().signal,
        started_at=iso_now(),
    )


async def test_dynamic_instructions_sync_and_async() -> None:
    def sync_prompt(ctx: RunContext[Tenant]) -> str:
        return f"Tenant: {ctx.context.tenant_id}"

    async def async_prompt(ctx: RunContext[Tenant]) -> str:
        return f"Tenant: {ctx.context.tenant_id}"

    for prompt in (sync_prompt, async_prompt):
        spec: AgentSpec[Tenant, str] = AgentSpec(id="a", name="A", instructions=prompt)
        assert await resolve_instructions(spec.instructions, _context("tenant-a")) == (
            "Tenant: tenant-a"
        )


async def test_dynamic_instructions_must_return_a_string() -> None:
    spec: AgentSpec[Any, str] = AgentSpec(id="a", name="A", instructions=lambda _ctx: 3)  # type: ignore[arg-type, return-value]
    with pytest.raises(AgentSpecError, match="must return a string"):
        await resolve_instructions(spec.instructions, _context("t"))


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"id": "  "}, "id", "Agent id must not be empty."),
        ({"id": ""}, "id", "Agent id must not be empty."),
        ({"name": ""}, "name", "name must not be empty"),
        (
            {"instructions": 3},
            "instructions",
            'Agent "a" instructions must be a string or function.',
        ),
        ({"model": ":gpt"}, "model", "model"),
        ({"tools": ("",)}, "tools", "tools[0]"),
        ({"tools": (3,)}, "tools", "tools[0]"),
        ({"middleware": (RefSpec(id="m", options={"x": float("nan")}),)}, "middleware", "options"),
        ({"metadata": {"a": {1, 2}}}, "metadata", "metadata"),
        ({"output": OutputSchema(name="o", schema={"bad": b"x"})}, "output", "schema"),  # type: ignore[dict-item]
    ],
)
def test_invalid_specs_raise_agent_spec_error_naming_the_field(
    kwargs: dict[str, Any], field: str, message: str
) -> None:
    base: dict[str, Any] = {"id": "a", "name": "A", "instructions": "x"}
    with pytest.raises(AgentSpecError) as caught:
        AgentSpec(**{**base, **kwargs})
    assert caught.value.field == field
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_digest_is_stable_and_tracks_the_declaration() -> None:
    def make(**extra: Any) -> AgentSpec[Any, str]:
        return AgentSpec(
            id="a",
            name="A",
            instructions="Be brief.",
            model="openai-responses:gpt-4.1-mini",
            **extra,
        )

    base = make(tools=("lookup",))
    assert base.digest() == make(tools=("lookup",)).digest()
    assert base.digest().startswith("sha256v1:") and len(base.digest()) == 9 + 64
    changed = {
        make(tools=("lookup", "write")).digest(),
        make(tools=("lookup",), middleware=("timing",)).digest(),
        make(tools=("lookup",), limits=RunLimitsPatch(max_turns=3)).digest(),
        make(tools=("lookup",), metadata={"v": 2}).digest(),
        make(tools=("lookup",), handoffs=(HandoffRef(id="h", target_agent_id="b"),)).digest(),
        make(
            tools=("lookup",),
            input_guardrails=(
                InputGuardrail(id="g", evaluate=lambda _c, _i: GuardrailDecision(allowed=True)),
            ),
        ).digest(),
        base.digest([{"name": "lookup", "effect": "read", "inputSchema": {}}]),
    }
    assert base.digest() not in changed
    assert len(changed) == 7
    # dict key order does not matter (canonical JSON)
    assert make(metadata={"a": 1, "b": 2}).digest() == make(metadata={"b": 2, "a": 1}).digest()


def test_dynamic_instructions_digest_as_function_marker() -> None:
    spec: AgentSpec[Any, str] = AgentSpec(id="a", name="A", instructions=lambda _c: "x")
    assert spec.declaration()["instructions"] == "[function]"


def test_specs_are_frozen_and_compare_by_content() -> None:
    a: AgentSpec[Any, str] = AgentSpec(id="a", name="A", instructions="x", tools=["t"])
    b: AgentSpec[Any, str] = AgentSpec(id="a", name="A", instructions="x", tools=("t",))
    assert a == b and hash(a) == hash(b)
    assert a.tools == ("t",)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        a.name = "B"  # type: ignore[misc]


def test_run_limits_defaults_merge_and_validation() -> None:
    limits = RunLimits()
    assert (limits.max_turns, limits.stream_buffer_size, limits.max_cost_usd) == (32, 256, 100)
    merged = limits.merged(
        RunLimitsPatch(max_turns=3), None, RunLimitsPatch(max_turns=5, max_cost_usd=0.5)
    )
    assert (merged.max_turns, merged.max_cost_usd, merged.tool_timeout_ms) == (5, 0.5, 120_000)
    with pytest.raises(AgentSpecError, match="streamBufferSize") as caught:
        RunLimitsPatch(stream_buffer_size=1)
    assert caught.value.field == "streamBufferSize"
    with pytest.raises(AgentSpecError, match="maxTurns"):
        RunLimits(max_turns=0)
    with pytest.raises(AgentSpecError, match="maxCostUsd"):
        RunLimits(max_cost_usd=float("nan"))
    with pytest.raises(AgentSpecError, match="toolTimeoutMs"):
        RunLimitsPatch(tool_timeout_ms=1.5)  # type: ignore[arg-type]


def test_model_ref_parsing() -> None:
    assert model_ref_parts("openai-responses:ft:gpt-4o:org:x") == ModelRefParts(
        provider="openai-responses", model="ft:gpt-4o:org:x"
    )
    assert model_ref_parts("gpt-4o", "openai-chat") == ModelRefParts(
        provider="openai-chat", model="gpt-4o"
    )
    assert model_ref_parts({"provider": "p", "model": "m"}) == ModelRefParts(
        provider="p", model="m"
    )
    for bad in ("gpt-4o", ":m", "p:", "", 3, {"provider": "p"}):
        with pytest.raises(ModelRefError):
            model_ref_parts(bad)
    with pytest.raises(ModelRefError):
        model_ref_parts("", "default")
