"""A takeover the runtime refuses because the dead worker's run claim still holds (spec 04 §7.3):
the attempt never ran, so it is not counted, and the record names the holder until it expires."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from background_harness import REFERENCE_RECORD
from orchestration_testkit import agent, call, runtime_for, script

from actoviq.core import JsonObject
from actoviq.orchestration import (
    BackgroundChildManager,
    ChildRunner,
    DurableChildLeasedError,
)
from actoviq.runtime import (
    InMemoryCheckpointStore,
    InMemoryDurableChildStore,
    RuntimeTool,
    ToolBehavior,
    ToolDescriptor,
    ToolExecutionContext,
    json_schema_input,
)


async def test_a_takeover_refused_by_a_live_run_claim_is_not_an_attempt() -> None:
    checkpoints, store = InMemoryCheckpointStore(), InMemoryDurableChildStore()
    child_id = f"held-{uuid.uuid4().hex}"
    record: JsonObject = {**REFERENCE_RECORD, "childId": child_id}
    await store.create(tenant_id="default", record=record)
    crashed: JsonObject = {
        **record,
        "revision": 1,
        "status": "running",
        "attempts": 1,
        "leaseOwner": "crashed-worker",
        "leaseExpiresAt": 0,  # the child's lease is over ...
    }
    assert await store.compare_and_set(
        tenant_id="default", child_id=child_id, expected_revision=0, record=crashed
    )
    entered, release = asyncio.Event(), asyncio.Event()

    async def fetch(ctx: ToolExecutionContext, value: Any) -> JsonObject:
        entered.set()
        await release.wait()
        return {"fetched": True}

    tool = RuntimeTool(
        descriptor=ToolDescriptor(
            name="fetch",
            input=json_schema_input({"type": "object"}),
            behavior=ToolBehavior(effect="read"),
        ),
        execute=fetch,
    )
    worker = agent("worker", tools=("fetch",))
    holder = runtime_for(
        script("worker", [call("fetch"), "worker:first"]),
        tools=[tool],
        checkpoints=checkpoints,
    )
    async with holder:
        holder.register_agent(worker)
        # ... but the crashed worker's runtime still holds the run itself (a longer claim).
        first = asyncio.create_task(holder.run(worker, "fetch it", run_id=child_id))
        await entered.wait()
        taker = runtime_for(
            script("worker", ["worker:again"]),
            tools=[tool],
            checkpoints=checkpoints,
        )
        async with taker, BackgroundChildManager(ChildRunner(taker), store) as manager:
            taker.register_agent(worker)
            await manager.resume(child_id)
            with pytest.raises(DurableChildLeasedError) as refused:
                await manager.result(child_id)
            held = await manager.query(child_id)
        release.set()
        assert (await first).output == "worker:first"
    assert refused.value.code == "DURABLE_CHILD_LEASED"
    assert (held.status, held.attempts) == ("running", 1)  # the refused takeover ran nothing
    assert held.lease_owner is not None
    assert held.lease_owner != manager.engine.owner_id  # it names the run's holder
    assert held.lease_expires_at is not None
