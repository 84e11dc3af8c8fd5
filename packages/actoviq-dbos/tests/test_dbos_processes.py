"""Durable runs across real processes (issue 22): a worker SIGKILLed after its tool step
recovers in a new process without re-running the tool; one killed inside a side-effect tool
surfaces as a reconciliation, never a re-run; an approval delivered twice from another process
resumes the waiting run exactly once. On SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import signal
import sys
import uuid
from pathlib import Path

import pytest
from dbos_harness import (
    TARGETS,
    agent,
    charge_tool,
    deterministic_model,
    launched,
    lines,
    system_url,
)

from actoviq.dbos import DbosRuntime, decide, pending, read_events, retrieve_run

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="function")]

WORKER = Path(__file__).resolve().parent / "dbos_worker.py"


async def _worker(mode: str, url: str, directory: Path, run_id: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        mode,
        url,
        str(directory),
        run_id,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, stderr.decode("utf-8", "replace")


def _recovering_runtime(directory: Path) -> DbosRuntime:
    # Same name, tools and agent as the crashed worker: DBOS.launch() recovers its workflow here.
    return DbosRuntime(
        name="worker",
        models=[deterministic_model(directory / "model_calls")],
        tools=[charge_tool(directory)],
        agents=[agent()],
        stream_events=True,
    )


@pytest.mark.parametrize("kind", TARGETS)
async def test_sigkill_after_the_tool_step_recovers_without_rerunning_it(
    kind: str, tmp_path: Path
) -> None:
    url = system_url(kind, tmp_path)
    run_id = f"crash-{uuid.uuid4().hex}"
    code, stderr = await _worker("crash-after-tool", url, tmp_path, run_id)
    assert code == -signal.SIGKILL, stderr
    assert lines(tmp_path / "effects") == ["7"]
    assert len(lines(tmp_path / "model_calls")) == 1
    durable = _recovering_runtime(tmp_path)
    with launched(url):
        try:
            result = await asyncio.wait_for((await retrieve_run(run_id)).result(), 60)
            events = [event async for event in read_events(run_id, timeout_seconds=30)]
        finally:
            await durable.close()
    assert result.status == "completed"
    assert result.output == 'done: "receipt-7"'
    assert lines(tmp_path / "effects") == ["7"]  # the side effect ran once
    # the recovered process made only the second model call (the first was replayed)
    assert len(lines(tmp_path / "model_calls")) == 2
    # The durable event stream: the crashed process's events and the recovered ones, each
    # sequence number once (the replay's writes were skipped), in order, to the end.
    sequences = [event.sequence for event in events]
    assert sequences == list(range(1, len(events) + 1))
    types = [event.type for event in events]
    assert types[0] == "run.started"
    assert types[-1] == "run.completed"
    assert types.count("tool.completed") == 1


@pytest.mark.parametrize("kind", TARGETS)
async def test_sigkill_inside_a_side_effect_becomes_a_reconciliation(
    kind: str, tmp_path: Path
) -> None:
    url = system_url(kind, tmp_path)
    run_id = f"inside-{uuid.uuid4().hex}"
    code, stderr = await _worker("crash-inside-tool", url, tmp_path, run_id)
    assert code == -signal.SIGKILL, stderr
    assert lines(tmp_path / "effects") == ["7"]
    durable = _recovering_runtime(tmp_path)
    with launched(url):
        try:
            waiting = await pending(run_id, timeout_seconds=60)
            assert [entry.kind for entry in waiting] == ["reconciliation"]
            assert waiting[0].call_id == "call-1"
            await decide(run_id, "call-1", "committed", output="receipt-7 (checked)")
            result = await asyncio.wait_for((await retrieve_run(run_id)).result(), 60)
        finally:
            await durable.close()
    assert result.status == "completed"
    assert result.output == 'done: "receipt-7 (checked)"'
    assert lines(tmp_path / "effects") == ["7"]  # never re-run


@pytest.mark.parametrize("kind", TARGETS)
async def test_approval_from_another_process_delivered_twice_runs_once(
    kind: str, tmp_path: Path
) -> None:
    url = system_url(kind, tmp_path)
    run_id = f"approval-{uuid.uuid4().hex}"
    durable = DbosRuntime(
        name="worker",
        models=[deterministic_model(tmp_path / "model_calls")],
        tools=[charge_tool(tmp_path, approval=True)],
        agents=[agent()],
    )
    with launched(url):
        try:
            started = await durable.start(agent(), "charge 7", run_id=run_id)
            assert [entry.kind for entry in await pending(run_id, timeout_seconds=30)] == [
                "approval"
            ]
            code, stderr = await _worker("approve", url, tmp_path, run_id)
            assert code == 0, stderr
            result = await asyncio.wait_for(started.result(), 60)
        finally:
            await durable.close()
    assert result.status == "completed"
    assert lines(tmp_path / "effects") == ["7"]
