"""Sessions and checkpoints without guesswork (issue 14 §5)."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_testkit import RecordingCheckpointStore

from actoviq.core import AgentSpec, Interruption, TextItem, ToolCallItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InMemoryCheckpointStore,
    InMemorySessionStore,
    InterruptionDecision,
    RuntimeConfigurationError,
    RuntimeServices,
    StoreRunCheckpointAdapter,
    StoreRuntimeSessionAdapter,
    tool,
)
from actoviq.runtime.stores import interruptions_of, pending_interruptions


@tool(effect="side-effect", requires_approval=True)
def send(to: str) -> str:
    """Send a message."""
    return f"sent to {to}"


AGENT = AgentSpec(id="a", name="A", instructions="x", model="scripted:m", tools=("send",))
CHAT = AgentSpec(id="chat", name="Chat", instructions="x", model="scripted:m")


def approval_script() -> ScriptedProvider:
    return ScriptedProvider(
        [
            ScriptedTurn(
                tool_calls=[
                    ToolCallItem(id="c1", name="send", input={"to": "ops"}),
                    ToolCallItem(id="c2", name="send", input={"to": "dev"}),
                ]
            ),
            "both sent",
        ]
    )


@pytest.mark.parametrize("wrap", [False, True])
async def test_sessions_argument_takes_a_runtime_or_a_storage_store(wrap: bool) -> None:
    storage = InMemorySessionStore()
    sessions: Any = StoreRuntimeSessionAdapter(storage) if wrap else storage
    provider = ScriptedProvider(["first", "second"])
    async with AgentRuntime(models=ModelRegistry([provider]), sessions=sessions) as runtime:
        await runtime.run(CHAT, "remember 42", session_id="s1")
        await runtime.run(CHAT, "what number?", session_id="s1")
    history = provider.requests[1].input
    texts = [item.text for item in history if isinstance(item, TextItem)]
    assert "remember 42" in texts
    assert "first" in texts


async def test_sessions_and_a_sessions_service_conflict() -> None:
    services = RuntimeServices({"sessions": lambda: InMemorySessionStore()})
    with pytest.raises(RuntimeConfigurationError, match="sessions"):
        AgentRuntime(
            models=ModelRegistry([ScriptedProvider()]),
            services=services,
            sessions=InMemorySessionStore(),
        )
    with pytest.raises(RuntimeConfigurationError, match="RuntimeSessionStore"):
        AgentRuntime(models=ModelRegistry([ScriptedProvider()]), sessions=object())  # type: ignore[arg-type]


async def test_checkpoints_argument_wraps_a_storage_store_and_pending_lists_the_wait() -> None:
    storage = InMemoryCheckpointStore()
    runtime = AgentRuntime(
        models=ModelRegistry([approval_script()]), tools=[send], checkpoints=storage
    )
    assert isinstance(runtime.checkpoint_store, StoreRunCheckpointAdapter)
    async with runtime:
        result = await runtime.run(AGENT, "notify", run_id="r1")
        assert result.status == "interrupted"
        waiting = await runtime.pending("r1")
    assert [(entry.kind, entry.tool_name, entry.input) for entry in waiting] == [
        ("approval", "send", {"to": "ops"}),
        ("approval", "send", {"to": "dev"}),
    ]
    assert waiting == result.interruptions
    # A new runtime (another process) needs only the store: pending, decisions, resume.
    adapter = StoreRunCheckpointAdapter(storage)
    assert await adapter.pending("r1") == waiting
    second = AgentRuntime(
        models=ModelRegistry([ScriptedProvider(["both sent"])]),
        tools=[send],
        checkpoints=adapter,
        agents=[AGENT],
    )
    async with second:
        decisions = [InterruptionDecision.approve(entry.id) for entry in await second.pending("r1")]
        state = await adapter.load("r1")
        final = await second.resume(state, decisions).result()
        assert final.output == "both sent"
        assert await second.pending("r1") == ()  # completed: waits for nothing
    assert await adapter.pending("unknown-run") == ()


async def test_pending_works_with_any_run_checkpoint_store() -> None:
    store = RecordingCheckpointStore()
    async with AgentRuntime(
        models=ModelRegistry([approval_script()]), tools=[send], checkpoint_store=store
    ) as runtime:
        result = await runtime.run(AGENT, "notify", run_id="r2")
    found = await pending_interruptions(store, "r2")
    assert found == result.interruptions
    assert all(isinstance(entry, Interruption) for entry in found)
    assert interruptions_of({"status": "completed"}) == ()


async def test_checkpoints_given_twice_or_wrong_is_a_configuration_error() -> None:
    with pytest.raises(RuntimeConfigurationError, match="once"):
        AgentRuntime(
            models=ModelRegistry([ScriptedProvider()]),
            checkpoints=InMemoryCheckpointStore(),
            checkpoint_store=RecordingCheckpointStore(),
        )
    with pytest.raises(RuntimeConfigurationError, match="RunCheckpointStore"):
        AgentRuntime(models=ModelRegistry([ScriptedProvider()]), checkpoints=42)  # type: ignore[arg-type]


async def test_pending_without_a_store_says_what_to_pass() -> None:
    async with AgentRuntime(models=ModelRegistry([ScriptedProvider()])) as runtime:
        with pytest.raises(RuntimeConfigurationError, match="checkpoints="):
            await runtime.pending("r")


async def test_a_runtime_without_models_uses_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from actoviq.core import ModelRegistryError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelRegistryError, match="OPENAI_API_KEY"):
        AgentRuntime()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    async with AgentRuntime() as runtime:
        assert runtime.models.default_model == "openai-responses:gpt-4.1-mini"
