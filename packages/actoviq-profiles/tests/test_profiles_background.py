"""The background profile on the real ``BackgroundChildManager`` and a real SQLite file."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

from actoviq.core import AgentSpec, CanonicalItem, ToolCallItem, ToolResultItem
from actoviq.orchestration.background import DurableChildRecord
from actoviq.profiles import (
    BackgroundChildAccessError,
    BackgroundRuns,
    ProfileRuntime,
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.storage.sqlite import SqliteStorage

TOOLS = [
    "background.spawn",
    "background.await",
    "background.query",
    "background.list",
    "background.cancel",
]
SUMMARISER = AgentSpec(
    id="summariser", name="Summariser", instructions="Summarise.", model="child:model"
)


def _call(name: str, **args: Any) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ToolCallItem(id=f"call-{name}", name=name, input=args)])


def _results(items: list[CanonicalItem]) -> list[ToolResultItem]:
    return [item for item in items if isinstance(item, ToolResultItem)]


def _spawned(request: ModelRequest) -> str:
    """The child id the last ``background.spawn`` result in the request names."""
    for item in reversed(_results(list(request.input))):
        if isinstance(item.output, dict) and "childId" in item.output:
            return str(item.output["childId"])
    raise AssertionError("no background.spawn result in the request")


def _then(name: str, **args: Any) -> Callable[[ModelRequest], ScriptedTurn]:
    return lambda request: _call(name, child_id=_spawned(request), **args)


@contextlib.asynccontextmanager
async def _host(
    database: Path, *providers: ScriptedProvider, owner: str, **registry_options: Any
) -> AsyncGenerator[tuple[ProfileRuntime, BackgroundRuns, SqliteStorage]]:
    """One host process: storage on ``database``, a profile runtime, the background service."""
    async with await SqliteStorage.open(database) as storage:
        registry = default_profile_registry(
            children=storage.children,
            spawnable_agents=[SUMMARISER],
            allow=["background.*"],
            background_owner_id=owner,
            **registry_options,
        )
        async with create_profile_runtime(
            registry,
            models=ModelRegistry(list(providers)),
            checkpoints=storage.runtime_checkpoints(),
        ) as runtime:
            assert runtime.background is not None
            yield runtime, runtime.background, storage


async def test_a_background_profile_spawns_and_awaits_a_durable_child(tmp_path: Path) -> None:
    parent = ScriptedProvider(
        [
            _call("background.spawn", agent="summariser", task="Summarise the logs"),
            _then("background.await"),
            _then("background.query"),
            "all done",
        ],
        id="parent",
    )
    child = ScriptedProvider(["logs are fine"], id="child")
    profile = build_profile("background", model="parent:model", tools=TOOLS)
    async with _host(tmp_path / "state.db", parent, child, owner="worker-a") as (
        runtime,
        runs,
        storage,
    ):
        result = await run_profile(runtime, profile, "Start the summary")
        assert result.status == "completed"
        assert result.output == "all done"
        spawned, awaited, queried = (item.output for item in _results(list(result.items)))
        assert isinstance(spawned, dict) and isinstance(awaited, dict)
        child_id = str(spawned["childId"])
        assert awaited == queried
        assert awaited["status"] == "completed"
        assert awaited["output"] == "logs are fine"
        # the record is in the SQLite file, under the run that spawned it, with its lease gone
        row = await storage.children.get(tenant_id="default", child_id=child_id)
        assert row is not None
        record = DurableChildRecord.from_json(row.record)
        assert record.parent_run_id == result.run_id
        assert record.status == "completed"
        assert record.effect == "side-effect"
        assert record.lease_owner is None
        assert [r.child_id for r in await runs.children_of(result.run_id)] == [child_id]
    assert len(child.requests) == 1


async def test_background_cancel_stops_a_child(tmp_path: Path) -> None:
    started = asyncio.Event()

    def slow(request: ModelRequest) -> ScriptedTurn:
        started.set()
        return ScriptedTurn(text="never", delay=60)

    parent = ScriptedProvider(
        [
            _call("background.spawn", agent="summariser", task="Summarise"),
            _then("background.cancel", reason="not needed"),
            _then("background.await"),
            "cancelled it",
        ],
        id="parent",
    )
    profile = build_profile("background", model="parent:model", tools=TOOLS)
    child = ScriptedProvider([slow], id="child")
    async with _host(tmp_path / "state.db", parent, child, owner="worker-a") as (runtime, runs, _):
        result = await asyncio.wait_for(run_profile(runtime, profile, "go"), 20)
        _, cancelled, awaited = (item.output for item in _results(list(result.items)))
        assert isinstance(cancelled, dict) and isinstance(awaited, dict)
        assert cancelled["status"] == "cancelled"
        assert awaited["status"] == "cancelled"
        assert "not needed" in str(awaited["error"])
        await asyncio.wait_for(runs.manager.join(), 10)  # a started child's run was aborted
    assert result.output == "cancelled it"


async def test_the_host_cancels_a_running_child_a_run_awaits(tmp_path: Path) -> None:
    started = asyncio.Event()

    def slow(request: ModelRequest) -> ScriptedTurn:
        started.set()
        return ScriptedTurn(text="never", delay=60)

    parent = ScriptedProvider(
        [
            _call("background.spawn", agent="summariser", task="Summarise"),
            _then("background.await"),
            "gave up",
        ],
        id="parent",
    )
    profile = build_profile("background", model="parent:model", tools=TOOLS)
    child = ScriptedProvider([slow], id="child")
    async with _host(tmp_path / "state.db", parent, child, owner="worker-a") as (runtime, runs, _):
        async with asyncio.TaskGroup() as group:
            run = group.create_task(run_profile(runtime, profile, "go"))
            await asyncio.wait_for(started.wait(), 10)
            (record,) = await runs.manager.list_children(status="running")
            await runs.cancel(record.child_id, "operator stop")
        result = run.result()
    _, awaited = (item.output for item in _results(list(result.items)))
    assert isinstance(awaited, dict)
    assert awaited["status"] == "cancelled"
    assert result.output == "gave up"


async def test_a_run_cannot_reach_another_runs_children(tmp_path: Path) -> None:
    child = ScriptedProvider(["summary"], id="child")
    first = ScriptedProvider(
        [_call("background.spawn", agent="summariser", task="x"), _then("background.await"), "a"],
        id="parent",
    )
    profile = build_profile("background", model="parent:model", tools=TOOLS)
    async with _host(tmp_path / "state.db", first, child, owner="worker-a") as (runtime, runs, _):
        owner_run = await run_profile(runtime, profile, "first")
        (child_id,) = [r.child_id for r in await runs.children_of(owner_run.run_id)]
        first.add_turns(
            _call("background.cancel", child_id=child_id),
            _call("background.query", child_id="no-such-child"),
            "b",
        )
        other = await run_profile(runtime, profile, "second")
        refused, unknown = _results(list(other.items))
        assert refused.status == "error" and unknown.status == "error"
        assert "does not belong to this run" in str(refused.output)
        assert "Unknown background child" in str(unknown.output)
        assert (await runs.query(child_id)).status == "completed"
        assert BackgroundChildAccessError.__name__ in str(refused.output)


async def test_a_replay_safe_child_survives_a_restart_of_its_host(tmp_path: Path) -> None:
    database = tmp_path / "state.db"
    started = asyncio.Event()

    def slow(request: ModelRequest) -> ScriptedTurn:
        started.set()
        return ScriptedTurn(text="first host never answers", delay=60)

    parent = ScriptedProvider(
        [_call("background.spawn", agent="summariser", task="Summarise"), "spawned"], id="parent"
    )
    profile = build_profile("background", model="parent:model", tools=TOOLS)
    async with _host(
        database,
        parent,
        ScriptedProvider([slow], id="child"),
        owner="host-1",
        background_effects={"summariser": "read"},
    ) as (runtime, runs, _):
        result = await run_profile(runtime, profile, "start it and go")
        assert result.output == "spawned"
        (record,) = await runs.children_of(result.run_id)
        await asyncio.wait_for(started.wait(), 10)
        assert (await runs.query(record.child_id)).status == "running"
        assert (await runs.query(record.child_id)).lease_owner == "host-1"
    # the host is gone (its leases were released on close): a new host on the same file
    async with _host(
        database,
        ScriptedProvider([], id="parent"),
        ScriptedProvider(["summary after restart"], id="child"),
        owner="host-2",
    ) as (_, runs, _):
        stored = await runs.query(record.child_id)
        assert stored.status == "running" and stored.effect == "read"
        report = await runs.recover_children()
        assert record.child_id in report.started
        done = await asyncio.wait_for(runs.result(record.child_id), 10)
        assert done.output == "summary after restart"
        final = await runs.query(record.child_id)
        assert final.status == "completed"
        assert final.attempts == 2


async def test_a_side_effect_child_waits_for_reconciliation_after_a_restart(
    tmp_path: Path,
) -> None:
    database = tmp_path / "state.db"
    child = ScriptedProvider([], id="child")
    async with _host(database, child, owner="host-1") as (_, runs, storage):
        handle = await runs.start(SUMMARISER, "Publish the report", auto_start=False)
        queued = await handle.query()
        assert queued.status == "queued" and queued.effect == "side-effect"
        # a worker took it and died mid-run: its lease on the record has expired
        stale = queued.next(status="running", lease_owner="dead-host", lease_expires_at=1)
        assert await storage.children.compare_and_set(
            tenant_id="default",
            child_id=queued.child_id,
            expected_revision=queued.revision,
            record=stale.to_json(),
        )
    async with _host(database, ScriptedProvider([], id="child"), owner="host-2") as (_, runs, _):
        report = await runs.recover_children()
        assert queued.child_id in report.needs_reconciliation
        assert (await runs.query(queued.child_id)).status == "needs_reconciliation"
        settled = await runs.reconcile(
            queued.child_id, "completed", actor="ops", output="published by hand"
        )
        assert settled.status == "completed"
