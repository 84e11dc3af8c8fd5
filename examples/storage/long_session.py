"""A long chat session on SQLite whose turns stay as fast at turn 500 as at turn 1.

``python long_session.py`` runs 500 turns of one session through ``runtime.run(...,
session_id=)``. The session adapter keeps the decoded history between runs (bounded by
``history_cache_items``), so a turn reads and decodes only what was appended since the previous
one, including a turn written meanwhile by another process on the same file (simulated here by
a second storage handle). Offline (no OPENAI_API_KEY, or ACTOVIQ_OFFLINE=1) the model is a small
provider written the way a user writes one; with a key, OpenAI answers 3 turns.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

from actoviq.core import AgentSpec, TextItem, Usage
from actoviq.providers import (
    ALL_CAPABILITIES,
    BaseModelProvider,
    ModelCallContext,
    ModelRegistry,
    ModelResponse,
    PreparedCall,
)
from actoviq.runtime import AgentRuntime
from actoviq.storage.sqlite import SqliteRuntimeSessionAdapter, SqliteStorage

OFFLINE = os.environ.get("ACTOVIQ_OFFLINE") == "1" or not os.environ.get("OPENAI_API_KEY")
TURNS = 500 if OFFLINE else 3


class CountingModel(BaseModelProvider):
    """Answers with how many items it was shown (the whole history arrives every time)."""

    def __init__(self) -> None:
        super().__init__(id="counting", default_capabilities=ALL_CAPABILITIES)

    async def _generate(self, prepared: PreparedCall, context: ModelCallContext) -> ModelResponse:
        seen = len(prepared.request.input)  # a real provider maps them to its wire format here
        return ModelResponse(
            id=f"r{seen}",
            model=prepared.model,
            output=(TextItem(role="assistant", text=f"I have seen {seen} items."),),
            usage=Usage(requests=1),
        )


def models() -> ModelRegistry:
    """OpenAI with a key, else the counting model."""
    if not OFFLINE:
        from actoviq.providers.openai import OpenAIResponsesProvider

        return ModelRegistry(
            [OpenAIResponsesProvider()], default_model="openai-responses:gpt-4.1-mini"
        )
    return ModelRegistry([CountingModel()], default_model="counting:m")


agent = AgentSpec(id="chat", name="Chat", instructions="Answer in one short sentence.")


async def main(path: Path) -> None:
    """Run the session, with one turn written by another handle on the file halfway."""
    async with (
        await SqliteStorage.open(path) as storage,
        await SqliteStorage.open(path) as other,
    ):
        sessions = SqliteRuntimeSessionAdapter(storage.sessions, history_cache_items=50_000)
        async with AgentRuntime(models=models(), sessions=sessions) as runtime:
            times: list[float] = []
            output: object = None
            for turn in range(TURNS):
                if turn == TURNS // 2:  # another process appends a turn to the same session
                    writer = SqliteRuntimeSessionAdapter(other.sessions)
                    held = await writer.load(tenant_id="default", session_id="me")
                    await writer.append(
                        tenant_id="default",
                        session_id="me",
                        items=[TextItem(role="user", text="(a note from another process)")],
                        expected_revision=held.revision,
                    )
                started = time.perf_counter()
                output = (await runtime.run(agent, f"message {turn}", session_id="me")).output
                times.append(time.perf_counter() - started)
            print(f"turn {TURNS}: {output}")
        window = max(1, min(50, TURNS // 2))
        first, last = sum(times[:window]) / window, sum(times[-window:]) / window
        print(
            f"mean turn: first {window} {first * 1000:.2f} ms, last {window} {last * 1000:.2f} ms"
        )
        cache = sessions.history_cache
        print(f"history cache: {len(cache)} session(s), {cache.items} items held")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(main(Path(folder) / "chat.db"))
