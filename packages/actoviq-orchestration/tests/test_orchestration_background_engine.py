"""The store engine's own rules (spec 04 §7.3 rows 32-45): exact revisions, stale records written
by a crashed process, idempotent-write takeover, the record's JSON, engine selection, events."""

from __future__ import annotations

import uuid
from typing import Any, cast

import pytest
from background_harness import REFERENCE_RECORD
from orchestration_testkit import agent, runtime_for, script

from actoviq.core import (
    MAX_JSON_DEPTH,
    JsonObject,
    JsonValue,
    RunResult,
    TextItem,
    ToolResultItem,
    Usage,
)
from actoviq.events import InMemoryEventSink
from actoviq.orchestration import (
    BackgroundChildManager,
    BackgroundConfig,
    ChildRunner,
    DurableChildReconciliationError,
    DurableChildRecord,
    OrchestrationConfigError,
    StoreBackgroundEngine,
    register_background_engine,
)
from actoviq.orchestration.background import (
    UnknownBackgroundEngineError,
    registered_background_engines,
)
from actoviq.orchestration.background.records import stored_result_json
from actoviq.runtime import InMemoryDurableChildStore


async def test_a_reference_record_is_read_run_and_keeps_its_keys() -> None:
    store = InMemoryDurableChildStore()
    await store.create(tenant_id="default", record=REFERENCE_RECORD)
    worker = agent("worker")
    async with runtime_for(script("worker", ["worker:resumed"])) as runtime:
        runtime.register_agent(worker)
        async with BackgroundChildManager(ChildRunner(runtime), store) as manager:
            queued = await manager.query("ref-child")
            assert queued.to_json() == REFERENCE_RECORD  # read, written back byte-identical
            await manager.resume("ref-child")
            result = await manager.result("ref-child")
            record = await manager.query("ref-child")
    assert (result.run_id, result.output) == ("ref-child", "worker:resumed")
    assert (record.status, record.revision, record.attempts) == ("completed", 2, 1)
    stored = record.to_json()
    assert stored["metadata"] == {"origin": "ts"}
    assert DurableChildRecord.from_json(stored).to_json() == stored
    assert stored["result"]["output"] == "worker:resumed"  # type: ignore[index]


def _stale(record: JsonObject, **changes: Any) -> JsonObject:
    return {
        **record,
        "revision": 1,
        "status": "running",
        "attempts": 1,
        "leaseOwner": "crashed-process",
        "leaseExpiresAt": 0,
        **changes,
    }


@pytest.mark.parametrize(
    ("effect", "key", "replayed"),
    [
        ("read", None, True),
        ("idempotent-write", "write-42", True),
        ("idempotent-write", None, False),
        ("idempotent-write", " ", False),
        ("side-effect", "k", False),
    ],
)
async def test_a_stale_record_of_a_crashed_process(
    effect: str, key: str | None, replayed: bool
) -> None:
    store = InMemoryDurableChildStore()
    child_id = f"stale-{uuid.uuid4().hex}"
    record = {**REFERENCE_RECORD, "childId": child_id, "effect": effect}
    if key is not None:
        record["idempotencyKey"] = key
    await store.create(tenant_id="default", record=record)
    assert await store.compare_and_set(
        tenant_id="default", child_id=child_id, expected_revision=0, record=_stale(record)
    )
    async with runtime_for(script("worker", ["worker:again"])) as runtime:
        runtime.register_agent(agent("worker"))
        async with BackgroundChildManager(ChildRunner(runtime), store) as manager:
            await manager.resume(child_id)
            if replayed:
                assert (await manager.result(child_id)).output == "worker:again"
                assert (await manager.query(child_id)).attempts == 2
            else:
                with pytest.raises(DurableChildReconciliationError, match="may have committed"):
                    await manager.result(child_id)
                assert (await manager.query(child_id)).status == "needs_reconciliation"


async def test_engine_selection_by_configuration() -> None:
    store = InMemoryDurableChildStore()
    async with runtime_for() as runtime:
        runner = ChildRunner(runtime)
        assert "store" in registered_background_engines()
        # (not "dbos": actoviq-dbos registers that engine when it is installed)
        with pytest.raises(UnknownBackgroundEngineError, match='named "no-such-engine"'):
            BackgroundChildManager(runner, store, engine="no-such-engine")
        with pytest.raises(OrchestrationConfigError, match="needs a durable child store"):
            BackgroundChildManager(runner)
        with pytest.raises(OrchestrationConfigError, match="leaseMs"):
            BackgroundChildManager(runner, store, lease_ms=0)
        built: list[BackgroundConfig] = []

        def factory(r: ChildRunner, config: BackgroundConfig) -> StoreBackgroundEngine:
            built.append(config)
            return StoreBackgroundEngine(r, config.options["inner"], owner_id="custom")

        with pytest.raises(OrchestrationConfigError, match="non-empty") as blank:
            register_background_engine(" ", factory)
        assert blank.value.code == "ORCHESTRATION_CONFIG_INVALID"
        with pytest.raises(OrchestrationConfigError, match="callable"):
            register_background_engine("not-callable", cast(Any, "factory"))
        assert "not-callable" not in registered_background_engines()
        register_background_engine("custom-test", factory)
        manager = BackgroundChildManager.from_config(
            runner, BackgroundConfig(engine="custom-test", options={"inner": store}, lease_ms=5)
        )
        assert manager.owner_id == "custom"
        assert built[0].lease_ms == 5
        assert "custom-test" in registered_background_engines()
        by_name = BackgroundChildManager(runner, engine="custom-test", options={"inner": store})
        assert isinstance(by_name.engine, StoreBackgroundEngine)
        await manager.aclose()
        await by_name.aclose()


async def test_an_engine_is_built_from_every_field_of_its_config() -> None:
    store = InMemoryDurableChildStore()

    def clock() -> int:
        return 42

    async with runtime_for() as runtime:
        runner = ChildRunner(runtime)
        config = BackgroundConfig(
            store=store, tenant_id="t-9", lease_ms=1234, owner_id="w-9", clock=clock, capacity=3
        )
        engine = StoreBackgroundEngine.from_config(runner, config)
        try:
            assert (engine.owner_id, engine.lease_ms, engine.store) == ("w-9", 1234, store)
            assert await engine.now_ms() == 42
            # The tenant reaches the records: another tenant's view of the store is empty.
            await store.create(tenant_id="t-9", record={**REFERENCE_RECORD, "childId": "c-9"})
            assert [r.child_id for r in await engine.list_children()] == ["c-9"]
            other = StoreBackgroundEngine.from_config(runner, BackgroundConfig(store=store))
            assert await other.list_children() == []
            await other.aclose()
        finally:
            await engine.aclose()
        with pytest.raises(OrchestrationConfigError, match="needs a durable child store") as no:
            StoreBackgroundEngine.from_config(runner, BackgroundConfig())
        assert no.value.details == {"field": "store"}
        with pytest.raises(OrchestrationConfigError, match="leaseMs"):
            StoreBackgroundEngine.from_config(runner, BackgroundConfig(store=store, lease_ms=0))


async def test_background_events_land_in_the_parents_trace() -> None:
    sink = InMemoryEventSink()
    async with runtime_for(script("worker", ["done"]), event_sinks=[sink]) as runtime:
        runner = ChildRunner(runtime)
        store = InMemoryDurableChildStore()
        async with (
            BackgroundChildManager(runner, store) as manager,
            runner.open_root("desk", run_id="desk") as desk,
        ):
            spawned = await manager.spawn(desk, agent("worker"), "go", effect="read")
            await spawned.result()
            later = await manager.spawn(desk, agent("worker"), "go", auto_start=False)
            await later.cancel("no longer needed")
    desk_events = [e for e in sink.events if e.run_id == "desk"]
    types = [e.type for e in desk_events]
    assert types.count("orchestration.background.spawned") == 2
    assert "orchestration.child.started" in types
    assert "orchestration.background.cancelled" in types
    trace_ids = {e.trace_id for e in sink.events}
    assert len(trace_ids) == 1  # the child's run is in the desk's trace
    cancelled = next(e for e in desk_events if e.type == "orchestration.background.cancelled")
    assert cancelled.data == {
        "childId": later.child_id,
        "parentRunId": "desk",
        "previousStatus": "queued",
        "reason": "no longer needed",
    }


def test_a_record_carrying_the_deepest_items_reads_back() -> None:
    # The result holds items whose values may nest MAX_JSON_DEPTH deep: the record is read with
    # the wire depth (D2), as the stores write it; it was refused at 512 levels before.
    deep: JsonValue = 0
    for _ in range(MAX_JSON_DEPTH):
        deep = [deep]
    items = (
        TextItem(role="user", text="hi"),
        ToolResultItem(call_id="c0", status="success", output=deep, name="t"),
    )
    result = RunResult(
        run_id="deep",
        agent_id="a",
        status="completed",
        output="done",
        items=items,
        usage=Usage(),
        started_at="2026-01-01T00:00:00.000Z",
        completed_at="2026-01-01T00:00:00.000Z",
    )
    record = DurableChildRecord(
        child_id="deep",
        revision=1,
        parent={"runId": "p", "depth": 0, "metadata": {}},
        agent_id="a",
        input=items,
        status="completed",
        attempts=1,
        created_at="2026-01-01T00:00:00.000Z",
        updated_at="2026-01-01T00:00:00.000Z",
        result=stored_result_json(result),
    )
    again = DurableChildRecord.from_json(record.to_json())
    assert again.to_json() == record.to_json()
    assert again.input == items
