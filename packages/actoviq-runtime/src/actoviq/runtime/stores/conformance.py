"""The store conformance suite: one set of checks every backend must pass (decision D7).

It is plain async code (no pytest import), so any test runner can drive it. A backend's tests
build a :class:`StoreBundle` and parametrise over :data:`CONFORMANCE_CHECKS`::

    @pytest.mark.parametrize("check", CONFORMANCE_CHECKS, ids=lambda c: c.name)
    async def test_conformance(bundle: StoreBundle, check: ConformanceCheck) -> None:
        await check.run(bundle, uuid.uuid4().hex)

Each check receives a fresh namespace string and uses it as a tenant prefix, so checks can share
one database (PostgreSQL) without seeing each other's rows.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import attrs

from actoviq.core import (
    JsonObject,
    TextItem,
    ToolCallItem,
    ToolResultItem,
)
from actoviq.runtime.stores.adapters import StoreRunCheckpointAdapter, StoreRuntimeSessionAdapter
from actoviq.runtime.stores.errors import (
    SessionRevisionConflictError,
    StorageConflictError,
    StorageDataError,
    StorageError,
    StorageNotFoundError,
)
from actoviq.runtime.stores.protocols import (
    ArtifactMetadataStore,
    CheckpointStore,
    DurableChildStore,
    MemoryStore,
    SessionStore,
)
from actoviq.runtime.stores.records import NewSessionItem

__all__ = ["CONFORMANCE_CHECKS", "ConformanceCheck", "StoreBundle", "expect_error"]


@attrs.frozen(kw_only=True)
class StoreBundle:
    """One backend's five stores, as handed to every check."""

    sessions: SessionStore
    checkpoints: CheckpointStore
    memory: MemoryStore
    artifacts: ArtifactMetadataStore
    children: DurableChildStore


@attrs.frozen
class ConformanceCheck:
    """A named check: ``await check.run(bundle, namespace)`` raises AssertionError on failure."""

    name: str
    run: Callable[[StoreBundle, str], Awaitable[None]]


_E = TypeVar("_E", bound=BaseException)


async def expect_error(error_type: type[_E], action: Awaitable[Any]) -> _E:
    """Await ``action`` and return the ``error_type`` it raises (AssertionError if it does not)."""
    try:
        await action
    except error_type as error:
        return error
    raise AssertionError(f"expected {error_type.__name__}")


CHECKS: list[ConformanceCheck] = []


def _check(fn: Callable[[StoreBundle, str], Awaitable[None]]) -> None:
    CHECKS.append(ConformanceCheck(fn.__name__.removeprefix("check_"), fn))


def _text(item_id: str, text: str) -> NewSessionItem:
    return NewSessionItem(item_id=item_id, kind="text", payload={"type": "text", "text": text})


T0 = "2026-01-01T00:00:00.000Z"
T1 = "2026-01-01T00:00:01.000Z"
T2 = "2026-01-01T00:00:02.000Z"


@_check
async def check_session_create_and_append(s: StoreBundle, ns: str) -> None:
    created = await s.sessions.create(tenant_id=ns, session_id="s", metadata={"a": 1})
    assert (created.revision, created.last_sequence, created.metadata) == (0, 0, {"a": 1})
    after = await s.sessions.append(
        tenant_id=ns,
        session_id="s",
        expected_revision=0,
        items=[_text("i1", "one"), _text("i2", "two")],
    )
    assert (after.revision, after.last_sequence) == (1, 2)
    got = await s.sessions.get(tenant_id=ns, session_id="s")
    assert got == after
    assert await s.sessions.get(tenant_id=ns, session_id="missing") is None


@_check
async def check_session_stale_append_conflicts(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    await s.sessions.append(
        tenant_id=ns, session_id="s", expected_revision=0, items=[_text("a", "1")]
    )
    error = await expect_error(
        SessionRevisionConflictError,
        s.sessions.append(
            tenant_id=ns, session_id="s", expected_revision=0, items=[_text("b", "2")]
        ),
    )
    assert isinstance(error, StorageConflictError)
    assert (error.code, error.expected_revision, error.actual_revision) == (
        "SESSION_REVISION_CONFLICT",
        0,
        1,
    )
    assert "expected 0, actual 1" in error.message
    loaded = await s.sessions.load(tenant_id=ns, session_id="s")
    assert [i.item_id for i in loaded.items] == ["a"]


@_check
async def check_session_create_twice_conflicts(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    error = await expect_error(
        SessionRevisionConflictError, s.sessions.create(tenant_id=ns, session_id="s")
    )
    assert (error.expected_revision, error.actual_revision) == (None, 0)


@_check
async def check_session_compact_and_snapshot_load(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    await s.sessions.append(
        tenant_id=ns,
        session_id="s",
        expected_revision=0,
        items=[_text("i1", "one"), _text("i2", "two")],
    )
    snap = await s.sessions.compact(
        tenant_id=ns, session_id="s", expected_revision=1, through_sequence=1, state={"k": [1]}
    )
    assert (snap.through_sequence, snap.revision) == (1, 2)
    await s.sessions.append(
        tenant_id=ns, session_id="s", expected_revision=2, items=[_text("i3", "three")]
    )
    loaded = await s.sessions.load(tenant_id=ns, session_id="s")
    assert loaded.snapshot == snap
    assert [i.item_id for i in loaded.items] == ["i2", "i3"]
    full = await s.sessions.load(tenant_id=ns, session_id="s", after_sequence=0)
    assert full.snapshot is None
    assert [i.sequence for i in full.items] == [1, 2, 3]
    assert full.items[0].payload == {"type": "text", "text": "one"}
    no_snap = await s.sessions.load(tenant_id=ns, session_id="s", use_snapshot=False, limit=2)
    assert no_snap.snapshot is None
    assert [i.sequence for i in no_snap.items] == [1, 2]
    tail = await s.sessions.load(tenant_id=ns, session_id="s", after_sequence=2)
    assert [i.item_id for i in tail.items] == ["i3"]


@_check
async def check_session_compact_rules(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    await s.sessions.append(
        tenant_id=ns, session_id="s", expected_revision=0, items=[_text("i", "x")]
    )
    error = await expect_error(
        StorageDataError,
        s.sessions.compact(
            tenant_id=ns, session_id="s", expected_revision=1, through_sequence=5, state={}
        ),
    )
    assert "exceeds session tail 1" in error.message
    await s.sessions.compact(
        tenant_id=ns, session_id="s", expected_revision=1, through_sequence=1, state={}
    )
    error = await expect_error(
        StorageDataError,
        s.sessions.compact(
            tenant_id=ns, session_id="s", expected_revision=2, through_sequence=1, state={}
        ),
    )
    assert "must advance throughSequence" in error.message
    await expect_error(
        SessionRevisionConflictError,
        s.sessions.compact(
            tenant_id=ns, session_id="s", expected_revision=1, through_sequence=1, state={}
        ),
    )


@_check
async def check_session_missing_is_not_found(s: StoreBundle, ns: str) -> None:
    error = await expect_error(StorageNotFoundError, s.sessions.load(tenant_id=ns, session_id="x"))
    assert error.code == "STORAGE_NOT_FOUND"
    assert f"session {ns}/x" in error.message
    await expect_error(
        StorageNotFoundError,
        s.sessions.append(
            tenant_id=ns, session_id="x", expected_revision=0, items=[_text("a", "")]
        ),
    )


@_check
async def check_session_input_validation(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    sessions = s.sessions

    def append(items: list[NewSessionItem], expected: int = 0) -> Awaitable[Any]:
        return sessions.append(
            tenant_id=ns, session_id="s", expected_revision=expected, items=items
        )

    cases: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("at least one", lambda: append([])),
        ("itemId must be a non-empty string", lambda: append([_text("", "x")])),
        (
            "kind must be a non-empty string",
            lambda: append([NewSessionItem(item_id="a", kind="", payload={})]),
        ),
        (
            "non-finite number",
            lambda: append([NewSessionItem(item_id="a", kind="k", payload={"x": math.nan})]),
        ),
        ("non-negative safe integer", lambda: append([_text("a", "x")], -1)),
        ("duplicate itemId", lambda: append([_text("a", "x"), _text("a", "y")])),
        (
            "tenantId must be a non-empty string",
            lambda: sessions.create(tenant_id="", session_id="s"),
        ),
        (
            "limit must be a positive safe integer",
            lambda: sessions.load(tenant_id=ns, session_id="s", limit=0),
        ),
    ]
    for fragment, action in cases:
        error = await expect_error(StorageDataError, action())
        assert error.code == "STORAGE_DATA_INVALID"
        assert fragment in error.message, (fragment, error.message)
    record = await s.sessions.get(tenant_id=ns, session_id="s")
    assert record is not None
    assert (record.revision, record.last_sequence) == (0, 0)


@_check
async def check_session_idempotent_reappend(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    batch = [_text("a", "1"), _text("b", "2")]
    first = await s.sessions.append(tenant_id=ns, session_id="s", expected_revision=0, items=batch)
    again = await s.sessions.append(tenant_id=ns, session_id="s", expected_revision=0, items=batch)
    assert again == first
    error = await expect_error(
        StorageDataError,
        s.sessions.append(
            tenant_id=ns, session_id="s", expected_revision=1, items=[_text("a", "changed")]
        ),
    )
    assert "already exist" in error.message
    stale = await expect_error(
        SessionRevisionConflictError,
        s.sessions.append(
            tenant_id=ns, session_id="s", expected_revision=0, items=[_text("a", "changed")]
        ),
    )
    assert stale.actual_revision == 1
    loaded = await s.sessions.load(tenant_id=ns, session_id="s")
    assert [i.item_id for i in loaded.items] == ["a", "b"]
    assert loaded.session.revision == 1


@_check
async def check_session_returns_copies(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    payload: dict[str, Any] = {"type": "text", "text": "x", "nested": {"n": 1}}
    await s.sessions.append(
        tenant_id=ns,
        session_id="s",
        expected_revision=0,
        items=[NewSessionItem(item_id="a", kind="text", payload=payload)],
    )
    payload["nested"]["n"] = 2
    loaded = await s.sessions.load(tenant_id=ns, session_id="s")
    loaded.items[0].payload["text"] = "mutated"
    again = await s.sessions.load(tenant_id=ns, session_id="s")
    assert again.items[0].payload == {"type": "text", "text": "x", "nested": {"n": 1}}


@_check
async def check_session_list_and_tenants(s: StoreBundle, ns: str) -> None:
    a, b = f"{ns}-a", f"{ns}-b"
    await s.sessions.create(tenant_id=a, session_id="s1", created_at=T0)
    await s.sessions.create(tenant_id=a, session_id="s2", created_at=T1)
    await s.sessions.create(tenant_id=b, session_id="s1", created_at=T0)
    await s.sessions.append(
        tenant_id=a, session_id="s1", expected_revision=0, items=[_text("x", "A")], updated_at=T2
    )
    await s.sessions.append(
        tenant_id=b, session_id="s1", expected_revision=0, items=[_text("x", "B")]
    )
    listed = await s.sessions.list_sessions(tenant_id=a)
    assert [r.session_id for r in listed] == ["s1", "s2"]
    assert [r.session_id for r in await s.sessions.list_sessions(tenant_id=a, limit=1)] == ["s1"]
    got_a = await s.sessions.load(tenant_id=a, session_id="s1")
    got_b = await s.sessions.load(tenant_id=b, session_id="s1")
    assert got_a.items[0].payload["text"] == "A"
    assert got_b.items[0].payload["text"] == "B"


_TRACE: JsonObject = {"traceId": "t1", "spanId": "s1", "traceState": "k=v", "baggage": {"b": "1"}}
_EFFECT: JsonObject = {
    "sideEffectId": "call-1",
    "kind": "tool:deploy",
    "status": "pending",
    "idempotencyKey": "k1",
}
_STOP: JsonObject = {
    "reason": "tool_approval",
    "resumable": True,
    "requestedAt": T0,
    "details": {"x": 1},
}


@_check
async def check_checkpoint_create_and_replace(s: StoreBundle, ns: str) -> None:
    created = await s.checkpoints.put(
        tenant_id=ns,
        checkpoint_id="c",
        run_id="r",
        expected_revision=None,
        status="interrupted",
        state={"schemaVersion": 2, "n": 1},
        session_id="s",
        interruption=_STOP,
        pending_side_effects=[_EFFECT],
        trace_context=_TRACE,
        updated_at=T0,
    )
    assert created.revision == 0
    assert await s.checkpoints.get(tenant_id=ns, checkpoint_id="c") == created
    assert created.interruption == _STOP
    assert created.pending_side_effects == (_EFFECT,)
    updated = await s.checkpoints.put(
        tenant_id=ns,
        checkpoint_id="c",
        run_id="r",
        expected_revision=0,
        status="running",
        state={"n": 2},
        pending_side_effects=[{**_EFFECT, "status": "unknown"}],
        trace_context=_TRACE,
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


@_check
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


@_check
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


_SHA = "a" * 64


@_check
async def check_artifact_metadata(s: StoreBundle, ns: str) -> None:
    art = await s.artifacts.put(
        tenant_id=ns,
        artifact_id="x",
        expected_revision=None,
        media_type="image/png",
        size=3,
        sha256=_SHA,
        uri="file:///x.png",
        updated_at=T0,
    )
    assert (art.revision, art.size, art.sha256, art.uri) == (0, 3, _SHA, "file:///x.png")
    error = await expect_error(
        StorageConflictError,
        s.artifacts.put(
            tenant_id=ns,
            artifact_id="x",
            expected_revision=1,
            media_type="image/png",
            size=3,
            sha256=_SHA,
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
        sha256=_SHA,
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


@_check
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


@_check
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
            sha256=_SHA,
        )
    cp = await s.checkpoints.get(tenant_id=b, checkpoint_id="c")
    assert cp is not None
    assert cp.run_id == f"run-{b}"
    assert [m.value for m in await s.memory.list_memories(tenant_id=a)] == [a]
    art = await s.artifacts.get(tenant_id=b, artifact_id="x")
    assert art is not None
    assert art.size == len(b)
    assert await s.checkpoints.get(tenant_id=f"{ns}-c", checkpoint_id="c") is None


@_check
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


@_check
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


CONFORMANCE_CHECKS: tuple[ConformanceCheck, ...] = tuple(CHECKS)
"""Every check, in definition order."""
