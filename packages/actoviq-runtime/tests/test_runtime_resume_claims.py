"""Resume is exactly-once (issue 11 §1, decision D10): a state runs once, whatever the retries.

Every test counts real side effects (an approval-gated ``charge`` tool appends to a list) and
checks that a refused resume ran nothing and emitted nothing. Cross-process races on SQLite and
PostgreSQL and the SIGKILL recovery live in actoviq-storage-sqlite's tests.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from runtime_testkit import RecordingCheckpointStore, json_tool, make_agent, scripted_runtime

from actoviq.core import JsonObject, RunResult, ToolCallItem, ToolResultItem
from actoviq.events import InMemoryEventSink
from actoviq.providers import ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InMemoryCheckpointStore,
    InterruptionDecision,
    RunClaimLostError,
    RunStateStaleError,
    StoreRunCheckpointAdapter,
    ToolExecutionContext,
)

CHARGE = ToolCallItem(id="c1", name="charge", input={"amount": 5})
CHARGE_AGAIN = ToolCallItem(id="c2", name="charge", input={"amount": 7})


def _answer(request: ModelRequest) -> ScriptedTurn:
    """First turn: charge; after one result, charge again if asked to; then text."""
    results = [item for item in request.input if isinstance(item, ToolResultItem)]
    wants_two = any(
        getattr(item, "text", "") == "charge twice" for item in request.input if item.type == "text"
    )
    if not results:
        return ScriptedTurn(tool_calls=[CHARGE])
    if wants_two and len(results) == 1:
        return ScriptedTurn(tool_calls=[CHARGE_AGAIN])
    return ScriptedTurn(text=f"charged {len(results)}")


class Bank:
    """The side effect being counted, plus a gate to hold a charge mid-flight."""

    def __init__(self) -> None:
        self.charges: list[str] = []
        self.entered = asyncio.Event()
        self.release: asyncio.Event | None = None

    async def charge(self, ctx: ToolExecutionContext, value: Any) -> JsonObject:
        self.charges.append(ctx.call_id)
        self.entered.set()
        if self.release is not None:
            await self.release.wait()
        return {"charged": value["amount"]}


def _runtime(bank: Bank, **options: Any) -> tuple[AgentRuntime, InMemoryEventSink]:
    sink = InMemoryEventSink()
    tool = json_tool("charge", bank.charge, effect="side-effect", requires_approval=True)
    agent = make_agent(id="payer", tools=("charge",))
    runtime = scripted_runtime(
        ScriptedProvider([_answer], repeat_last=True),
        tools=[tool],
        agents=[agent],
        event_sinks=[sink],
        **options,
    )
    return runtime, sink


async def _interrupted(runtime: AgentRuntime, run_id: str, text: str = "pay") -> JsonObject:
    agent = runtime.get_agent("payer")
    assert agent is not None
    result = await runtime.run(agent, text, run_id=run_id)
    assert result.status == "interrupted"
    return cast(JsonObject, result.state)


def _approve(state: JsonObject) -> list[InterruptionDecision]:
    pending = cast(list[JsonObject], state["pendingTools"])
    return [
        InterruptionDecision.approve(cast(str, p["interruptionId"]))
        for p in pending
        if p.get("interruptionId")
    ]


async def test_double_resume_in_one_process_without_a_store_runs_once() -> None:
    bank = Bank()
    runtime, _ = _runtime(bank)
    state = await _interrupted(runtime, "r1")
    first = await runtime.resume(state, _approve(state)).result()
    assert first.status == "completed" and bank.charges == ["c1"]
    with pytest.raises(RunStateStaleError) as caught:
        runtime.resume(state, _approve(state))
    assert caught.value.code == "RUN_STATE_STALE"
    assert caught.value.stored_status == "completed" and caught.value.reason == "completed"
    assert bank.charges == ["c1"]


async def test_concurrent_resume_in_one_process_is_refused() -> None:
    bank = Bank()
    runtime, _ = _runtime(bank)
    state = await _interrupted(runtime, "r2")
    handle = runtime.resume(state, _approve(state))
    with pytest.raises(RunStateStaleError) as caught:
        runtime.resume(state, _approve(state))
    assert caught.value.reason == "claimed" and caught.value.stored_status == "running"
    assert (await handle.result()).status == "completed"
    with pytest.raises(RunStateStaleError):
        runtime.resume(state, _approve(state))
    assert bank.charges == ["c1"]


async def test_completed_state_is_never_resumed() -> None:
    bank = Bank()
    runtime, _ = _runtime(bank)
    state = await _interrupted(runtime, "r3")
    handle = runtime.resume(state, _approve(state))
    await handle.result()
    done = await handle.snapshot()
    assert done["status"] == "completed"
    other, _ = _runtime(bank)  # even a runtime that never saw the run refuses it
    with pytest.raises(RunStateStaleError) as caught:
        other.resume(done)
    assert caught.value.stored_status == "completed"


async def test_older_state_after_a_newer_interruption_is_refused() -> None:
    bank = Bank()
    runtime, _ = _runtime(bank)
    first = await _interrupted(runtime, "r4", "charge twice")
    second = await runtime.resume(first, _approve(first)).result()
    assert second.status == "interrupted" and bank.charges == ["c1"]
    newer = cast(JsonObject, second.state)
    with pytest.raises(RunStateStaleError) as caught:
        runtime.resume(first, _approve(first))
    assert (caught.value.reason, caught.value.stored_status) == ("superseded", "interrupted")
    final = await runtime.resume(newer, _approve(newer)).result()
    assert final.output == "charged 2" and bank.charges == ["c1", "c2"]


# -- a claiming store shared by two runtimes (two workers of one host) --------------------------


def _shared(store: InMemoryCheckpointStore, bank: Bank, clock: Any = None, **options: Any) -> Any:
    adapter = StoreRunCheckpointAdapter(store, clock=clock)
    return _runtime(bank, checkpoint_store=adapter, **options)


async def test_two_runtimes_racing_on_one_store_run_the_side_effect_once() -> None:
    store, bank = InMemoryCheckpointStore(), Bank()
    (one, one_sink), (two, two_sink) = _shared(store, bank), _shared(store, bank)
    state = await _interrupted(one, "race")
    sinks = [one_sink, two_sink]
    before = [len(sink.events) for sink in sinks]
    handles = [one.resume(state, _approve(state)), two.resume(state, _approve(state))]
    outcomes = await asyncio.gather(*(h.result() for h in handles), return_exceptions=True)
    won = [i for i, o in enumerate(outcomes) if isinstance(o, RunResult)]
    lost = [i for i, o in enumerate(outcomes) if isinstance(o, RunStateStaleError)]
    assert len(won) == 1 and len(lost) == 1, outcomes
    assert cast(RunResult[Any], outcomes[won[0]]).status == "completed"
    assert cast(RunStateStaleError, outcomes[lost[0]]).reason == "claimed"
    assert bank.charges == ["c1"]
    # The refused attempt emitted nothing; the winner resumed and completed.
    assert len(sinks[lost[0]].events) == before[lost[0]]
    new_events = sinks[won[0]].events[before[won[0]] :]
    assert new_events[0].type == "run.resumed" and new_events[-1].type == "run.completed"


async def test_resume_after_completion_is_refused_by_the_store() -> None:
    store, bank = InMemoryCheckpointStore(), Bank()
    one, _ = _shared(store, bank)
    state = await _interrupted(one, "done")
    await one.resume(state, _approve(state)).result()
    fresh, sink = _shared(store, bank)  # a new process: its ledger knows nothing
    handle = fresh.resume(state, _approve(state))
    with pytest.raises(RunStateStaleError) as caught:
        await handle.result()
    assert (caught.value.reason, caught.value.stored_status) == ("completed", "completed")
    assert [event async for event in handle] == [] and len(sink.events) == 0
    assert bank.charges == ["c1"]
    stored = await StoreRunCheckpointAdapter(store).load("done")
    assert stored is not None and stored["status"] == "completed"


async def test_store_refuses_an_older_state_in_a_new_runtime() -> None:
    store, bank = InMemoryCheckpointStore(), Bank()
    one, _ = _shared(store, bank)
    first = await _interrupted(one, "old", "charge twice")
    await one.resume(first, _approve(first)).result()
    other, _ = _shared(store, bank)
    with pytest.raises(RunStateStaleError) as caught:
        await other.resume(first, _approve(first)).result()
    assert (caught.value.reason, caught.value.stored_status) == ("superseded", "interrupted")
    assert bank.charges == ["c1"]


async def test_a_store_without_claims_still_refuses_completed_and_older_states() -> None:
    store, bank = RecordingCheckpointStore(), Bank()
    one, _ = _runtime(bank, checkpoint_store=store)
    state = await _interrupted(one, "legacy")
    await one.resume(state, _approve(state)).result()
    other, _ = _runtime(bank, checkpoint_store=store)
    with pytest.raises(RunStateStaleError) as caught:
        await other.resume(state, _approve(state)).result()
    assert caught.value.stored_status == "completed"
    assert bank.charges == ["c1"]


async def test_a_live_claim_refuses_a_second_worker_then_expires() -> None:
    store, bank = InMemoryCheckpointStore(), Bank()
    bank.release = asyncio.Event()
    one, _ = _shared(store, bank, checkpoint_lease_ms=60_000)
    state = await _interrupted(one, "held")
    handle = one.resume(state, _approve(state))
    await bank.entered.wait()  # the charge is running: the run is held
    record = await store.get(tenant_id="default", checkpoint_id="held")
    assert record is not None and record.lease_owner is not None
    assert record.lease_expires_at is not None
    running = await StoreRunCheckpointAdapter(store).load("held")
    assert running is not None
    two, two_sink = _shared(store, bank)
    with pytest.raises(RunStateStaleError) as caught:
        await two.resume(running).result()
    assert caught.value.reason == "claimed" and caught.value.retryable
    assert caught.value.details is not None
    assert caught.value.details["leaseExpiresAt"] == record.lease_expires_at
    assert len(two_sink.events) == 0
    # Once the lease has expired (a clock past it), a crashed holder's run is taken over; the
    # holder, still alive here, is fenced: its next save fails and it stops without writing.
    expired = record.lease_expires_at + 1
    three, _ = _shared(store, bank, clock=lambda: float(expired))
    taken = await three.resume(running).result()
    assert taken.status == "interrupted"  # the started charge needs a reconciliation decision
    assert [i.kind for i in taken.interruptions] == ["reconciliation"]
    bank.release.set()
    with pytest.raises(RunClaimLostError) as lost:
        await handle.result()
    assert lost.value.code == "RUN_CLAIM_LOST"
    assert bank.charges == ["c1"]
    stored = await StoreRunCheckpointAdapter(store).load("held")
    assert stored == taken.state  # the fenced holder wrote nothing after the takeover


async def test_heartbeat_renews_the_lease_while_a_tool_runs() -> None:
    store, bank = InMemoryCheckpointStore(), Bank()
    bank.release = asyncio.Event()
    adapter = StoreRunCheckpointAdapter(store)
    renewed = asyncio.Event()
    real_renew = adapter.renew

    async def renew(run_id: str, *, lease: Any) -> None:
        await real_renew(run_id, lease=lease)
        renewed.set()

    adapter.renew = renew
    one, _ = _runtime(bank, checkpoint_store=adapter, checkpoint_lease_ms=150)
    state = await _interrupted(one, "beat")
    handle = one.resume(state, _approve(state))
    await bank.entered.wait()
    first = await store.get(tenant_id="default", checkpoint_id="beat")
    assert first is not None and first.lease_expires_at is not None
    renewed.clear()
    async with asyncio.timeout(10):
        await renewed.wait()
    later = await store.get(tenant_id="default", checkpoint_id="beat")
    assert later is not None and later.lease_owner == first.lease_owner
    assert later.revision > first.revision
    assert cast(int, later.lease_expires_at) > first.lease_expires_at
    # A worker whose clock is past the first expiry still sees the renewed lease.
    stale_clock = float(first.lease_expires_at + 1)
    two, _ = _shared(store, bank, clock=lambda: stale_clock)
    held = await StoreRunCheckpointAdapter(store).load("beat")
    assert held is not None
    with pytest.raises(RunStateStaleError):
        await two.resume(held).result()
    bank.release.set()
    assert (await handle.result()).status == "completed"
    final = await store.get(tenant_id="default", checkpoint_id="beat")
    assert final is not None and final.status == "completed" and final.lease_owner is None
    assert bank.charges == ["c1"]


async def test_fresh_run_cannot_take_a_run_id_held_elsewhere() -> None:
    store, bank = InMemoryCheckpointStore(), Bank()
    bank.release = asyncio.Event()
    one, _ = _shared(store, bank)
    state = await _interrupted(one, "dup")
    handle = one.resume(state, _approve(state))
    await bank.entered.wait()
    two, _ = _shared(store, bank)
    agent = two.get_agent("payer")
    assert agent is not None
    with pytest.raises(RunStateStaleError) as caught:
        await two.run(agent, "pay", run_id="dup")
    assert caught.value.reason == "claimed"
    bank.release.set()
    assert (await handle.result()).status == "completed"
    assert bank.charges == ["c1"]


async def test_state_revision_counts_saves_and_survives_the_round_trip() -> None:
    bank = Bank()
    store = RecordingCheckpointStore()
    runtime, _ = _runtime(bank, checkpoint_store=store)
    state = await _interrupted(runtime, "rev")
    revisions = [cast(int, s["stateRevision"]) for s in store.saves]
    assert revisions == list(range(1, len(revisions) + 1))
    assert state["stateRevision"] == revisions[-1]
    await runtime.resume(state, _approve(state)).result()
    resumed = [cast(int, s["stateRevision"]) for s in store.saves[len(revisions) :]]
    assert resumed[0] == revisions[-1] + 1 and resumed == sorted(set(resumed))
