"""The obvious SQLite path for a runtime (issue 14 §5): sessions that survive a restart, and an
interrupted run listed, decided and resumed from the store alone in a second process."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from actoviq.core import AgentSpec, TextItem, ToolCallItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, tool
from actoviq.storage.sqlite import (
    SqliteRunCheckpointAdapter,
    SqliteRuntimeSessionAdapter,
    SqliteStorage,
)

HERE = Path(__file__).resolve().parent
CHAT = AgentSpec(id="chat", name="Chat", instructions="Be brief.", model="scripted:m")


@tool(effect="side-effect", requires_approval=True)
def send(to: str) -> str:
    """Send a message."""
    raise AssertionError("the first process never runs the tool")


MAILER = AgentSpec(
    id="mailer", name="Mailer", instructions="x", model="scripted:m", tools=("send",)
)


async def test_a_chat_session_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    async with await SqliteStorage.open(path) as storage:
        sessions = storage.runtime_sessions()
        assert isinstance(sessions, SqliteRuntimeSessionAdapter)
        async with AgentRuntime(
            models=ModelRegistry([ScriptedProvider(["Nice to meet you, Ada."])]), sessions=sessions
        ) as runtime:
            await runtime.run(CHAT, "My name is Ada.", session_id="ada")
    # A new process would do exactly this: open the file again.
    provider = ScriptedProvider(["Your name is Ada."])
    async with (
        await SqliteStorage.open(path) as storage,
        AgentRuntime(
            models=ModelRegistry([provider]), sessions=storage.runtime_sessions()
        ) as runtime,
    ):
        result = await runtime.run(CHAT, "What is my name?", session_id="ada")
    assert result.output == "Your name is Ada."
    seen = [item.text for item in provider.requests[0].input if isinstance(item, TextItem)]
    assert seen[-3:] == ["My name is Ada.", "Nice to meet you, Ada.", "What is my name?"]


async def test_an_interrupted_run_is_resumed_from_the_store_in_another_process(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.db"
    script = [
        ScriptedTurn(
            tool_calls=[
                ToolCallItem(id="c1", name="send", input={"to": "ops"}),
                ToolCallItem(id="c2", name="send", input={"to": "dev"}),
            ]
        )
    ]
    async with await SqliteStorage.open(path) as storage:
        checkpoints = storage.runtime_checkpoints()
        assert isinstance(checkpoints, SqliteRunCheckpointAdapter)
        async with AgentRuntime(
            models=ModelRegistry([ScriptedProvider(script)]), tools=[send], checkpoints=checkpoints
        ) as runtime:
            first = await runtime.run(MAILER, "notify both", run_id="run-7")
        assert first.status == "interrupted"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HERE / "runtime_dx_worker.py"),
        str(path),
        "run-7",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, stderr.decode()
    outcome = json.loads(stdout.decode().strip().splitlines()[-1])
    assert outcome == {
        "waiting": [["send", {"to": "ops"}], ["send", {"to": "dev"}]],
        "output": "sent them",
        "sent": ["ops", "dev"],
        "after": 0,
    }


async def test_open_runtime_wires_both_stores_and_closes_them(tmp_path: Path) -> None:
    from actoviq.storage.sqlite import open_runtime

    path = tmp_path / "chat.db"
    async with open_runtime(
        path, models=ModelRegistry([ScriptedProvider(["Hello Ada."])])
    ) as runtime:
        await runtime.run(CHAT, "I am Ada.", session_id="s")
        assert await runtime.pending("nothing") == ()
    assert runtime.closed
    provider = ScriptedProvider(["You are Ada."])
    async with open_runtime(path, models=ModelRegistry([provider])) as runtime:
        await runtime.run(CHAT, "Who am I?", session_id="s")
    seen = [item.text for item in provider.requests[0].input if isinstance(item, TextItem)]
    assert "I am Ada." in seen
