"""Opt-in memory with a reused run id (completed run ids may be reused).

Before the fix the exchange was stored under the run id with ``expected_revision=None``: the
second run with that id completed, called the model, then raised ``StorageConflictError`` from
``afterRun``, so the caller lost the answer and the exchange was never remembered.
"""

from __future__ import annotations

from actoviq.profiles import (
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import InMemoryMemoryStore

MODEL = "scripted:model"


async def test_a_reused_run_id_keeps_its_answer_and_remembers_both_exchanges() -> None:
    provider = ScriptedProvider(["one", "two"], id="scripted")
    memory = InMemoryMemoryStore()
    chat = build_profile("chat", model=MODEL, optIns={"memory": True})
    registry = default_profile_registry(memory=memory)
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        first = await run_profile(runtime, chat, "Remember: Ada likes tea.", run_id="fixed")
        second = await run_profile(runtime, chat, "Remember: Bob likes coffee.", run_id="fixed")
    assert (first.status, first.output) == ("completed", "one")
    assert (second.status, second.output) == ("completed", "two")
    stored = sorted(
        str(record.value)
        for record in await memory.list_memories(
            tenant_id="default", namespace="profile:chat-agent"
        )
    )
    assert stored == [
        "User: Remember: Ada likes tea. | Assistant: one",
        "User: Remember: Bob likes coffee. | Assistant: two",
    ]


async def test_the_same_exchange_under_the_same_run_id_is_stored_once() -> None:
    provider = ScriptedProvider(["same", "same"], id="scripted")
    memory = InMemoryMemoryStore()
    chat = build_profile("chat", model=MODEL, optIns={"memory": True})
    registry = default_profile_registry(memory=memory)
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        for _ in range(2):
            result = await run_profile(runtime, chat, "Say same.", run_id="again")
            assert result.status == "completed"
    stored = await memory.list_memories(tenant_id="default", namespace="profile:chat-agent")
    assert [record.value for record in stored] == ["User: Say same. | Assistant: same"]
