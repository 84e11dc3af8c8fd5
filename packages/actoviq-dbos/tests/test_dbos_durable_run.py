"""Durable runs in one process on a real DBOS (SQLite system database): model and tool calls are
recorded DBOS steps, a run id runs once, step retries only for read / idempotent tools, approvals
and reconciliations as durable waits, and the configuration errors."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
import pytest_asyncio
from dbos import DBOS
from dbos_harness import (
    agent,
    append,
    default_kind,
    deterministic_model,
    launched,
    lines,
    system_url,
)

from actoviq.core import ToolCallItem, ToolResultItem
from actoviq.dbos import (
    MODEL_STEP_NAME,
    PENDING_EVENT_KEY,
    TOOL_START_STEP_NAME,
    DbosConfigurationError,
    DbosRunNotFoundError,
    DbosRuntime,
    DurableDecisionError,
    StepRetry,
    approve,
    decide,
    pending,
    read_events,
    reject,
    retrieve_run,
)
from actoviq.providers import ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import tool

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def dbos_sqlite(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[None]:
    with launched(system_url(default_kind(), tmp_path_factory.mktemp("dbos"))):
        yield


@pytest.fixture
def files(tmp_path: Path) -> Path:
    return tmp_path


def _runtime(files: Path, *tools: Any, **options: Any) -> DbosRuntime:
    return DbosRuntime(
        name=f"rt-{uuid.uuid4().hex[:8]}",
        models=[deterministic_model(files / "model_calls", options.pop("tool_name", "charge"))],
        tools=list(tools),
        agents=[agent(tools[0].name)] if tools else [],
        **options,
    )


def _side_effect(files: Path, *, approval: bool = False) -> Any:
    @tool(effect="side-effect", requires_approval=approval)
    def charge(amount: int) -> str:
        """Charge the card."""
        append(files / "effects", str(amount))
        return f"receipt-{amount}"

    return charge


@pytest.fixture
async def durable(dbos_sqlite: None, files: Path) -> AsyncIterator[DbosRuntime]:
    runtime = _runtime(files, _side_effect(files))
    async with runtime:
        yield runtime


async def test_model_and_tool_calls_are_recorded_steps(durable: DbosRuntime, files: Path) -> None:
    run_id = f"run-{uuid.uuid4().hex}"
    result = await durable.run(agent(), "charge 7", run_id=run_id)
    assert result.status == "completed"
    assert result.output == 'done: "receipt-7"'
    assert result.run_id == run_id
    steps = await DBOS.list_workflow_steps_async(run_id)
    names = [step["function_name"] for step in steps]
    assert names == [MODEL_STEP_NAME, TOOL_START_STEP_NAME, "actoviq.tool:charge", MODEL_STEP_NAME]
    assert steps[2]["output"] == {"value": "receipt-7"}
    assert lines(files / "effects") == ["7"]
    assert len(lines(files / "model_calls")) == 2


async def test_a_run_id_runs_once(durable: DbosRuntime, files: Path) -> None:
    run_id = f"run-{uuid.uuid4().hex}"
    first = await durable.run(agent(), "charge 7", run_id=run_id)
    again = await durable.run(agent(), "charge 7", run_id=run_id)
    assert again.output == first.output
    assert again.items == first.items
    assert lines(files / "effects") == ["7"]
    assert len(lines(files / "model_calls")) == 2


async def test_read_tools_retry_on_dbos_side_effects_never(dbos_sqlite: None, files: Path) -> None:
    attempts: dict[str, int] = {"lookup": 0, "charge": 0}

    @tool(effect="read")
    def lookup(amount: int) -> str:
        """Flaky read."""
        attempts["lookup"] += 1
        if attempts["lookup"] < 3:
            raise ConnectionError("flaky")
        return "recovered"

    @tool(effect="side-effect")
    def charge(amount: int) -> str:
        """Failing side effect."""
        attempts["charge"] += 1
        raise ConnectionError("declined")

    retry = StepRetry(max_attempts=3, interval_seconds=0.0)
    async with _runtime(files, lookup, tool_retry=retry, tool_name="lookup") as runtime:
        result = await runtime.run(agent("lookup"), "look up")
    assert result.output == 'done: "recovered"'
    assert attempts["lookup"] == 3
    async with _runtime(files, charge, tool_retry=retry) as runtime:
        result = await runtime.run(agent(), "charge")
    assert attempts["charge"] == 1  # never retried
    assert "declined" in str(result.output)


async def test_approval_waits_durably_and_runs_the_tool_once(
    dbos_sqlite: None, files: Path
) -> None:
    async with _runtime(files, _side_effect(files, approval=True)) as runtime:
        run_id = f"run-{uuid.uuid4().hex}"
        started = await runtime.start(agent(), "charge 7", run_id=run_id)
        waiting = await pending(run_id, timeout_seconds=10)
        assert [entry.kind for entry in waiting] == ["approval"]
        assert waiting[0].call_id == "call-1"
        assert lines(files / "effects") == []
        answered = await approve(run_id, "call-1", timeout_seconds=10)
        assert answered.id == waiting[0].id
        await approve(run_id, "call-1")  # delivered twice: stored once
        result = await asyncio.wait_for(started.result(), 30)
        assert result.status == "completed"
        assert lines(files / "effects") == ["7"]
        await approve(run_id, "call-1")  # after the run: still harmless
        assert await started.status() == "SUCCESS"
        assert await pending(run_id) == ()


async def test_what_pending_lists_can_be_decided_without_waiting(
    dbos_sqlite: None, files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pending() is what a caller waits on before deciding (docs/scaling-out.md: pending, then
    # approve with no wait): every interruption it lists must already accept a decision. The run
    # is held right after it publishes its pending list, as a slow process would leave it.
    published = asyncio.Event()
    release = asyncio.Event()
    original = DBOS.set_event_async

    async def held(key: str, value: Any, **options: Any) -> None:
        await original(key, value, **options)
        if key == PENDING_EVENT_KEY and value["interruptions"]:
            published.set()
            await asyncio.wait_for(release.wait(), 30)

    monkeypatch.setattr(DBOS, "set_event_async", held)
    async with _runtime(files, _side_effect(files, approval=True)) as runtime:
        run_id = f"run-{uuid.uuid4().hex}"
        started = await runtime.start(agent(), "charge 7", run_id=run_id)
        try:
            await asyncio.wait_for(published.wait(), 30)
            waiting = await pending(run_id)
            assert [entry.call_id for entry in waiting] == ["call-1"]
            answered = await approve(run_id, "call-1")  # no wait: the run is already waiting
            assert answered.id == waiting[0].id
        finally:
            release.set()
        result = await asyncio.wait_for(started.result(), 30)
    assert result.status == "completed"
    assert lines(files / "effects") == ["7"]


async def test_rejection_denies_the_call(dbos_sqlite: None, files: Path) -> None:
    async with _runtime(files, _side_effect(files, approval=True)) as runtime:
        run_id = f"run-{uuid.uuid4().hex}"
        started = await runtime.start(agent(), "charge 7", run_id=run_id)
        await reject(run_id, "call-1", "not today", timeout_seconds=10)
        result = await asyncio.wait_for(started.result(), 30)
    assert result.status == "completed"
    assert "not today" in str(result.output)
    assert lines(files / "effects") == []


async def test_decisions_that_do_not_fit_are_refused(dbos_sqlite: None, files: Path) -> None:
    async with _runtime(files, _side_effect(files, approval=True)) as runtime:
        run_id = f"run-{uuid.uuid4().hex}"
        started = await runtime.start(agent(), "charge 7", run_id=run_id)
        with pytest.raises(DurableDecisionError) as caught:
            await decide(run_id, "call-1", "committed", output="x", timeout_seconds=10)
        assert caught.value.reason == "invalid"
        with pytest.raises(DurableDecisionError) as missing:
            await approve(run_id, "no-such-call")
        assert missing.value.reason == "not_waiting"
        assert missing.value.code == "DURABLE_DECISION_INVALID"
        await approve(run_id, "call-1")
        assert (await asyncio.wait_for(started.result(), 30)).status == "completed"


async def test_configuration_errors(dbos_sqlite: None, files: Path) -> None:
    with pytest.raises(DbosConfigurationError, match="checkpoints"):
        DbosRuntime(name="refused", models=[], checkpoints=object())
    async with DbosRuntime(name="taken", models=[]):
        with pytest.raises(DbosConfigurationError, match="already exists"):
            DbosRuntime(name="taken", models=[])
    async with DbosRuntime(name="taken", models=[]):  # the name is free again once closed
        pass


async def test_an_unknown_run_is_a_typed_error(dbos_sqlite: None) -> None:
    with pytest.raises(DbosRunNotFoundError) as caught:
        await retrieve_run("no-such-run")
    assert caught.value.code == "DBOS_RUN_NOT_FOUND"


async def test_run_events_stream_durably_in_order(dbos_sqlite: None, files: Path) -> None:
    async with _runtime(files, _side_effect(files), stream_events=True) as runtime:
        run_id = f"run-{uuid.uuid4().hex}"
        await runtime.run(agent(), "charge 7", run_id=run_id)
        events = [event async for event in read_events(run_id, timeout_seconds=10)]
        later = [event async for event in read_events(run_id, offset=3, timeout_seconds=10)]
    assert [event.sequence for event in events] == list(range(1, len(events) + 1))
    assert {event.run_id for event in events} == {run_id}
    types = [event.type for event in events]
    assert types[0] == "run.started"
    assert types[-1] == "run.completed"
    assert "tool.completed" in types
    assert later == events[3:]


async def test_a_call_id_the_model_reuses_in_a_later_turn_gets_its_own_decision(
    dbos_sqlite: None, files: Path
) -> None:
    def answer(request: ModelRequest) -> ScriptedTurn:
        results = [item for item in request.input if isinstance(item, ToolResultItem)]
        if len(results) < 2:  # the same call id twice, as some models number their calls
            call = ToolCallItem(id="call-1", name="charge", input={"amount": 7 + len(results)})
            return ScriptedTurn(tool_calls=[call])
        return ScriptedTurn(text=json.dumps([result.output for result in results]))

    runtime = DbosRuntime(
        name=f"rt-{uuid.uuid4().hex[:8]}",
        models=[ScriptedProvider([answer], repeat_last=True)],
        tools=[_side_effect(files, approval=True)],
        agents=[agent()],
    )
    async with runtime:
        run_id = f"run-{uuid.uuid4().hex}"
        started = await runtime.start(agent(), "charge twice", run_id=run_id)
        await approve(run_id, "call-1", timeout_seconds=10)
        await approve(run_id, "call-1", timeout_seconds=10)  # the first wait's again: stored once
        for _ in range(200):  # the second wait on the same call id is published
            waiting: Any = await DBOS.get_event_async(run_id, PENDING_EVENT_KEY, timeout_seconds=0)
            if isinstance(waiting, dict):
                published = cast(dict[str, Any], waiting)
                if published.get("wait") == 2 and published["interruptions"]:
                    break
            await asyncio.sleep(0.05)
        await approve(run_id, "call-1", timeout_seconds=10)
        result = await asyncio.wait_for(started.result(), 30)
    assert result.status == "completed"
    assert json.loads(result.output) == ["receipt-7", "receipt-8"]
    assert lines(files / "effects") == ["7", "8"]
