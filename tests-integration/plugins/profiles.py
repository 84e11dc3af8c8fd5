"""Release gate: every canonical item survives the journal of a compacting profile run.

A profile with the compaction opt-in builds the conversation itself in a session run
(``profile.compaction`` at ``prepareInput``): it appends the new input to the session before the
model call and the runtime appends the generated items after it. The check runs a chat profile
with compaction on, the transcript as its input, on a real runtime and session store, and reads
the session journal back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from harness import register_persistence

from actoviq.core import CanonicalItem
from actoviq.profiles import (
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import InMemorySessionStore, RuntimeSessionStore


async def _compaction_journal(items: Sequence[CanonicalItem]) -> Sequence[CanonicalItem]:
    # the corpus items name the provider "fixture" (reasoning items only go back to it)
    provider = ScriptedProvider(["ok"], id="fixture")
    profile = build_profile("chat", model="fixture:model", optIns={"compaction": True})
    async with create_profile_runtime(
        default_profile_registry(),
        models=ModelRegistry([provider]),
        sessions=InMemorySessionStore(),
    ) as runtime:
        await run_profile(runtime, profile, list(items), session_id="gate")
        store = cast(RuntimeSessionStore, await runtime.services.resolve("sessions"))
        loaded = await store.load(tenant_id="default", session_id="gate")
    return loaded.items[: len(items)]


register_persistence("profiles-compaction-journal", _compaction_journal)
