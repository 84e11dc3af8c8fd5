"""Conformance checks of checkpoint, memory, artifact and durable-child stores."""

from __future__ import annotations

from typing import Any

from actoviq.runtime.stores.conformance._base import (
    EFFECT,
    SHA,
    STOP,
    T0,
    T1,
    T2,
    TRACE,
    StoreBundle,
    expect_error,
    register,
)
from actoviq.runtime.stores.errors import (
    StorageConflictError,
    StorageDataError,
)

__all__: list[str] = []


@register
async def check_checkpoint_create_and_replace(s: StoreBundle, ns: str) -> None:
    created = await s.checkpoints.put(
        tenant_id=ns,
        checkpoint_id="c",
        run_id="r",
        expected_revision=None,
        status="interrupted",
        state={"schemaVersion": 2, "n": 1},
        session_id="s",
        interruption=STOP,
        pending_side_effects=[EFFECT],
        trace_context=TRACE,
        updated_at=T0,
    )
    assert created.revision == 0
    assert await s.checkpoints.get(tenant_id=ns, checkpoint_id="c") == created
    assert created.interruption == STOP
    assert created.pending_side_effects == (EFFECT,)
    updated = await s.checkpoints.put(
        tenant_id=ns,
        checkpoint_id="c",
        run_id="r",
        expected_revision=0,
        status="running",
        state={"n": 2},
        pending_side_effects=[{**EFFECT, "status": "unknown"}],
        trace_context=TRACE,
        updated_at=T1,
    )
    assert (updated.revision, updated.status, updated.interruption) == (1, "running", None)
    assert (updated.created_at, updated.updated_at) == (T0, T1)
    assert updated.pending_side_effects[0]["status"] == "unknown"
    assert updated.session_id is None
    error = await expect_error(
        StorageConflictError,
        s.checkpoints.put(
            tenant_id=ns,
            checkpoint_id="c",
            run_id="r",
            expected_revision=0,
            status="running",
            state={},
        ),
    )
    assert (error.code, error.expected_revision, error.actual_revision) == (
        "STORAGE_CONFLICT",
        0,
        1,
    )
    error = await expect_error(
        StorageConflictError,
        s.checkpoints.put(
            tenant_id=ns,
            checkpoint_id="c",
            run_id="r",
            expected_revision=None,
            status="running",
            state={},
        ),
    )
    assert error.actual_revision == 1
    await expect_error(
        StorageDataError,
        s.checkpoints.put(
            tenant_id=ns,
            checkpoint_id="d",
            run_id="r",
            expected_revision=None,
            status="bogus",  # type: ignore[arg-type]
            state={},
        ),
    )


@register
async def check_checkpoint_list_and_delete(s: StoreBundle, ns: str) -> None:
    for cid, run, status, stamp in [
        ("b", "r1", "running", T0),
        ("a", "r1", "completed", T0),
        ("c", "r2", "running", T1),
    ]:
        await s.checkpoints.put(
            tenant_id=ns,
            checkpoint_id=cid,
            run_id=run,
            expected_revision=None,
            status=status,  # type: ignore[arg-type]
            state={},
            updated_at=stamp,
        )
    listed = await s.checkpoints.list_checkpoints(tenant_id=ns)
    assert [c.checkpoint_id for c in listed] == ["a", "b", "c"]
    by_run = await s.checkpoints.list_checkpoints(tenant_id=ns, run_id="r1", status="running")
    assert [c.checkpoint_id for c in by_run] == ["b"]
    assert len(await s.checkpoints.list_checkpoints(tenant_id=ns, limit=1)) == 1
    await expect_error(
        StorageConflictError,
        s.checkpoints.delete(tenant_id=ns, checkpoint_id="a", expected_revision=3),
    )
    assert await s.checkpoints.delete(tenant_id=ns, checkpoint_id="a") is True
    assert await s.checkpoints.delete(tenant_id=ns, checkpoint_id="a") is False
    assert await s.checkpoints.get(tenant_id=ns, checkpoint_id="a") is None


@register
async def check_memory_cas_and_list(s: StoreBundle, ns: str) -> None:
    first = await s.memory.put(
        tenant_id=ns,
        memory_id="m1",
        namespace="n1",
        expected_revision=None,
        value=[1, None],
        updated_at=T0,
    )
    assert (first.revision, first.value, first.metadata) == (0, [1, None], {})
    error = await expect_error(
        StorageConflictError,
        s.memory.put(tenant_id=ns, memory_id="m1", namespace="n1", expected_revision=None, value=1),
    )
    assert (error.expected_revision, error.actual_revision) == (None, 0)
    assert f"memory {ns}/m1" in error.message
    await s.memory.put(
        tenant_id=ns,
        memory_id="m2",
        namespace="n1",
        expected_revision=None,
        value="x",
        updated_at=T1,
    )
    moved = await s.memory.put(
        tenant_id=ns,
        memory_id="m1",
        namespace="n2",
        expected_revision=0,
        value={"v": 2},
        metadata={"m": True},
        updated_at=T2,
    )
    assert (moved.revision, moved.namespace, moved.created_at) == (1, "n2", T0)
    assert [m.memory_id for m in await s.memory.list_memories(tenant_id=ns)] == ["m1", "m2"]
    assert [m.memory_id for m in await s.memory.list_memories(tenant_id=ns, namespace="n1")] == [
        "m2"
    ]
    assert await s.memory.get(tenant_id=ns, memory_id="m1") == moved
    assert await s.memory.delete(tenant_id=ns, memory_id="m1", expected_revision=1) is True
    assert await s.memory.get(tenant_id=ns, memory_id="m1") is None


@register
async def check_artifact_metadata(s: StoreBundle, ns: str) -> None:
    art = await s.artifacts.put(
        tenant_id=ns,
        artifact_id="x",
        expected_revision=None,
        media_type="image/png",
        size=3,
        sha256=SHA,
        uri="file:///x.png",
        updated_at=T0,
    )
    assert (art.revision, art.size, art.sha256, art.uri) == (0, 3, SHA, "file:///x.png")
    error = await expect_error(
        StorageConflictError,
        s.artifacts.put(
            tenant_id=ns,
            artifact_id="x",
            expected_revision=1,
            media_type="image/png",
            size=3,
            sha256=SHA,
        ),
    )
    assert (error.expected_revision, error.actual_revision) == (1, 0)
    await expect_error(
        StorageDataError,
        s.artifacts.put(
            tenant_id=ns,
            artifact_id="y",
            expected_revision=None,
            media_type="a/b",
            size=1,
            sha256="XYZ",
        ),
    )
    await s.artifacts.put(
        tenant_id=ns,
        artifact_id="y",
        expected_revision=None,
        media_type="text/plain",
        size=0,
        sha256=SHA,
        updated_at=T1,
    )
    assert [a.artifact_id for a in await s.artifacts.list_artifacts(tenant_id=ns)] == ["y", "x"]
    assert await s.artifacts.get(tenant_id=ns, artifact_id="x") == art
    assert await s.artifacts.delete(tenant_id=ns, artifact_id="y") is True
    assert [a.artifact_id for a in await s.artifacts.list_artifacts(tenant_id=ns)] == ["x"]


def _child(child_id: str, revision: int, status: str, parent: str, created: str) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "childId": child_id,
        "revision": revision,
        "parent": {"runId": parent},
        "agentId": "worker",
        "input": [],
        "metadata": {},
        "status": status,
        "attempts": 0,
        "createdAt": created,
        "updatedAt": created,
    }


@register
async def check_durable_children(s: StoreBundle, ns: str) -> None:
    row = await s.children.create(tenant_id=ns, record=_child("c1", 0, "queued", "p1", T1))
    assert (row.revision, row.status, row.parent_run_id, row.lease_owner) == (
        0,
        "queued",
        "p1",
        None,
    )
    await s.children.create(tenant_id=ns, record=_child("c0", 0, "queued", "p2", T0))
    error = await expect_error(
        StorageConflictError,
        s.children.create(tenant_id=ns, record=_child("c1", 0, "queued", "p1", T1)),
    )
    assert 'Durable child "c1" already exists.' in error.message
    await expect_error(
        StorageDataError,
        s.children.create(tenant_id=ns, record=_child("c2", 3, "queued", "p1", T1)),
    )
    leased = {
        **_child("c1", 1, "running", "p1", T1),
        "leaseOwner": "w1",
        "leaseExpiresAt": 1_700_000_030_000,
        "heartbeatAt": 1_700_000_000_000,
    }
    assert (
        await s.children.compare_and_set(
            tenant_id=ns, child_id="c1", expected_revision=0, record=leased
        )
        is True
    )
    assert (
        await s.children.compare_and_set(
            tenant_id=ns, child_id="c1", expected_revision=0, record=leased
        )
        is False
    )
    assert (
        await s.children.compare_and_set(
            tenant_id=ns, child_id="nope", expected_revision=0, record={**leased, "childId": "nope"}
        )
        is False
    )
    error = await expect_error(
        StorageDataError,
        s.children.compare_and_set(tenant_id=ns, child_id="c1", expected_revision=1, record=leased),
    )
    assert "exactly one revision" in error.message
    got = await s.children.get(tenant_id=ns, child_id="c1")
    assert got is not None
    assert (got.revision, got.lease_owner, got.lease_expires_at, got.heartbeat_at) == (
        1,
        "w1",
        1_700_000_030_000,
        1_700_000_000_000,
    )
    assert got.record == leased
    assert [r.child_id for r in await s.children.list_children(tenant_id=ns)] == ["c0", "c1"]
    assert [
        r.child_id for r in await s.children.list_children(tenant_id=ns, parent_run_id="p1")
    ] == ["c1"]
    assert [r.child_id for r in await s.children.list_children(tenant_id=ns, status="queued")] == [
        "c0"
    ]
    assert await s.children.list_children(tenant_id=f"{ns}-other") == []
