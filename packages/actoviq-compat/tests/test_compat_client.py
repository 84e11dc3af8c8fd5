"""``create_agent_sdk`` → ``AgentClient`` on one runtime (spec 04 §5.2, §7.10 row 104)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from compat_support import (
    FakeModelApi,
    Transport,
    legacy_message,
    responses_body,
    responses_provider,
)

from actoviq.compat import (
    CompatConfigurationError,
    CompatRunInterruptedError,
    ModelProviderLegacyAdapter,
    create_agent_sdk,
)
from actoviq.compat.options import CLIENT_REPLACEMENTS, RUN_REPLACEMENTS
from actoviq.core import AbortController, RunError, ToolCallItem
from actoviq.providers import legacy as providers_legacy
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InterruptionDecision,
    RunCancelledError,
    RuntimeClosedError,
    tool,
)


@tool(effect="read")
def lookup(q: str) -> str:
    """Look something up.

    Args:
        q: what to look up.
    """
    return f"found {q}"


@tool(effect="side-effect")
def deploy(target: str) -> str:
    """Deploy.

    Args:
        target: where.
    """
    return f"deployed {target}"


@tool(effect="side-effect", requires_approval=True)
def wire_money(amount: int) -> str:
    """Move money.

    Args:
        amount: how much.
    """
    return f"sent {amount}"


def _scripted(*turns: Any) -> ModelProviderLegacyAdapter:
    return ModelProviderLegacyAdapter(ScriptedProvider(list(turns)))


async def test_row_104_a_provider_adapter_drives_the_compat_client() -> None:
    transport = Transport(responses_body("compat ok"))
    sdk = await create_agent_sdk(modelApi=ModelProviderLegacyAdapter(responses_provider(transport)))
    result = await sdk.run("hello", systemPrompt="Answer in two words.")
    assert result.text == "compat ok"
    assert result.stop_reason == "end_turn"
    assert result.usage == {"input_tokens": 4, "output_tokens": 2}
    await sdk.close()
    assert len(transport.requests) == 1
    body = transport.sent()[0]
    assert "Answer in two words." in str(body) and "hello" in str(body)
    assert result.to_json()["stopReason"] == "end_turn"
    # Code moved over from 0.x reads the camelCase names, as attributes or keys.
    assert (result.stopReason, result["stopReason"], result["text"]) == (
        "end_turn",
        "end_turn",
        "compat ok",
    )
    assert result["usage"] == {"input_tokens": 4, "output_tokens": 2}
    assert (result.runId, result.toolCalls, result.sessionId) == (result.run_id, (), None)
    assert result.tool_calls == [] and result.permission_decisions == []  # tuples, list-equal
    assert result.messages == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "compat ok"}]},
    ]
    assert result.messages != [] and not hasattr(result.messages, "append")  # still immutable
    assert (result.startedAt, result.completedAt) == (result.started_at, result.completed_at)
    assert result.permissionDecisions == ()
    with pytest.raises(KeyError):
        result["sessionId"]  # absent optionals stay absent, as in the 0.x JSON
    assert result.message["content"] == [{"type": "text", "text": "compat ok"}]
    assert result.messages == (
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "compat ok"}]},
    )


async def test_one_engine_one_runtime_and_one_provider_for_every_call(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    counts = {"runtime": 0, "provider": 0}
    runtime_init = AgentRuntime.__init__
    provider_init = providers_legacy.LegacyModelApiProvider.__init__

    def count_runtime(self: AgentRuntime, **kwargs: Any) -> None:
        counts["runtime"] += 1
        runtime_init(self, **kwargs)

    def count_provider(self: Any, **kwargs: Any) -> None:
        counts["provider"] += 1
        provider_init(self, **kwargs)

    monkeypatch.setattr(AgentRuntime, "__init__", count_runtime)
    monkeypatch.setattr(providers_legacy.LegacyModelApiProvider, "__init__", count_provider)
    model_api = FakeModelApi(legacy_message("legacy answer"))
    async with await create_agent_sdk(
        modelApi=model_api, model="legacy-model", sessionDirectory=tmp_path
    ) as sdk:
        for _ in range(3):
            assert (await sdk.run("hi")).text == "legacy answer"
        for _ in range(2):
            stream = sdk.stream("hi", systemPrompt="Another prompt.")
            assert [e["type"] async for e in stream][-1] == "response.completed"
        session = await sdk.create_session(title="s")
        await session.send("in a session")
        await session.send("again")
        assert counts == {"runtime": 1, "provider": 1}
        assert len(model_api.requests) == 7  # every call reached the one provider
    assert sdk.runtime.closed


@pytest.mark.parametrize("option", sorted(CLIENT_REPLACEMENTS))
async def test_unsupported_0x_options_name_their_replacement(
    option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[object] = []
    monkeypatch.setattr(AgentRuntime, "__init__", lambda self, **_: built.append(self))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    with pytest.raises(NotImplementedError) as caught:
        await create_agent_sdk(modelApi=FakeModelApi(legacy_message("x")), **{option: True})  # type: ignore[arg-type]
    assert option in str(caught.value)
    assert CLIENT_REPLACEMENTS[option] in str(caught.value)
    assert built == []  # refused before anything was built


@pytest.mark.parametrize("option", sorted(RUN_REPLACEMENTS))
async def test_unsupported_run_options_name_their_replacement(option: str) -> None:
    model_api = FakeModelApi(legacy_message("x"))
    async with await create_agent_sdk(modelApi=model_api) as sdk:
        with pytest.raises(NotImplementedError, match=option):
            await sdk.run("hi", **{option: True})  # type: ignore[arg-type]
        with pytest.raises(NotImplementedError) as caught:
            sdk.stream("hi", **{option: True})  # type: ignore[arg-type]
        assert RUN_REPLACEMENTS[option] in str(caught.value)
    assert model_api.requests == []


async def test_options_0x_never_had_are_type_errors() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'notAnOption'"):
        await create_agent_sdk(notAnOption=1)  # type: ignore[call-arg]
    async with await create_agent_sdk(modelApi=FakeModelApi(legacy_message("x"))) as sdk:
        with pytest.raises(TypeError, match="'nope'"):
            await sdk.run("hi", nope=1)  # type: ignore[call-arg]


async def test_model_tiers_and_bad_configuration_are_refused_typed() -> None:
    with pytest.raises(NotImplementedError, match="full model id"):
        await create_agent_sdk(modelApi=FakeModelApi(legacy_message("x")), model="medium")
    with pytest.raises(CompatConfigurationError, match="model is required"):
        await create_agent_sdk(provider="openai")
    with pytest.raises(CompatConfigurationError, match="modelApi replaces apiKey"):
        await create_agent_sdk(modelApi=FakeModelApi(legacy_message("x")), apiKey="k")
    with pytest.raises(CompatConfigurationError, match="create_message"):
        await create_agent_sdk(modelApi=object())  # type: ignore[arg-type]
    with pytest.raises(CompatConfigurationError, match="max_turns"):
        await create_agent_sdk(modelApi=FakeModelApi(legacy_message("x")), maxToolIterations=0)


async def test_a_native_provider_is_built_from_provider_options() -> None:
    sdk = await create_agent_sdk(
        provider="openai", model="gpt-4.1-mini", apiKey="sk-x", timeoutMs=30_000, maxRetries=1
    )
    provider = sdk.runtime.models.get("openai-responses")
    assert type(provider).__name__ == "OpenAIResponsesProvider"
    assert sdk.runtime.default_limits.model_call_timeout_ms == 30_000
    await sdk.close()
    anthropic_sdk = await create_agent_sdk(model="claude-sonnet-4-5", authToken="tok")
    assert type(anthropic_sdk.runtime.models.get("anthropic")).__name__ == "AnthropicProvider"
    await anthropic_sdk.close()


async def test_close_is_idempotent_and_aggregates_failures() -> None:
    class FailingClose(ScriptedProvider):
        closes = 0

        async def aclose(self) -> None:
            FailingClose.closes += 1
            raise OSError("provider close failed")

    sdk = await create_agent_sdk(modelApi=ModelProviderLegacyAdapter(FailingClose(["x"])))
    stream = sdk.stream("hi")
    with pytest.raises(ExceptionGroup) as caught:
        await sdk.close()
    assert caught.value.message == "AgentClient close failed."
    assert [str(e) for e in caught.value.exceptions] == ["provider close failed"]
    assert stream.done
    await sdk.close()  # the second close does nothing and raises nothing
    assert FailingClose.closes == 1
    with pytest.raises(RuntimeClosedError):
        await sdk.run("after close")


async def test_run_with_tools_reports_requests_and_tool_calls() -> None:
    turns = [
        ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="lookup", input={"q": "x"})]),
        ScriptedTurn(text="done", usage={"inputTokens": 10, "outputTokens": 3}),
    ]
    async with await create_agent_sdk(modelApi=_scripted(*turns), tools=[lookup]) as sdk:
        result = await sdk.run("find x")
    assert result.text == "done"
    assert [r["stopReason"] for r in result.requests] == ["tool_use", "end_turn"]
    assert [r["iteration"] for r in result.requests] == [1, 2]
    (call,) = result.tool_calls
    assert (call["id"], call["name"], call["input"], call["outputText"], call["isError"]) == (
        "c1",
        "lookup",
        {"q": "x"},
        "found x",
        False,
    )
    assert call["durationMs"] >= 0 and call["startedAt"] <= call["completedAt"]
    assert [m["role"] for m in result.messages] == ["user", "assistant", "user", "assistant"]
    assert result.run_result is not None and result.run_result.output == "done"


async def test_content_block_input() -> None:
    model_api = FakeModelApi(legacy_message("seen"))
    async with await create_agent_sdk(modelApi=model_api) as sdk:
        await sdk.run(
            [
                {"type": "text", "text": "describe"},
                {"type": "image", "source": {"type": "url", "url": "https://x.invalid/a.png"}},
            ]
        )
        with pytest.raises(TypeError):
            await sdk.run(42)  # type: ignore[arg-type]
    request = model_api.requests[0]
    assert "system" not in request  # no system prompt configured: none sent
    blocks = [block for message in request["messages"] for block in message["content"]]
    assert blocks[0] == {"type": "text", "text": "describe"}
    assert blocks[1] == {
        "type": "image",
        "source": {"type": "url", "url": "https://x.invalid/a.png"},
    }


async def test_plan_mode_and_rules_decide_like_0x() -> None:
    turns = [
        ScriptedTurn(
            tool_calls=[
                ToolCallItem(id="c1", name="lookup", input={"q": "x"}),
                ToolCallItem(id="c2", name="deploy", input={"target": "prod"}),
            ]
        ),
        ScriptedTurn(text="planned"),
        ScriptedTurn(tool_calls=[ToolCallItem(id="c3", name="deploy", input={"target": "prod"})]),
        ScriptedTurn(text="after rules"),
    ]
    async with await create_agent_sdk(
        modelApi=_scripted(*turns), tools=[lookup, deploy], permissionMode="plan"
    ) as sdk:
        result = await sdk.run("plan it")
        outcomes = {c["name"]: c["isError"] for c in result.tool_calls}
        assert outcomes == {"lookup": False, "deploy": True}
        reasons = [d["reason"] for d in result.permission_decisions]
        assert reasons == [
            "Plan mode allows read-only tool execution.",
            "Plan mode blocks mutating tools until the plan is approved.",
        ]
        ruled = await sdk.run(
            "deploy",
            permissionMode="bypassPermissions",
            permissions=[{"toolName": "DEP*", "behavior": "ask", "matcher": '*"prod"*'}],
        )
    (decision,) = ruled.permission_decisions
    assert (decision["behavior"], decision["source"], decision.get("matchedRule")) == (
        "deny",
        "rule",
        "DEP*",
    )
    assert "interactive approval is unavailable" in ruled.tool_calls[0]["outputText"]


async def test_per_run_permissions_need_a_client_policy() -> None:
    async with await create_agent_sdk(modelApi=FakeModelApi(legacy_message("x"))) as sdk:
        with pytest.raises(CompatConfigurationError, match="permissionMode"):
            await sdk.run("hi", permissionMode="plan")
    with pytest.raises(CompatConfigurationError, match="permissionMode must be one of"):
        await create_agent_sdk(modelApi=FakeModelApi(legacy_message("x")), permissionMode="yolo")  # type: ignore[arg-type]


async def test_an_approval_interrupts_typed_and_resumes_on_the_same_runtime() -> None:
    turns = [
        ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="wire_money", input={"amount": 5})]),
        ScriptedTurn(text="sent"),
    ]
    async with await create_agent_sdk(modelApi=_scripted(*turns), tools=[wire_money]) as sdk:
        with pytest.raises(CompatRunInterruptedError) as caught:
            await sdk.run("pay")
        interrupted = caught.value.result
        assert interrupted.status == "interrupted" and interrupted.state is not None
        (interruption,) = interrupted.interruptions
        resumed = await sdk.runtime.resume(
            interrupted.state, [InterruptionDecision.approve(interruption.id)]
        ).result()
    assert resumed.output == "sent"


async def test_a_signal_cancels_the_run_in_flight() -> None:
    controller = AbortController()
    reached = asyncio.Event()

    @tool(effect="read")
    def checkpoint() -> str:
        """Mark that the run got this far."""
        reached.set()
        return "ok"

    turns = [
        ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="checkpoint", input={})]),
        ScriptedTurn(text="never", delay=30),
    ]
    async with await create_agent_sdk(modelApi=_scripted(*turns), tools=[checkpoint]) as sdk:
        task = asyncio.ensure_future(sdk.run("wait", signal=controller.signal))
        await asyncio.wait_for(reached.wait(), 10)
        controller.abort("user left")
        with pytest.raises(RunCancelledError):
            await asyncio.wait_for(task, 10)


async def test_a_provider_failure_is_the_runtime_typed_error() -> None:
    turns = [RunError("model exploded", code="MODEL_BROKEN")]
    async with await create_agent_sdk(modelApi=_scripted(*turns)) as sdk:
        with pytest.raises(RunError) as caught:
            await sdk.run("hi")
    assert caught.value.code in ("MODEL_BROKEN", "RUN_FAILED")


async def test_sampling_options_become_model_settings() -> None:
    provider = ScriptedProvider(["one", "two"])
    async with await create_agent_sdk(
        modelApi=ModelProviderLegacyAdapter(provider),
        tools=[lookup],
        maxTokens=300,
        temperature=0.2,
        userId="user-7",
        metadata={"team": "ops"},
    ) as sdk:
        await sdk.run("default settings")
        await sdk.run(
            "per run",
            maxTokens=50,
            topP=0.5,
            toolChoice={"type": "tool", "name": "lookup", "disable_parallel_tool_use": True},
            effort="low",
        )
    first, second = (call.request for call in provider.calls)
    assert (first.max_output_tokens, first.temperature, first.top_p) == (300, 0.2, None)
    assert first.metadata == {"team": "ops", "user_id": "user-7"}
    assert (second.max_output_tokens, second.temperature, second.top_p) == (50, 0.2, 0.5)
    assert second.parallel_tool_calls is False
    assert second.reasoning is not None and second.reasoning.effort == "low"
    assert second.tool_policy is not None and "lookup" in str(second.tool_policy)


async def test_sampling_options_reach_a_legacy_model_api() -> None:
    model_api = FakeModelApi(legacy_message("ok"))
    async with await create_agent_sdk(modelApi=model_api, maxTokens=321, temperature=0.3) as sdk:
        await sdk.run("hi", userId="u1")
    (request,) = model_api.requests
    assert (request["max_tokens"], request.get("temperature")) == (321, 0.3)
    assert request.get("metadata") == {"user_id": "u1"}


async def test_bad_sampling_options_are_refused_typed() -> None:
    async with await create_agent_sdk(modelApi=FakeModelApi(legacy_message("x"))) as sdk:
        with pytest.raises(CompatConfigurationError, match="toolChoice"):
            await sdk.run("hi", toolChoice={"type": "sometimes"})
        with pytest.raises(ValueError, match="temperature"):
            await sdk.run("hi", temperature=9)
