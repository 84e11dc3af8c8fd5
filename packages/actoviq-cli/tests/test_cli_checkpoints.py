"""``DeferredCheckpointStore``: nothing opened before the first model call.

Everything that matters is written before the runtime acts on it; exactly-once resume holds.
"""

from __future__ import annotations

from typing import Any

import pytest

from actoviq.cli import DeferredCheckpointStore
from actoviq.core import AgentSpec, JsonObject, ToolCallItem
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    ClaimingRunCheckpointStore,
    InMemoryCheckpointStore,
    InterruptionDecision,
    RunStateStaleError,
    StoreRunCheckpointAdapter,
    tool,
)


class Opener:
    """Counts opens; ``store`` is the real (in-memory) claiming store."""

    def __init__(self) -> None:
        self.store = StoreRunCheckpointAdapter(InMemoryCheckpointStore())
        self.opens = 0

    async def __call__(self) -> ClaimingRunCheckpointStore:
        self.opens += 1
        return self.store


AGENT: AgentSpec[Any, Any] = AgentSpec(
    id="a", name="A", instructions="x", model="scripted:m", tools=("record",)
)
TEXT_AGENT: AgentSpec[Any, Any] = AgentSpec(id="t", name="T", instructions="x", model="scripted:m")


def _runtime(
    provider: ScriptedProvider, store: DeferredCheckpointStore, tools: Any
) -> AgentRuntime:
    return AgentRuntime(
        models=ModelRegistry([provider]), tools=tools, checkpoint_store=store, agents=[AGENT]
    )


async def test_a_text_run_opens_nothing_before_its_model_call() -> None:
    opener = Opener()
    deferred = DeferredCheckpointStore(opener)
    seen: list[bool] = []

    def answer(request: ModelRequest) -> ScriptedTurn:
        seen.append(deferred.opened)
        return ScriptedTurn(text="done")

    async with _runtime(ScriptedProvider([answer]), deferred, []) as runtime:
        result = await runtime.run(TEXT_AGENT, "hi")
    assert seen == [False] and result.status == "completed"
    assert opener.opens == 1  # the terminal state was written
    stored = await opener.store.load(result.run_id)
    assert stored is not None and stored["status"] == "completed"


async def test_without_deferral_the_store_opens_before_the_model_call() -> None:
    opener = Opener()
    deferred = DeferredCheckpointStore(opener, defer=False)
    seen: list[bool] = []

    def answer(request: ModelRequest) -> ScriptedTurn:
        seen.append(deferred.opened)
        return ScriptedTurn(text="done")

    async with _runtime(ScriptedProvider([answer]), deferred, []) as runtime:
        await runtime.run(TEXT_AGENT, "hi")
    assert seen == [True]


async def test_a_started_tool_is_durable_before_it_runs() -> None:
    opener = Opener()
    deferred = DeferredCheckpointStore(opener)
    stored_while_running: list[JsonObject | None] = []

    @tool(effect="side-effect")
    async def record(note: str) -> str:
        """Record a note.

        Args:
            note: the note.
        """
        stored_while_running.append(await opener.store.load(run_id))
        return "ok"

    provider = ScriptedProvider(
        [
            ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="record", input={"note": "n"})]),
            ScriptedTurn(text="recorded"),
        ]
    )
    run_id = "run-started"
    async with _runtime(provider, deferred, [record]) as runtime:
        result = await runtime.run(AGENT, "go", run_id=run_id)
    assert result.output == "recorded"
    (state,) = stored_while_running
    assert state is not None and state["status"] == "running"
    (pending,) = state["pendingTools"]  # type: ignore[misc]
    assert pending["status"] == "started"  # type: ignore[index]


async def test_a_paused_run_resumes_exactly_once_through_the_deferred_store() -> None:
    opener = Opener()
    calls: list[str] = []

    @tool(effect="side-effect", requires_approval=True)
    def record(note: str) -> str:
        """Record a note.

        Args:
            note: the note.
        """
        calls.append(note)
        return "ok"

    script = ScriptedProvider(
        [
            ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="record", input={"note": "n"})]),
            ScriptedTurn(text="recorded"),
        ]
    )
    async with _runtime(script, DeferredCheckpointStore(opener), [record]) as first:
        paused = await first.run(AGENT, "go")
    assert paused.status == "interrupted"
    stored = await opener.store.load(paused.run_id)
    assert stored is not None and stored["status"] == "interrupted"
    approve = [InterruptionDecision.approve(i.id) for i in paused.interruptions]
    async with _runtime(script, DeferredCheckpointStore(opener), [record]) as second:
        done = await second.resume(stored, approve).result()
    assert done.status == "completed" and calls == ["n"]
    async with _runtime(script, DeferredCheckpointStore(opener), [record]) as third:
        with pytest.raises(RunStateStaleError):
            await third.resume(stored, approve).result()
    assert calls == ["n"]
