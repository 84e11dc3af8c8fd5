"""The background profile: a durable run that outlives its runtime and is recovered once.

The run checkpoints into a SQLite file. It pauses for an approval before publishing; the runtime
is then closed (the caller is gone). A new runtime on the same file reads the run's status from
the checkpoint and recovers it: exactly once (a second recovery is refused).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from actoviq.core import ToolCallItem
from actoviq.profiles import (
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import InterruptionDecision, RunStateStaleError, tool
from actoviq.storage.sqlite import SqliteStorage


@tool(name="publish", effect="side-effect", requires_approval=True)
def publish(report: str) -> str:
    """Publish a report.

    Args:
        report: the report name.
    """
    return f"published {report}"


def models(*turns: ScriptedTurn | str) -> ModelRegistry:
    """A scripted model answering ``turns`` in order."""
    return ModelRegistry([ScriptedProvider(list(turns))])


PUBLISH = ScriptedTurn(
    tool_calls=[ToolCallItem(id="p", name="publish", input={"report": "weekly"})]
)


async def main() -> None:
    background = build_profile("background", model="scripted:demo", tools=["publish"])
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "runs.db"
        async with await SqliteStorage.open(database) as storage:
            registry = default_profile_registry()
            async with create_profile_runtime(
                registry,
                models=models(PUBLISH),
                checkpoints=storage.runtime_checkpoints(),
                agents=[background.spec],
            ) as runtime:
                runtime.tools.register(publish)
                paused = await run_profile(runtime, background, "Publish the weekly report")
        print(f"run {paused.run_id[:8]}… {paused.status}; the first runtime is closed")

        async with await SqliteStorage.open(database) as storage:
            registry = default_profile_registry()
            async with create_profile_runtime(
                registry,
                models=models("Weekly report published."),
                checkpoints=storage.runtime_checkpoints(),
                agents=[background.spec],
            ) as runtime:
                runtime.tools.register(publish)
                runs = registry.background
                assert runs is not None
                status = await runs.status(paused.run_id)
                print(f"status from the checkpoint: {status['status']}, turn {status['turn']}")
                (approval,) = paused.interruptions
                done = await runs.recover(
                    paused.run_id, [InterruptionDecision.approve(approval.id)]
                )
                print(f"recovered: {done.status}: {done.output}")
                try:
                    await runs.recover(paused.run_id, [InterruptionDecision.approve(approval.id)])
                except RunStateStaleError as error:
                    print(f"second recovery refused ({error.code})")


if __name__ == "__main__":
    asyncio.run(main())
