"""Conformance checks of workflow run stores (spec 04 §8.2-21)."""

from __future__ import annotations

from typing import Any

from actoviq.runtime.stores.conformance._base import T0, T1, T2, StoreBundle, expect_error, register
from actoviq.runtime.stores.errors import (
    StorageConflictError,
    StorageDataError,
    StorageNotFoundError,
)

__all__: list[str] = []


def _run(run_id: str, revision: int, status: str, created: str, **extra: Any) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "runId": run_id,
        "graphId": "review",
        "revision": revision,
        "status": status,
        "input": {"topic": "x"},
        "createdAt": created,
        "updatedAt": created,
        **extra,
    }


def _node(
    run_id: str,
    node_id: str,
    iteration: int,
    revision: int,
    status: str,
    created: str,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "runId": run_id,
        "nodeId": node_id,
        "iteration": iteration,
        "revision": revision,
        "status": status,
        "createdAt": created,
        "updatedAt": created,
        **extra,
    }


@register
async def check_workflow_runs_cas(s: StoreBundle, ns: str) -> None:
    row = await s.workflows.create_run(tenant_id=ns, record=_run("w1", 0, "running", T1))
    assert (row.run_id, row.graph_id, row.revision, row.status, row.lease_owner) == (
        "w1",
        "review",
        0,
        "running",
        None,
    )
    assert await s.workflows.get_run(tenant_id=ns, run_id="w1") == row
    assert await s.workflows.get_run(tenant_id=ns, run_id="nope") is None
    conflict = await expect_error(
        StorageConflictError,
        s.workflows.create_run(tenant_id=ns, record=_run("w1", 0, "running", T1)),
    )
    assert (conflict.expected_revision, conflict.actual_revision) == (None, 0)
    await expect_error(
        StorageDataError, s.workflows.create_run(tenant_id=ns, record=_run("w2", 1, "running", T1))
    )
    await expect_error(
        StorageDataError, s.workflows.create_run(tenant_id=ns, record=_run("w2", 0, "paused", T1))
    )
    leased = _run("w1", 1, "running", T1, leaseOwner="a", leaseExpiresAt=1_700_000_000_000)
    assert await s.workflows.compare_and_set_run(
        tenant_id=ns, run_id="w1", expected_revision=0, record=leased
    )
    assert not await s.workflows.compare_and_set_run(
        tenant_id=ns, run_id="w1", expected_revision=0, record=leased
    )
    assert not await s.workflows.compare_and_set_run(
        tenant_id=ns, run_id="ghost", expected_revision=0, record={**leased, "runId": "ghost"}
    )
    error = await expect_error(
        StorageDataError,
        s.workflows.compare_and_set_run(
            tenant_id=ns, run_id="w1", expected_revision=1, record=leased
        ),
    )
    assert "exactly one revision" in error.message
    got = await s.workflows.get_run(tenant_id=ns, run_id="w1")
    assert got is not None
    assert (got.revision, got.lease_owner, got.lease_expires_at, got.record) == (
        1,
        "a",
        1_700_000_000_000,
        leased,
    )
    await s.workflows.create_run(tenant_id=ns, record=_run("w0", 0, "completed", T0))
    await s.workflows.create_run(
        tenant_id=ns, record={**_run("w3", 0, "running", T2), "graphId": "other"}
    )
    assert [r.run_id for r in await s.workflows.list_runs(tenant_id=ns)] == ["w0", "w1", "w3"]
    assert [r.run_id for r in await s.workflows.list_runs(tenant_id=ns, status="running")] == [
        "w1",
        "w3",
    ]
    assert [r.run_id for r in await s.workflows.list_runs(tenant_id=ns, graph_id="other")] == ["w3"]
    assert [r.run_id for r in await s.workflows.list_runs(tenant_id=ns, limit=1)] == ["w0"]
    assert await s.workflows.list_runs(tenant_id=f"{ns}-other") == []


@register
async def check_workflow_nodes_cas_and_fencing(s: StoreBundle, ns: str) -> None:
    await s.workflows.create_run(
        tenant_id=ns, record=_run("w", 0, "running", T0, leaseOwner="a", leaseExpiresAt=10)
    )
    await expect_error(
        StorageNotFoundError,
        s.workflows.put_node(
            tenant_id=ns,
            run_id="ghost",
            expected_revision=None,
            record=_node("ghost", "n", 0, 0, "running", T0),
        ),
    )
    first = await s.workflows.put_node(
        tenant_id=ns,
        run_id="w",
        expected_revision=None,
        record=_node("w", "draft", 0, 0, "running", T0),
        lease_owner="a",
    )
    assert (first.node_id, first.iteration, first.revision, first.status) == (
        "draft",
        0,
        0,
        "running",
    )
    done = _node("w", "draft", 0, 1, "completed", T0, output={"text": "v1"}, updatedAt=T1)
    stored = await s.workflows.put_node(
        tenant_id=ns, run_id="w", expected_revision=0, record=done, lease_owner="a"
    )
    assert (stored.revision, stored.status, stored.record) == (1, "completed", done)
    stale = await expect_error(
        StorageConflictError,
        s.workflows.put_node(tenant_id=ns, run_id="w", expected_revision=0, record=done),
    )
    assert (stale.expected_revision, stale.actual_revision) == (0, 1)
    duplicate = await expect_error(
        StorageConflictError,
        s.workflows.put_node(
            tenant_id=ns,
            run_id="w",
            expected_revision=None,
            record=_node("w", "draft", 0, 0, "running", T0),
        ),
    )
    assert duplicate.actual_revision == 1
    await expect_error(
        StorageDataError,
        s.workflows.put_node(
            tenant_id=ns,
            run_id="w",
            expected_revision=None,
            record=_node("other-run", "x", 0, 0, "running", T0),
        ),
    )
    await expect_error(
        StorageDataError,
        s.workflows.put_node(
            tenant_id=ns,
            run_id="w",
            expected_revision=1,
            record=_node("w", "draft", 0, 3, "completed", T0),
        ),
    )
    # Fencing: only the run's lease owner may write when the write names an owner.
    fenced = await expect_error(
        StorageConflictError,
        s.workflows.put_node(
            tenant_id=ns,
            run_id="w",
            expected_revision=None,
            record=_node("w", "review", 0, 0, "running", T1),
            lease_owner="b",
        ),
    )
    assert fenced.code == "STORAGE_CONFLICT"
    taken = _run("w", 1, "running", T0, leaseOwner="b", leaseExpiresAt=20)
    assert await s.workflows.compare_and_set_run(
        tenant_id=ns, run_id="w", expected_revision=0, record=taken
    )
    await expect_error(
        StorageConflictError,
        s.workflows.put_node(
            tenant_id=ns,
            run_id="w",
            expected_revision=None,
            record=_node("w", "review", 0, 0, "running", T1),
            lease_owner="a",
        ),
    )
    await s.workflows.put_node(
        tenant_id=ns,
        run_id="w",
        expected_revision=None,
        record=_node("w", "review", 0, 0, "completed", T1),
        lease_owner="b",
    )
    await s.workflows.put_node(
        tenant_id=ns,
        run_id="w",
        expected_revision=None,
        record=_node("w", "draft", 1, 0, "skipped", T1),
    )
    nodes = await s.workflows.list_nodes(tenant_id=ns, run_id="w")
    assert [(n.node_id, n.iteration, n.status) for n in nodes] == [
        ("draft", 0, "completed"),
        ("draft", 1, "skipped"),
        ("review", 0, "completed"),
    ]
    assert await s.workflows.list_nodes(tenant_id=f"{ns}-other", run_id="w") == []
    assert await s.workflows.delete_run(tenant_id=ns, run_id="w") is True
    assert await s.workflows.delete_run(tenant_id=ns, run_id="w") is False
    assert await s.workflows.list_nodes(tenant_id=ns, run_id="w") == []
    assert await s.workflows.get_run(tenant_id=ns, run_id="w") is None
