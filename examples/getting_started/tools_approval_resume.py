"""Tools with approval across processes: the run pauses durably, another process decides.

Process 1 runs the agent until a tool needs approval and exits; everything it knew is in the
SQLite file. Process 2 (``python tools_approval_resume.py resume <db> <run id>``) opens the file,
asks the store what the run waits for (``checkpoints.pending``), builds the decisions from that
alone and resumes; the side-effect tool runs exactly once, in process 2.

Offline (no OPENAI_API_KEY, or ACTOVIQ_OFFLINE=1) a scripted model answers; with a key, OpenAI.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn, TurnLike
from actoviq.runtime import AgentRuntime, InterruptionDecision, tool
from actoviq.storage.sqlite import SqliteStorage

OFFLINE = os.environ.get("ACTOVIQ_OFFLINE") == "1" or not os.environ.get("OPENAI_API_KEY")
RUN_ID = "deploy-1"


def models(script: list[TurnLike]) -> ModelRegistry:
    """OpenAI with a key, else the scripted provider answering ``script``."""
    if not OFFLINE:
        from actoviq.providers.openai import OpenAIResponsesProvider

        model = "openai-responses:gpt-4.1-mini"
        return ModelRegistry([OpenAIResponsesProvider()], default_model=model)
    return ModelRegistry([ScriptedProvider(script)], default_model="scripted:demo")


@tool(effect="side-effect", requires_approval=True)
def send_email(to: str, subject: str) -> dict[str, object]:
    """Send an email (requires approval).

    Args:
        to: recipient address.
        subject: subject line.
    """
    print(f"  [process {os.getpid()}] sending {subject!r} to {to}")
    return {"sent": True, "to": to}


@tool(effect="read")
def get_status(service: str) -> str:
    """Deployment status of a service.

    Args:
        service: the service name.
    """
    return f"{service}: deployed"


AGENT = AgentSpec(
    id="mailer",
    name="Mailer",
    instructions="Check the api service status with get_status, then email ops@example.test.",
    tools=("get_status", "send_email"),
)
FIRST_LEG: list[TurnLike] = [
    ScriptedTurn(
        tool_calls=[
            ToolCallItem(id="call_status", name="get_status", input={"service": "api"}),
            ToolCallItem(
                id="call_email",
                name="send_email",
                input={"to": "ops@example.test", "subject": "Deploy done"},
            ),
        ]
    )
]
SECOND_LEG: list[TurnLike] = [
    ScriptedTurn(
        text="Done: the API is deployed and ops were emailed.",
        stream_deltas=["Done: ", "the API is deployed and ops were emailed."],
    )
]


async def first_process(path: str) -> None:
    async with (
        await SqliteStorage.open(path) as storage,
        AgentRuntime(
            models=models(FIRST_LEG),
            tools=[send_email, get_status],
            checkpoints=storage.runtime_checkpoints(),
        ) as runtime,
    ):
        result = await runtime.run(AGENT, "Tell ops the deploy is done.", run_id=RUN_ID)
    print(f"process {os.getpid()}: {result.status}; the state is in {path}")


async def second_process(path: str, run_id: str) -> None:
    async with await SqliteStorage.open(path) as storage:
        checkpoints = storage.runtime_checkpoints()
        waiting = await checkpoints.pending(run_id)  # from the store alone
        for entry in waiting:
            print(f"process {os.getpid()}: {entry.kind} for {entry.tool_name}({entry.input})")
        decisions = [InterruptionDecision.approve(entry.id) for entry in waiting]
        async with AgentRuntime(
            models=models(SECOND_LEG),
            tools=[send_email, get_status],
            checkpoints=checkpoints,
            agents=[AGENT],
        ) as runtime:
            handle = runtime.resume(await checkpoints.load(run_id), decisions)
            async with handle:
                async for text in handle.text_deltas():
                    print(text, end="", flush=True)
                result = await handle.result()
    print(f"\nprocess {os.getpid()}: {result.status}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["resume"]:
        asyncio.run(second_process(sys.argv[2], sys.argv[3]))
    else:
        database = str(Path(tempfile.mkdtemp()) / "approvals.db")
        asyncio.run(first_process(database))
        subprocess.run([sys.executable, __file__, "resume", database, RUN_ID], check=True)
