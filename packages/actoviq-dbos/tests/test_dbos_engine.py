"""The DBOS background engine beyond the kit: selection by configuration, a parent's cancel
cancels its children's DBOS workflows (enqueued and running), queue priorities."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from dbos import DBOS
from dbos_harness import default_kind, launched, system_url

from actoviq.core import AgentSpec, TextItem, ToolCallItem, ToolResultItem
from actoviq.dbos import DbosBackgroundEngine, DbosQueueSettings, dbos_engine
from actoviq.orchestration import (
    BackgroundChildManager,
    BackgroundConfig,
    ChildRunner,
    OrchestrationConfigError,
)
from actoviq.orchestration.background import registered_background_engines
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, InMemoryDurableChildStore, RuntimeServices, tool

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def dbos_sqlite(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[None]:
    with launched(system_url(default_kind(), tmp_path_factory.mktemp("engine"))):
        yield


class Gated:
    """A child agent whose ``hold`` tool waits on a gate, logging the order children start."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started: list[str] = []
        self.entered = asyncio.Event()

        @tool(effect="read")
        async def hold(label: str) -> str:
            """Wait for the gate."""
            self.started.append(label)
            self.entered.set()
            await self.gate.wait()
            return "released"

        def answer(request: ModelRequest) -> ScriptedTurn:
            if any(isinstance(item, ToolResultItem) for item in request.input):
                return ScriptedTurn(text="done")
            texts = [item.text for item in request.input if isinstance(item, TextItem)]
            label = texts[-1]
            return ScriptedTurn(
                tool_calls=[ToolCallItem(id="h", name="hold", input={"label": label})]
            )

        self.agent: AgentSpec[Any, Any] = AgentSpec(
            id="gated", name="Gated", instructions="Hold.", model="scripted:m", tools=["hold"]
        )
        self.runtime = AgentRuntime(
            models=ModelRegistry([ScriptedProvider([answer], repeat_last=True)]),
            tools=[hold],
            services=RuntimeServices(),
        )


async def test_the_engine_is_chosen_by_configuration(dbos_sqlite: None) -> None:
    assert "dbos" in registered_background_engines()
    gated = Gated()
    manager = BackgroundChildManager(
        ChildRunner(gated.runtime), InMemoryDurableChildStore(), engine="dbos"
    )
    try:
        assert isinstance(manager.engine, DbosBackgroundEngine)
    finally:
        await manager.aclose()
        await gated.runtime.close()


async def test_the_dbos_factory_takes_the_config_and_its_options(dbos_sqlite: None) -> None:
    gated = Gated()
    runner = ChildRunner(gated.runtime)
    store = InMemoryDurableChildStore()
    options = {"queue": {"name": "factory-q", "concurrency": 2}, "priority": 3}
    config = BackgroundConfig(
        engine="dbos", store=store, owner_id="w-7", lease_ms=4321, options=options
    )
    engine = dbos_engine(runner, config)
    try:
        assert (engine.owner_id, engine.lease_ms, engine.store) == ("w-7", 4321, store)
        assert engine.queue == DbosQueueSettings(name="factory-q", concurrency=2)
        assert (engine.priority, engine.timeout_seconds) == (3, None)
        named = dbos_engine(runner, BackgroundConfig(store=store, options={"queue": "by-name"}))
        assert named.queue.name == "by-name"
        await named.aclose()
        with pytest.raises(OrchestrationConfigError, match='"dbos" background engine needs'):
            dbos_engine(runner, BackgroundConfig(engine="dbos"))
    finally:
        await engine.aclose()
        await gated.runtime.close()


async def test_parent_cancel_cancels_the_children_workflows(dbos_sqlite: None) -> None:
    gated = Gated()
    runner = ChildRunner(gated.runtime)
    queue = DbosQueueSettings(name="one-at-a-time", concurrency=1, polling_interval_sec=0.01)
    manager = BackgroundChildManager(
        runner, InMemoryDurableChildStore(), engine="dbos", options={"queue": queue}
    )
    try:
        parent = runner.tree.derive_child(runner.create_root(), "parent-run")
        running = await manager.spawn(parent, gated.agent, "first", effect="read")
        waiting = await manager.spawn(parent, gated.agent, "second", effect="read")
        await asyncio.wait_for(gated.entered.wait(), 30)
        before = await DBOS.list_workflows_async(workflow_id_prefix="actoviq-child:")
        statuses = {w.workflow_id.split(":")[1]: w.status for w in before}
        assert statuses[waiting.child_id] == "ENQUEUED"  # concurrency 1: it waits its turn
        assert statuses[running.child_id] == "PENDING"
        runner.tree.cancel_tree(parent.run_id)
        assert (await asyncio.wait_for(running.wait(), 30)).status == "cancelled"
        assert (await asyncio.wait_for(waiting.wait(), 30)).status == "cancelled"
        await manager.engine.join()  # the cancels (record, then workflows) have finished
        after = await DBOS.list_workflows_async(workflow_id_prefix="actoviq-child:")
        mine = [w for w in after if w.workflow_id.split(":")[1] == waiting.child_id]
        # Cancelled while enqueued, or (the slot freed first) dequeued and ended at once on the
        # cancelled record: never left waiting or running, and the child never ran.
        assert len(mine) == 1
        assert mine[0].status in ("CANCELLED", "SUCCESS")
        assert gated.started == ["first"]  # the enqueued child never ran
    finally:
        gated.gate.set()
        await manager.aclose()
        await gated.runtime.close()


async def test_queue_priorities_order_waiting_children(dbos_sqlite: None) -> None:
    gated = Gated()
    runner = ChildRunner(gated.runtime)
    store = InMemoryDurableChildStore()
    queue = DbosQueueSettings(name="prioritised", concurrency=1, polling_interval_sec=0.01)
    batch = BackgroundChildManager(
        runner, store, engine="dbos", options={"queue": queue, "priority": 10}
    )
    urgent = BackgroundChildManager(
        runner, store, engine="dbos", options={"queue": queue, "priority": 1}
    )
    try:
        root = runner.create_root()
        first = await batch.spawn(root, gated.agent, "holder", effect="read")
        await asyncio.wait_for(gated.entered.wait(), 30)  # the one slot is taken
        late = [await batch.spawn(root, gated.agent, f"batch-{n}", effect="read") for n in (1, 2)]
        rush = await urgent.spawn(root, gated.agent, "urgent", effect="read")
        gated.gate.set()
        for handle in (first, *late, rush):
            assert (await asyncio.wait_for(handle.wait(), 30)).status == "completed"
        assert gated.started == ["holder", "urgent", "batch-1", "batch-2"]
    finally:
        gated.gate.set()
        await batch.aclose()
        await urgent.aclose()
        await gated.runtime.close()
