"""Conformance checks of tenant isolation and the runtime-facing adapters."""

from __future__ import annotations

from typing import Any

from actoviq.core import (
    TextItem,
    ToolCallItem,
    ToolResultItem,
)
from actoviq.runtime.stores.adapters import StoreRunCheckpointAdapter, StoreRuntimeSessionAdapter
from actoviq.runtime.stores.conformance._base import (
    SHA,
    StoreBundle,
    expect_error,
    register,
)
from actoviq.runtime.stores.errors import (
    SessionRevisionConflictError,
    StorageDataError,
    StorageError,
)

__all__: list[str] = []


@register
async def check_tenant_isolation(s: StoreBundle, ns: str) -> None:
    a, b = f"{ns}-a", f"{ns}-b"
    for tenant in (a, b):
        await s.checkpoints.put(
            tenant_id=tenant,
            checkpoint_id="c",
            run_id=f"run-{tenant}",
            expected_revision=None,
            status="running",
            state={},
        )
        await s.memory.put(
            tenant_id=tenant, memory_id="m", namespace="n", expected_revision=None, value=tenant
        )
        await s.artifacts.put(
            tenant_id=tenant,
            artifact_id="x",
            expected_revision=None,
            media_type="a/b",
            size=len(tenant),
            sha256=SHA,
        )
    cp = await s.checkpoints.get(tenant_id=b, checkpoint_id="c")
    assert cp is not None
    assert cp.run_id == f"run-{b}"
    assert [m.value for m in await s.memory.list_memories(tenant_id=a)] == [a]
    art = await s.artifacts.get(tenant_id=b, artifact_id="x")
    assert art is not None
    assert art.size == len(b)
    assert await s.checkpoints.get(tenant_id=f"{ns}-c", checkpoint_id="c") is None


@register
async def check_runtime_session_adapter(s: StoreBundle, ns: str) -> None:
    adapter = StoreRuntimeSessionAdapter(s.sessions)
    empty = await adapter.load(tenant_id=ns, session_id="s")
    assert (empty.items, empty.revision) == ((), "0")
    turn1 = [
        TextItem(role="user", text="hi"),
        ToolCallItem(id="call-1", name="lookup", input={"q": "x"}),
        ToolResultItem(call_id="call-1", status="success", output=None),
    ]
    rev = await adapter.append(tenant_id=ns, session_id="s", items=turn1, expected_revision="0")
    assert rev == "1"
    retried = await adapter.append(tenant_id=ns, session_id="s", items=turn1, expected_revision="0")
    assert retried == "1"
    await expect_error(
        SessionRevisionConflictError,
        adapter.append(
            tenant_id=ns,
            session_id="s",
            items=[TextItem(role="user", text="x")],
            expected_revision="0",
        ),
    )
    await expect_error(
        StorageDataError,
        adapter.append(tenant_id=ns, session_id="s", items=turn1, expected_revision="-1"),
    )
    rev = await adapter.append(
        tenant_id=ns,
        session_id="s",
        items=[TextItem(role="assistant", text="ok")],
        expected_revision="1",
    )
    loaded = await adapter.load(tenant_id=ns, session_id="s")
    assert loaded.revision == "2"
    assert list(loaded.items) == [*turn1, TextItem(role="assistant", text="ok")]
    compacted = await adapter.compact(tenant_id=ns, session_id="s")
    assert compacted == "3"
    after = await adapter.load(tenant_id=ns, session_id="s")
    assert after.items == loaded.items
    raw = await s.sessions.load(tenant_id=ns, session_id="s")
    assert raw.items == ()


@register
async def check_run_checkpoint_adapter(s: StoreBundle, ns: str) -> None:
    adapter = StoreRunCheckpointAdapter(s.checkpoints, tenant_id=ns)
    call = {"type": "tool_call", "id": "call-1", "name": "deploy", "input": {"env": "prod"}}
    state: dict[str, Any] = {
        "schemaVersion": 2,
        "runId": "run-1",
        "agentId": "a",
        "agentConfigDigest": "d",
        "status": "interrupted",
        "trace": {"runId": "run-1", "traceId": "t", "spanId": "sp"},
        "transcript": [],
        "generatedItems": [],
        "sessionId": "s1",
        "pendingTools": [
            {
                "call": call,
                "effect": "side-effect",
                "state": "awaiting_approval",
                "interruptionId": "i-1",
            }
        ],
    }
    await adapter.save(state)
    assert await adapter.load("run-1") == state
    record = await s.checkpoints.get(tenant_id=ns, checkpoint_id="run-1")
    assert record is not None
    assert (record.status, record.session_id) == ("awaiting_side_effect", "s1")
    assert record.interruption is not None
    assert record.interruption["details"] == {
        "interruptionId": "i-1",
        "callId": "call-1",
        "toolName": "deploy",
    }
    assert record.pending_side_effects == (
        {
            "sideEffectId": "call-1",
            "kind": "tool:deploy",
            "status": "pending",
            "input": {"env": "prod"},
        },
    )
    assert record.trace_context == {"traceId": "t", "spanId": "sp"}
    await adapter.save({**state, "status": "completed", "pendingTools": []})
    await adapter.delete("run-1")
    final = await s.checkpoints.get(tenant_id=ns, checkpoint_id="run-1")
    assert final is not None
    assert (final.status, final.revision) == ("completed", 1)
    await adapter.save({**state, "runId": "run-2", "status": "failed", "pendingTools": []})
    await adapter.delete("run-2")
    tomb = await s.checkpoints.get(tenant_id=ns, checkpoint_id="run-2")
    assert tomb is not None
    assert (tomb.status, tomb.revision) == ("completed", 1)
    assert await adapter.load("missing") is None
    error = await expect_error(StorageDataError, adapter.save({**state, "schemaVersion": 3}))
    assert "Unsupported run state version 3" in error.message
    assert isinstance(error, StorageError)
