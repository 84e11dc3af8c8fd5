"""Conformance checks of session stores."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

from actoviq.runtime.stores.conformance._base import (
    T0,
    T1,
    T2,
    StoreBundle,
    expect_error,
    register,
    text_item,
)
from actoviq.runtime.stores.errors import (
    SessionRevisionConflictError,
    StorageConflictError,
    StorageDataError,
    StorageNotFoundError,
)
from actoviq.runtime.stores.records import NewSessionItem

__all__: list[str] = []


@register
async def check_session_create_and_append(s: StoreBundle, ns: str) -> None:
    created = await s.sessions.create(tenant_id=ns, session_id="s", metadata={"a": 1})
    assert (created.revision, created.last_sequence, created.metadata) == (0, 0, {"a": 1})
    after = await s.sessions.append(
        tenant_id=ns,
        session_id="s",
        expected_revision=0,
        items=[text_item("i1", "one"), text_item("i2", "two")],
    )
    assert (after.revision, after.last_sequence) == (1, 2)
    got = await s.sessions.get(tenant_id=ns, session_id="s")
    assert got == after
    assert await s.sessions.get(tenant_id=ns, session_id="missing") is None


@register
async def check_session_stale_append_conflicts(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    await s.sessions.append(
        tenant_id=ns, session_id="s", expected_revision=0, items=[text_item("a", "1")]
    )
    error = await expect_error(
        SessionRevisionConflictError,
        s.sessions.append(
            tenant_id=ns, session_id="s", expected_revision=0, items=[text_item("b", "2")]
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


@register
async def check_session_create_twice_conflicts(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    error = await expect_error(
        SessionRevisionConflictError, s.sessions.create(tenant_id=ns, session_id="s")
    )
    assert (error.expected_revision, error.actual_revision) == (None, 0)


@register
async def check_session_compact_and_snapshot_load(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    await s.sessions.append(
        tenant_id=ns,
        session_id="s",
        expected_revision=0,
        items=[text_item("i1", "one"), text_item("i2", "two")],
    )
    snap = await s.sessions.compact(
        tenant_id=ns, session_id="s", expected_revision=1, through_sequence=1, state={"k": [1]}
    )
    assert (snap.through_sequence, snap.revision) == (1, 2)
    await s.sessions.append(
        tenant_id=ns, session_id="s", expected_revision=2, items=[text_item("i3", "three")]
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


@register
async def check_session_compact_rules(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    await s.sessions.append(
        tenant_id=ns, session_id="s", expected_revision=0, items=[text_item("i", "x")]
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


@register
async def check_session_missing_is_not_found(s: StoreBundle, ns: str) -> None:
    error = await expect_error(StorageNotFoundError, s.sessions.load(tenant_id=ns, session_id="x"))
    assert error.code == "STORAGE_NOT_FOUND"
    assert f"session {ns}/x" in error.message
    await expect_error(
        StorageNotFoundError,
        s.sessions.append(
            tenant_id=ns, session_id="x", expected_revision=0, items=[text_item("a", "")]
        ),
    )


@register
async def check_session_input_validation(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    sessions = s.sessions

    def append(items: list[NewSessionItem], expected: int = 0) -> Awaitable[Any]:
        return sessions.append(
            tenant_id=ns, session_id="s", expected_revision=expected, items=items
        )

    cases: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("at least one", lambda: append([])),
        ("itemId must be a non-empty string", lambda: append([text_item("", "x")])),
        (
            "kind must be a non-empty string",
            lambda: append([NewSessionItem(item_id="a", kind="", payload={})]),
        ),
        (
            "non-finite number",
            lambda: append([NewSessionItem(item_id="a", kind="k", payload={"x": math.nan})]),
        ),
        ("non-negative safe integer", lambda: append([text_item("a", "x")], -1)),
        ("duplicate itemId", lambda: append([text_item("a", "x"), text_item("a", "y")])),
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


@register
async def check_session_idempotent_reappend(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    batch = [text_item("a", "1"), text_item("b", "2")]
    first = await s.sessions.append(tenant_id=ns, session_id="s", expected_revision=0, items=batch)
    again = await s.sessions.append(tenant_id=ns, session_id="s", expected_revision=0, items=batch)
    assert again == first
    error = await expect_error(
        StorageDataError,
        s.sessions.append(
            tenant_id=ns, session_id="s", expected_revision=1, items=[text_item("a", "changed")]
        ),
    )
    assert "already exist" in error.message
    stale = await expect_error(
        SessionRevisionConflictError,
        s.sessions.append(
            tenant_id=ns, session_id="s", expected_revision=0, items=[text_item("a", "changed")]
        ),
    )
    assert stale.actual_revision == 1
    loaded = await s.sessions.load(tenant_id=ns, session_id="s")
    assert [i.item_id for i in loaded.items] == ["a", "b"]
    assert loaded.session.revision == 1


@register
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


@register
async def check_session_list_and_tenants(s: StoreBundle, ns: str) -> None:
    a, b = f"{ns}-a", f"{ns}-b"
    await s.sessions.create(tenant_id=a, session_id="s1", created_at=T0)
    await s.sessions.create(tenant_id=a, session_id="s2", created_at=T1)
    await s.sessions.create(tenant_id=b, session_id="s1", created_at=T0)
    await s.sessions.append(
        tenant_id=a,
        session_id="s1",
        expected_revision=0,
        items=[text_item("x", "A")],
        updated_at=T2,
    )
    await s.sessions.append(
        tenant_id=b, session_id="s1", expected_revision=0, items=[text_item("x", "B")]
    )
    listed = await s.sessions.list_sessions(tenant_id=a)
    assert [r.session_id for r in listed] == ["s1", "s2"]
    assert [r.session_id for r in await s.sessions.list_sessions(tenant_id=a, limit=1)] == ["s1"]
    got_a = await s.sessions.load(tenant_id=a, session_id="s1")
    got_b = await s.sessions.load(tenant_id=b, session_id="s1")
    assert got_a.items[0].payload["text"] == "A"
    assert got_b.items[0].payload["text"] == "B"
