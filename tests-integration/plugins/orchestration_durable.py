"""Release gate: every canonical item survives the durable orchestration records.

A durable background child persists its input items and, once completed, its result's items (the
reference ``StoredRunResult``); a durable graph run persists each node's output (an agent node's
items included). Each check writes the record to a real store (in memory, and a SQLite file read
back after reopening), reads it back through the record classes, requires the record's JSON to
round-trip exactly through strict JSON text, and returns the items it carried.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from harness import register_persistence

from actoviq.core import (
    CanonicalItem,
    JsonObject,
    JsonValue,
    RunResult,
    Usage,
    items_from_json,
    items_to_json,
)
from actoviq.orchestration.background import DurableChildRecord
from actoviq.orchestration.background.records import stored_result_json
from actoviq.orchestration.graph_runs import WorkflowNodeRecord, WorkflowRunRecord
from actoviq.runtime import DurableChildStore, InMemoryDurableChildStore, WorkflowRunStore
from actoviq.storage.sqlite import SqliteStorage

T = "2026-01-01T00:00:00.000Z"
PARENT: JsonObject = {"runId": "gate-parent", "depth": 0, "metadata": {}}


def _exact(record: JsonObject, reread: JsonObject) -> None:
    text = json.dumps(record, allow_nan=False)
    if json.loads(text) != reread:
        raise AssertionError("the persisted record did not round-trip exactly")


def _child(items: Sequence[CanonicalItem]) -> DurableChildRecord:
    result = RunResult(
        run_id="gate-child",
        agent_id="gate-agent",
        status="completed",
        output="done",
        items=tuple(items),
        usage=Usage(total_tokens=3),
        started_at=T,
        completed_at=T,
    )
    return DurableChildRecord(
        child_id="gate-child",
        revision=0,
        parent=PARENT,
        agent_id="gate-agent",
        input=tuple(items),
        status="completed",
        attempts=1,
        created_at=T,
        updated_at=T,
        result=stored_result_json(result),
    )


async def _child_roundtrip(store: DurableChildStore, items: Sequence[CanonicalItem]) -> Any:
    record = _child(items).to_json()
    await store.create(tenant_id="gate", record=record)
    return record


async def _read_child(store: DurableChildStore, written: JsonObject) -> Sequence[CanonicalItem]:
    row = await store.get(tenant_id="gate", child_id="gate-child")
    assert row is not None
    reread = DurableChildRecord.from_json(row.record)
    _exact(written, reread.to_json())
    result = reread.run_result()
    assert result is not None
    if list(result.items) != list(reread.input):
        raise AssertionError("the stored result's items differ from the input items")
    return reread.input


async def _memory_children(items: Sequence[CanonicalItem]) -> Sequence[CanonicalItem]:
    store = InMemoryDurableChildStore()
    return await _read_child(store, await _child_roundtrip(store, items))


async def _sqlite_children(items: Sequence[CanonicalItem]) -> Sequence[CanonicalItem]:
    with tempfile.TemporaryDirectory() as folder:
        async with await SqliteStorage.open(Path(folder) / "gate.db") as storage:
            written = await _child_roundtrip(storage.children, items)
        async with await SqliteStorage.open(Path(folder) / "gate.db") as storage:
            return await _read_child(storage.children, written)


async def _write_run(store: WorkflowRunStore, items: Sequence[CanonicalItem]) -> JsonObject:
    run = WorkflowRunRecord(
        run_id="gate-run", graph_id="g", graph_digest="sha256:x", created_at=T, updated_at=T
    )
    await store.create_run(tenant_id="gate", record=run.to_json())
    node = WorkflowNodeRecord(
        run_id="gate-run",
        node_id="agent",
        status="completed",
        effect="read",
        output={"items": cast(JsonValue, items_to_json(items))},  # an agent node's value
        created_at=T,
        updated_at=T,
    )
    await store.put_node(
        tenant_id="gate", run_id="gate-run", expected_revision=None, record=node.to_json()
    )
    return node.to_json()


async def _sqlite_graph_runs(items: Sequence[CanonicalItem]) -> Sequence[CanonicalItem]:
    with tempfile.TemporaryDirectory() as folder:
        async with await SqliteStorage.open(Path(folder) / "gate.db") as storage:
            written = await _write_run(storage.workflows, items)
        async with await SqliteStorage.open(Path(folder) / "gate.db") as storage:
            [row] = await storage.workflows.list_nodes(tenant_id="gate", run_id="gate-run")
            run = await storage.workflows.get_run(tenant_id="gate", run_id="gate-run")
    assert run is not None
    reread = WorkflowNodeRecord.from_json(row.record)
    _exact(written, reread.to_json())
    _exact(run.record, WorkflowRunRecord.from_json(run.record).to_json())
    output = reread.output
    assert isinstance(output, dict)
    return items_from_json(output["items"])  # type: ignore[arg-type]


register_persistence("orchestration-durable-children-memory", _memory_children)
register_persistence("orchestration-durable-children-sqlite", _sqlite_children)
register_persistence("orchestration-graph-runs-sqlite", _sqlite_graph_runs)
