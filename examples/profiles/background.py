"""The background profile: durable children and runs that outlive the process that started them.

Everything lives in one SQLite file. Part 1: a background run spawns a durable child through
``background.spawn`` (a ``BackgroundChildManager`` record with a lease, in the file) and awaits
it. Part 2: a host queues a child and stops; a new host on the same file recovers it and runs it.
Part 3: a run pauses for an approval and is recovered from its checkpoint, exactly once.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from actoviq.core import AgentSpec, JsonValue, ToolCallItem, ToolResultItem
from actoviq.profiles import (
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn, TurnLike
from actoviq.runtime import InterruptionDecision, RunStateStaleError, tool
from actoviq.storage.sqlite import SqliteStorage

SUMMARISER = AgentSpec(
    id="summariser", name="Summariser", instructions="Summarise.", model="child:demo"
)


@tool(name="publish", effect="side-effect", requires_approval=True)
def publish(report: str) -> str:
    """Publish a report.

    Args:
        report: the report name.
    """
    return f"published {report}"


def call(name: str, **args: JsonValue) -> ScriptedTurn:
    """A scripted model turn calling one tool."""
    return ScriptedTurn(tool_calls=[ToolCallItem(id=name, name=name, input=dict(args))])


def await_spawned(request: ModelRequest) -> ScriptedTurn:
    """Call ``background.await`` on the child the previous ``background.spawn`` started."""
    for item in request.input:
        if isinstance(item, ToolResultItem) and isinstance(item.output, dict):
            return call("background.await", child_id=str(item.output["childId"]))
    raise LookupError("no child was spawned")


def models(parent: list[TurnLike], child: list[str]) -> ModelRegistry:
    """A scripted parent model (``scripted:demo``) and child model (``child:demo``)."""
    return ModelRegistry([ScriptedProvider(list(parent)), ScriptedProvider(child, id="child")])


async def durable_children(database: Path) -> None:
    """Parts 1 and 2: spawn and await a child; a child recovered by the next host."""
    background = build_profile(
        "background", model="scripted:demo", tools=["background.spawn", "background.await"]
    )
    spawn = call("background.spawn", agent="summariser", task="Summarise the logs")
    async with await SqliteStorage.open(database) as storage:
        registry = default_profile_registry(
            children=storage.children, spawnable_agents=[SUMMARISER], allow=["background.*"]
        )
        async with create_profile_runtime(
            registry,
            models=models([spawn, await_spawned, "The summary is in."], ["Logs look healthy."]),
            checkpoints=storage.runtime_checkpoints(),
        ) as runtime:
            result = await run_profile(runtime, background, "Get the logs summarised")
            awaited = [i for i in result.items if isinstance(i, ToolResultItem)][-1].output
            print(f"part 1: the child answered {awaited}")
            assert runtime.background is not None
            queued = await runtime.background.start(SUMMARISER, "Nightly", auto_start=False)
            print(f"part 2: child {queued.child_id[:8]}… queued; the first host stops")

    async with await SqliteStorage.open(database) as storage:
        registry = default_profile_registry(children=storage.children)
        async with create_profile_runtime(
            registry,
            models=models([], ["Nightly summary done."]),
            checkpoints=storage.runtime_checkpoints(),
            agents=[SUMMARISER],
        ) as runtime:
            assert runtime.background is not None
            report = await runtime.background.recover_children()
            done = await runtime.background.result(queued.child_id)
            print(f"part 2: the new host recovered {len(report.started)} child: {done.output}")


async def checkpointed_run(database: Path) -> None:
    """Part 3: a run paused for approval, recovered from its checkpoint in a new runtime."""
    background = build_profile("background", model="scripted:demo", tools=["publish"])
    async with (
        await SqliteStorage.open(database) as storage,
        create_profile_runtime(
            default_profile_registry(),
            models=models([call("publish", report="weekly")], []),
            checkpoints=storage.runtime_checkpoints(),
            agents=[background.spec],
        ) as runtime,
    ):
        runtime.tools.register(publish)
        paused = await run_profile(runtime, background, "Publish the weekly report")
    print(f"part 3: run {paused.run_id[:8]}… {paused.status}; the first runtime is closed")

    async with (
        await SqliteStorage.open(database) as storage,
        create_profile_runtime(
            default_profile_registry(),
            models=models(["Weekly report published."], []),
            checkpoints=storage.runtime_checkpoints(),
            agents=[background.spec],
        ) as runtime,
    ):
        runtime.tools.register(publish)
        runs = runtime.background
        assert runs is not None
        status = await runs.status(paused.run_id)
        print(f"part 3: status from the checkpoint: {status['status']}, turn {status['turn']}")
        (approval,) = paused.interruptions
        done = await runs.recover(paused.run_id, [InterruptionDecision.approve(approval.id)])
        print(f"part 3: recovered: {done.status}: {done.output}")
        try:
            await runs.recover(paused.run_id, [InterruptionDecision.approve(approval.id)])
        except RunStateStaleError as error:
            print(f"part 3: second recovery refused ({error.code})")


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        await durable_children(Path(folder) / "children.db")
        await checkpointed_run(Path(folder) / "runs.db")


if __name__ == "__main__":
    asyncio.run(main())
