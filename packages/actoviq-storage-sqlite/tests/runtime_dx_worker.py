"""A second process: open the SQLite file, list what the run waits for, approve, resume.

Usage: python runtime_dx_worker.py <db path> <run id>; prints one JSON line with the outcome.
"""

from __future__ import annotations

import asyncio
import json
import sys

from actoviq.core import AgentSpec
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime, InterruptionDecision, tool
from actoviq.storage.sqlite import SqliteStorage

SENT: list[str] = []


@tool(effect="side-effect", requires_approval=True)
def send(to: str) -> str:
    """Send a message."""
    SENT.append(to)
    return f"sent to {to}"


AGENT = AgentSpec(id="mailer", name="Mailer", instructions="x", model="scripted:m", tools=("send",))


async def main(path: str, run_id: str) -> None:
    async with await SqliteStorage.open(path) as storage:
        checkpoints = storage.runtime_checkpoints()
        waiting = await checkpoints.pending(run_id)
        decisions = [InterruptionDecision.approve(entry.id) for entry in waiting]
        state = await checkpoints.load(run_id)
        async with AgentRuntime(
            models=ModelRegistry([ScriptedProvider(["sent them"])]),
            tools=[send],
            checkpoints=checkpoints,
            agents=[AGENT],
        ) as runtime:
            result = await runtime.resume(state, decisions).result()
            after = await runtime.pending(run_id)
    print(
        json.dumps(
            {
                "waiting": [[entry.tool_name, entry.input] for entry in waiting],
                "output": result.output,
                "sent": SENT,
                "after": len(after),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
