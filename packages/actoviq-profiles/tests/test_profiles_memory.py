"""Opt-in memory (recall across runs) and compaction (summary through the model, full journal)."""

from __future__ import annotations

from typing import cast

from actoviq.core import CanonicalItem, TextItem
from actoviq.profiles import (
    AGENT_PROFILE_KINDS,
    CompactionSettings,
    Skill,
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    estimate_tokens,
    run_profile,
    stream_profile,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import (
    InMemoryCheckpointStore,
    InMemoryMemoryStore,
    InMemorySessionStore,
    RuntimeSessionStore,
)

MODEL = "scripted:model"


def _texts(request: ModelRequest) -> list[str]:
    return [item.text for item in request.input if isinstance(item, TextItem)]


async def test_memory_recalls_earlier_exchanges_by_topic() -> None:
    provider = ScriptedProvider(["Noted: Ada likes tea.", "Ada likes tea."], id="scripted")
    memory = InMemoryMemoryStore()
    registry = default_profile_registry(memory=memory)
    chat = build_profile("chat", model=MODEL, optIns={"memory": True})
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        await run_profile(runtime, chat, "Remember: Ada likes green tea.")
        await run_profile(runtime, chat, "What does Ada like to drink?")
    stored = await memory.list_memories(tenant_id="default", namespace="profile:chat-agent")
    assert len(stored) == 2
    first, second = (_texts(call.request) for call in provider.calls)
    assert not any("Relevant memory" in text for text in first)
    recalled = [text for text in second if text.startswith("Relevant memory")]
    assert len(recalled) == 1
    assert "Ada likes green tea" in recalled[0]


async def test_memory_recalls_nothing_unrelated() -> None:
    provider = ScriptedProvider(["ok", "ok"], id="scripted")
    registry = default_profile_registry()
    chat = build_profile("chat", model=MODEL, optIns={"memory": True})
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        await run_profile(runtime, chat, "Remember: Ada likes green tea.")
        await run_profile(runtime, chat, "Compute 2 plus 2 quickly")
    assert not any("Relevant memory" in text for text in _texts(provider.calls[1].request))


async def test_compaction_summarises_old_turns_and_keeps_the_full_journal() -> None:
    def answer(request: ModelRequest) -> str:
        texts = _texts(request)
        if texts and texts[0].startswith("Summarise the conversation"):
            return "SUMMARY: the user talked about turns 1-3."
        return f"reply {len(texts)}"

    provider = ScriptedProvider([answer] * 10, id="scripted")
    sessions = InMemorySessionStore()
    registry = default_profile_registry(
        compaction=CompactionSettings(max_context_tokens=120, keep_recent=2)
    )
    chat = build_profile("chat", model=MODEL, optIns={"compaction": True})
    async with create_profile_runtime(
        registry, models=ModelRegistry([provider]), sessions=sessions
    ) as runtime:
        for n in range(1, 5):
            await run_profile(runtime, chat, f"turn {n}: " + "words " * 30, session_id="s1")
        stored = cast(RuntimeSessionStore, await runtime.services.resolve("sessions"))
        loaded = await stored.load(tenant_id="default", session_id="s1")
    journal: list[CanonicalItem] = list(loaded.items)
    user_turns = [i.text for i in journal if isinstance(i, TextItem) and i.role == "user"]
    assert [text.split(":")[0] for text in user_turns] == ["turn 1", "turn 2", "turn 3", "turn 4"]
    assistant = [i for i in journal if isinstance(i, TextItem) and i.role == "assistant"]
    assert len(assistant) == 4
    assert not any("SUMMARY" in i.text for i in journal if isinstance(i, TextItem))
    summaries = [c for c in provider.calls if _texts(c.request)[0].startswith("Summarise")]
    assert summaries, "the model was asked to summarise"
    last = provider.calls[-1].request
    texts = _texts(last)
    assert any(text.startswith("Summary of the earlier conversation:\nSUMMARY") for text in texts)
    assert not any(text.startswith("turn 1:") for text in texts)
    assert texts[-1].startswith("turn 4:")
    assert estimate_tokens(last.input) < estimate_tokens(journal)


async def test_compaction_under_budget_sends_the_whole_history() -> None:
    provider = ScriptedProvider(["a", "b"], id="scripted")
    registry = default_profile_registry()
    chat = build_profile("chat", model=MODEL, optIns={"compaction": True})
    async with create_profile_runtime(
        registry, models=ModelRegistry([provider]), sessions=InMemorySessionStore()
    ) as runtime:
        await run_profile(runtime, chat, "first", session_id="s")
        await run_profile(runtime, chat, "second", session_id="s")
    texts = _texts(provider.calls[1].request)
    assert texts[1:] == ["first", "a", "second"]
    assert len(provider.calls) == 2


async def test_skills_opt_in_adds_only_the_skills_the_input_calls_for() -> None:
    provider = ScriptedProvider(["ok", "ok"], id="scripted")
    registry = default_profile_registry(
        skills=[
            Skill(name="sql-review", description="review database queries", instructions="S1"),
            Skill(name="haiku", description="write short poems", instructions="H1"),
        ]
    )
    chat = build_profile("chat", model=MODEL, optIns={"skills": True})
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        await run_profile(runtime, chat, "Please review these database queries")
        await run_profile(runtime, chat, "Hello there")
    first, second = (_texts(call.request) for call in provider.calls)
    assert "Skill sql-review: S1" in first
    assert not any("haiku" in text for text in first)
    assert not any(text.startswith("Skill ") for text in second)


async def test_every_profile_with_all_opt_ins_runs_on_the_default_registry() -> None:
    provider = ScriptedProvider([f"r{n}" for n in range(6)], id="scripted")
    registry = default_profile_registry(workspaces={})
    async with create_profile_runtime(
        registry,
        models=ModelRegistry([provider]),
        sessions=InMemorySessionStore(),
        checkpoints=InMemoryCheckpointStore(),
    ) as runtime:
        for kind in AGENT_PROFILE_KINDS:
            if kind == "coding":
                continue  # needs a workspace (covered elsewhere)
            profile = build_profile(
                kind, model=MODEL, optIns={"memory": True, "skills": True, "compaction": True}
            )
            result = await run_profile(runtime, profile, "hi", session_id=f"s-{kind}")
            assert result.status == "completed"


async def test_stream_profile_builds_the_compacted_conversation_too() -> None:
    provider = ScriptedProvider(["one", "two"], id="scripted")
    registry = default_profile_registry()
    chat = build_profile("chat", model=MODEL, optIns={"compaction": True})
    async with create_profile_runtime(
        registry, models=ModelRegistry([provider]), sessions=InMemorySessionStore()
    ) as runtime:
        await run_profile(runtime, chat, "first", session_id="s")
        handle = stream_profile(runtime, chat, "second", session_id="s")
        types = [event.type async for event in handle]
        result = await handle.result()
        store = cast(RuntimeSessionStore, await runtime.services.resolve("sessions"))
        loaded = await store.load(tenant_id="default", session_id="s")
    assert result.output == "two"
    assert "run.completed" in types
    assert provider.calls[1].streaming is True
    assert _texts(provider.calls[1].request)[1:] == ["first", "one", "second"]
    assert [i.text for i in loaded.items if isinstance(i, TextItem)] == [
        "first",
        "one",
        "second",
        "two",
    ]
