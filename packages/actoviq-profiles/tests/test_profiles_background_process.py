"""A background child survives its host process being killed (SIGKILL), on a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from actoviq.core import AgentSpec
from actoviq.profiles import create_profile_runtime, default_profile_registry
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.storage.sqlite import SqliteStorage

HOST = Path(__file__).resolve().parent / "background_host.py"
READER = AgentSpec(id="reader", name="Reader", instructions="Read.", model="child:model")
WRITER = AgentSpec(id="writer", name="Writer", instructions="Write.", model="child:model")
LEASE_MS = 400


async def _start_host(database: Path) -> tuple[asyncio.subprocess.Process, dict[str, str]]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HOST),
        str(database),
        str(LEASE_MS),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    if not line:
        _, err = await process.communicate()
        raise AssertionError(err.decode())
    return process, json.loads(line)


@pytest.mark.slow
async def test_children_outlive_a_killed_host(tmp_path: Path) -> None:
    database = tmp_path / "state.db"
    process, children = await _start_host(database)
    os.kill(process.pid, signal.SIGKILL)
    await process.communicate()
    assert process.returncode == -signal.SIGKILL

    provider = ScriptedProvider(["summary after the crash"], id="child")
    async with await SqliteStorage.open(database) as storage:
        registry = default_profile_registry(
            children=storage.children,
            spawnable_agents=[READER, WRITER],
            background_effects={"reader": "read"},
            background_owner_id="host-2",
        )
        async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
            runs = runtime.background
            assert runs is not None
            for child_id in children.values():
                record = await runs.query(child_id)
                assert record.status == "running" and record.lease_owner == "host-1"
            # the dead host's leases expire (time passes: deadline-bounded polling)
            started: set[str] = set()
            reconcile: set[str] = set()
            async with asyncio.timeout(20):
                while children["reader"] not in started or children["writer"] not in reconcile:
                    report = await runs.recover_children()
                    started.update(report.started)
                    reconcile.update(report.needs_reconciliation)
                    if not report.started and not report.needs_reconciliation:
                        await asyncio.sleep(0.05)
            done = await asyncio.wait_for(runs.result(children["reader"]), 20)
            assert done.output == "summary after the crash"
            reader = await runs.query(children["reader"])
            assert reader.status == "completed" and reader.attempts == 2
            writer = await runs.query(children["writer"])
            assert writer.status == "needs_reconciliation"  # never replayed: a side effect
            assert len(provider.calls) == 1
