"""Crash safety (issue 5, D5): SIGKILL a worker process at each persisted tool state, resume.

The worker (``runtime_crash_worker.py``) runs an agent whose first model turn calls three tools
(read ``lookup`` c1, idempotent-write ``upsert`` c2, side-effect ``charge`` c3, one at a time)
against a file-backed checkpoint store (fsync + atomic rename) and kills itself with SIGKILL
either right after a pending-tool state is durable (``store:<call>:<status>``) or inside a tool
after its effect (``tool:<call>``). A fresh runtime in this process then loads the checkpoint
and resumes it. Every real tool execution is appended (fsync'd) to an execution log, so the
assertions count what actually ran across both processes:

* committed calls are never re-executed;
* a side-effect call caught in ``started`` is never re-executed: it surfaces as ``unknown``
  with a reconciliation interruption, and ``retry`` is refused for it;
* a read caught in ``started`` is simply run again; an idempotent-write caught in ``started``
  needs a decision and may be retried with the same idempotency key (D5);
* reconciliation decisions (``committed`` with a result, ``failed``, ``retry`` where allowed)
  finish the run, and the next model request holds every result of the turn in call order.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from runtime_crashkit import FileCheckpointStore, build_runtime, read_executions

from actoviq.core import JsonObject, RunResult, ToolResultItem
from actoviq.events import InMemoryEventSink
from actoviq.runtime import InterruptionDecision, ReconciliationDecisionError

WORKER = Path(__file__).resolve().parent / "runtime_crash_worker.py"


async def _crash(
    workdir: Path, scenario: str, run_id: str, kill: str, *, status: str = "running"
) -> JsonObject:
    """Run the worker until it SIGKILLs itself; return the checkpoint it left behind."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        str(workdir),
        scenario,
        run_id,
        kill,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == -signal.SIGKILL, (process.returncode, out, err)
    state = await FileCheckpointStore(workdir / "checkpoints").load(run_id)
    assert state is not None, "the worker died before its first checkpoint"
    assert state["status"] == status  # "running": a crash, not a clean terminal save
    return state


def _statuses(state: JsonObject) -> list[tuple[str, str]]:
    pending = cast(list[JsonObject], state["pendingTools"])
    return [(cast(JsonObject, p["call"])["id"], cast(str, p["status"])) for p in pending]  # type: ignore[misc]


def _counts(workdir: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in read_executions(workdir):
        call = line.split(":")[1]
        counts[call] = counts.get(call, 0) + 1
    return counts


class Resumer:
    """A fresh runtime (new provider, new store object) over the crashed worker's files."""

    def __init__(self, workdir: Path, scenario: str) -> None:
        self.sink = InMemoryEventSink()
        self.runtime, self.agent, self.provider, self.store = build_runtime(
            workdir, scenario, event_sinks=[self.sink]
        )

    async def resume(
        self, state: JsonObject, decisions: list[InterruptionDecision] | None = None
    ) -> RunResult[Any]:
        return await self.runtime.resume(state, decisions or []).result()

    def final_results(self) -> list[tuple[str, str]]:
        request = self.provider.requests[-1]
        return [
            (item.call_id, item.status)
            for item in request.input
            if isinstance(item, ToolResultItem)
        ]


async def _expect_reconciliation(
    resumer: Resumer, state: JsonObject, call_id: str, run_id: str
) -> RunResult[Any]:
    result = await resumer.resume(state)
    assert result.status == "interrupted"
    assert [(i.id, i.kind, i.call_id) for i in result.interruptions] == [
        (f"{run_id}:{call_id}:reconcile", "reconciliation", call_id)
    ]
    statuses = dict(_statuses(cast(JsonObject, result.state)))
    assert statuses[call_id] == "unknown"
    assert resumer.provider.requests == []  # the turn is not finished: no model call
    return result


@pytest.mark.parametrize(
    ("kill", "expected_counts"),
    [
        ("store:c1:prepared", {"c1": 1, "c2": 1, "c3": 1}),
        ("store:c1:started", {"c1": 1, "c2": 1, "c3": 1}),
        ("tool:c1", {"c1": 2, "c2": 1, "c3": 1}),  # a read may simply run again (D5)
        ("store:c2:committed", {"c1": 1, "c2": 1, "c3": 1}),
        ("store:c3:committed", {"c1": 1, "c2": 1, "c3": 1}),
    ],
)
async def test_crash_then_resume_without_decisions(
    tmp_path: Path, kill: str, expected_counts: dict[str, int]
) -> None:
    run_id = "crash-" + kill.replace(":", "-")
    state = await _crash(tmp_path, "effects", run_id, kill)
    before = _counts(tmp_path)
    resumer = Resumer(tmp_path, "effects")
    result = await resumer.resume(state)
    assert result.status == "completed"
    assert result.output == "done c1=success,c2=success,c3=success"
    assert _counts(tmp_path) == expected_counts
    committed = {call for call, status in _statuses(state) if status == "committed"}
    for call in committed:  # committed before the crash: never executed again
        assert _counts(tmp_path)[call] == before[call] == 1
    assert resumer.final_results() == [("c1", "success"), ("c2", "success"), ("c3", "success")]
    assert len(resumer.provider.requests) == 1  # the crashed turn was finished, then one call
    events = resumer.sink.events_for_run(run_id)
    assert events[0].type == "run.resumed"
    assert events[0].sequence == cast(int, state["lastEventSequence"]) + 1
    tombstone = await resumer.store.load(run_id)
    assert tombstone is not None and tombstone["status"] == "completed" and tombstone["deleted"]


async def test_crash_at_started_side_effect_is_reconciled_not_re_executed(tmp_path: Path) -> None:
    run_id = "crash-side-started"
    state = await _crash(tmp_path, "effects", run_id, "store:c3:started")
    assert _statuses(state) == [("c1", "committed"), ("c2", "committed"), ("c3", "started")]
    assert _counts(tmp_path) == {"c1": 1, "c2": 1}  # killed before the side effect ran
    resumer = Resumer(tmp_path, "effects")
    interrupted = await _expect_reconciliation(resumer, state, "c3", run_id)
    rid = f"{run_id}:c3:reconcile"
    with pytest.raises(ReconciliationDecisionError):  # a side effect is never retried
        resumer.runtime.resume(interrupted.state, [InterruptionDecision.retry(rid)])
    result = await resumer.resume(
        cast(JsonObject, interrupted.state), [InterruptionDecision.failed(rid, "never charged")]
    )
    assert result.status == "completed"
    assert _counts(tmp_path) == {"c1": 1, "c2": 1}  # c3 never ran, c1/c2 not re-run
    assert resumer.final_results() == [("c1", "success"), ("c2", "success"), ("c3", "error")]
    assert "tool.started" not in resumer.sink.types()


async def test_crash_inside_side_effect_keeps_its_effect_single(tmp_path: Path) -> None:
    run_id = "crash-side-inside"
    state = await _crash(tmp_path, "effects", run_id, "tool:c3")
    assert _statuses(state)[2] == ("c3", "started")
    assert _counts(tmp_path) == {"c1": 1, "c2": 1, "c3": 1}  # the charge happened
    resumer = Resumer(tmp_path, "effects")
    interrupted = await _expect_reconciliation(resumer, state, "c3", run_id)
    reconciled: JsonObject = {"charged": 5, "receipt": "r-1"}
    result = await resumer.resume(
        cast(JsonObject, interrupted.state),
        [InterruptionDecision.committed(f"{run_id}:c3:reconcile", reconciled)],
    )
    assert result.status == "completed"
    assert _counts(tmp_path) == {"c1": 1, "c2": 1, "c3": 1}  # never re-executed
    charge = next(
        item
        for item in resumer.provider.requests[-1].input
        if isinstance(item, ToolResultItem) and item.call_id == "c3"
    )
    assert charge.status == "success" and charge.output == reconciled
    audit = cast(list[JsonObject], cast(JsonObject, await resumer.store.load(run_id))["decisions"])
    assert [(d["callId"], d["outcome"]) for d in audit] == [("c3", "committed")]


@pytest.mark.parametrize("kill", ["store:c2:started", "tool:c2"])
async def test_crash_at_started_idempotent_write_may_be_retried(tmp_path: Path, kill: str) -> None:
    run_id = "crash-idem-" + kill.split(":")[0]
    state = await _crash(tmp_path, "effects", run_id, kill)
    ran_before = _counts(tmp_path).get("c2", 0)
    assert ran_before == (1 if kill.startswith("tool") else 0)
    resumer = Resumer(tmp_path, "effects")
    interrupted = await _expect_reconciliation(resumer, state, "c2", run_id)
    result = await resumer.resume(
        cast(JsonObject, interrupted.state),
        [InterruptionDecision.retry(f"{run_id}:c2:reconcile")],
    )
    assert result.status == "completed"
    assert _counts(tmp_path) == {"c1": 1, "c2": ran_before + 1, "c3": 1}
    keys = {line.split(":", 2)[2] for line in read_executions(tmp_path) if ":c2:" in line}
    assert keys == {f"{run_id}:c2"}  # the retry reuses the idempotency key
    assert resumer.final_results() == [("c1", "success"), ("c2", "success"), ("c3", "success")]


async def test_crash_at_awaiting_approval_resumes_with_the_decision(tmp_path: Path) -> None:
    run_id = "crash-approval"
    # the approval interruption is persisted with the terminal "interrupted" save
    process_state = await _crash(
        tmp_path, "approval", run_id, "store:c1:awaiting_approval", status="interrupted"
    )
    assert _statuses(process_state) == [("c1", "awaiting_approval"), ("c2", "prepared")]
    assert _counts(tmp_path) == {}  # nothing runs before the decision (Q1/Q2)
    resumer = Resumer(tmp_path, "approval")
    again = await resumer.resume(process_state)
    assert again.status == "interrupted" and again.interruptions[0].id == f"{run_id}:c1"
    assert _counts(tmp_path) == {}
    result = await resumer.resume(
        cast(JsonObject, again.state), [InterruptionDecision.approve(f"{run_id}:c1")]
    )
    assert result.status == "completed"
    assert _counts(tmp_path) == {"c1": 1, "c2": 1}
    assert resumer.final_results() == [("c1", "success"), ("c2", "success")]
