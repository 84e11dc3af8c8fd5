"""A host process whose background children outlive it (see test_profiles_background_process).

Usage: ``python background_host.py DATABASE LEASE_MS``

It opens the SQLite file, starts two durable children of the ``summariser`` agent through the
profile registry's background service (one ``read``, one ``side-effect``), waits until both
have called the model (which never answers here), prints their ids as one JSON line and waits
to be killed.
"""

from __future__ import annotations

import asyncio
import json
import sys

from actoviq.core import AgentSpec
from actoviq.profiles import create_profile_runtime, default_profile_registry
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.storage.sqlite import SqliteStorage

READER = AgentSpec(id="reader", name="Reader", instructions="Read.", model="child:model")
WRITER = AgentSpec(id="writer", name="Writer", instructions="Write.", model="child:model")


async def main(database: str, lease_ms: int) -> None:
    called = asyncio.Event()
    calls = 0

    def hang(request: ModelRequest) -> ScriptedTurn:
        nonlocal calls
        calls += 1
        if calls == 2:
            called.set()
        return ScriptedTurn(text="never", delay=3600)

    async with await SqliteStorage.open(database) as storage:
        registry = default_profile_registry(
            children=storage.children,
            spawnable_agents=[READER, WRITER],
            background_effects={"reader": "read"},
            background_lease_ms=lease_ms,
            background_owner_id="host-1",
        )
        models = ModelRegistry([ScriptedProvider([hang], id="child", repeat_last=True)])
        async with create_profile_runtime(registry, models=models) as runtime:
            background = runtime.background
            assert background is not None
            reader = await background.start(READER, "Summarise the logs")
            writer = await background.start(WRITER, "Publish the summary")
            await asyncio.wait_for(called.wait(), 30)
            print(json.dumps({"reader": reader.child_id, "writer": writer.child_id}), flush=True)
            await asyncio.Event().wait()  # until SIGKILL


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
