"""Sessions in a host: several users, one runtime, history as canonical items in SQLite.

The 0.x session manager and bridge session APIs become three plain things: the host picks a
``session_id`` per conversation; the runtime's session service (``SqliteRuntimeSessionAdapter``)
stores each conversation's canonical items under compare-and-set; a surface bridge
(``AgentRuntimeBridgeAdapter``) passes the run options through unchanged. The host reads a
conversation with ``load`` and adds to it with ``append``: a retried append is recognised and
not doubled, a different append on a stale revision is refused with
``SessionRevisionConflictError`` and writes nothing. Offline (no API key, or
ACTOVIQ_OFFLINE=1) a scripted model answers from the history it is given; with OPENAI_API_KEY or
ANTHROPIC_API_KEY the real model does.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from actoviq.core import AgentSpec, TextItem
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn, TurnLike
from actoviq.runtime import AgentRuntime, SessionRevisionConflictError
from actoviq.storage.sqlite import SqliteStorage
from actoviq.surfaces import AgentRuntimeBridgeAdapter

TENANT = "default"


def choose_models(script: Sequence[TurnLike]) -> tuple[ModelRegistry, str, str]:
    """OpenAI with OPENAI_API_KEY, else Anthropic with ANTHROPIC_API_KEY, else the script."""
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        name = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        registry = ModelRegistry([OpenAIResponsesProvider()])
        return registry, f"openai-responses:{name}", f"OpenAI ({name})"
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        name = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        registry = ModelRegistry([AnthropicProvider()])
        return registry, f"anthropic:{name}", f"Anthropic ({name})"
    registry = ModelRegistry([ScriptedProvider(script, repeat_last=True)])
    return registry, "scripted:demo-model", "scripted provider (offline)"


def echo_history(request: ModelRequest) -> ScriptedTurn:
    """The scripted model: repeats the first thing this user said in the conversation."""
    said = [i.text for i in request.input if isinstance(i, TextItem) and i.role == "user"]
    return ScriptedTurn(text=f"You first said {said[0]!r}; this is message {len(said)}.")


async def main() -> None:
    registry, model, label = choose_models([echo_history])
    print(f"provider: {label}")
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="helper", name="Helper", instructions="Answer in one sentence.", model=model
    )
    with tempfile.TemporaryDirectory() as folder:
        async with await SqliteStorage.open(Path(folder) / "host.db") as storage:
            sessions = storage.runtime_sessions()
            async with AgentRuntime(models=registry, sessions=sessions) as runtime:
                bridge = AgentRuntimeBridgeAdapter(runtime, agent)
                # The host owns the mapping user -> session id; the bridge passes it through.
                for user, text in [("alice", "hi, I'm Alice"), ("bob", "hello from Bob")]:
                    result = await bridge.run(text, session_id=f"chat-{user}")
                    print(f"{user}: {result.output}")
                again = await bridge.run("still there?", session_id="chat-alice")
                print(f"alice: {again.output}")

            # Reading and writing a conversation without running an agent.
            loaded = await sessions.load(tenant_id=TENANT, session_id="chat-alice")
            print(f"chat-alice at revision {loaded.revision}: {len(loaded.items)} items")
            for item in loaded.items:
                if isinstance(item, TextItem):
                    print(f"  {item.role}: {item.text}")
            note = TextItem(role="assistant", text="(a support agent joined the chat)")
            revision = await sessions.append(
                tenant_id=TENANT, session_id="chat-alice", items=[note],
                expected_revision=loaded.revision,
            )  # fmt: skip
            print(f"appended a note: revision {loaded.revision} -> {revision}")
            retry = await sessions.append(
                tenant_id=TENANT, session_id="chat-alice", items=[note],
                expected_revision=loaded.revision,
            )  # fmt: skip
            print(f"the same append retried is recognised, not doubled: revision {retry}")
            other = TextItem(role="assistant", text="(another writer's note)")
            try:
                await sessions.append(
                    tenant_id=TENANT, session_id="chat-alice", items=[other],
                    expected_revision=loaded.revision,
                )  # fmt: skip
            except SessionRevisionConflictError as error:
                print(f"a second writer with the old revision is refused: {error.code}")


if __name__ == "__main__":
    asyncio.run(main())
