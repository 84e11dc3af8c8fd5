"""Conformance checks of the strict-JSON rules (D2, D10) on every store and backend.

What no database or other language can hold — a lone UTF-16 surrogate (in a value, a key or an
id), an integer beyond ±(2^53 - 1), a value nested deeper than ``MAX_WIRE_DEPTH`` — is refused
with :class:`StorageDataError` before any transaction opens, and what was stored before is
unchanged. A plain dict or tuple in place of a ``NewSessionItem`` record is refused the same
way. Every backend stores numbers as every language reads them back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from actoviq.core import MAX_SAFE_INTEGER, MAX_WIRE_DEPTH
from actoviq.runtime.stores.conformance._base import (
    SHA,
    T0,
    T1,
    StoreBundle,
    expect_error,
    register,
    text_item,
)
from actoviq.runtime.stores.errors import StorageDataError
from actoviq.runtime.stores.records import NewSessionItem

__all__ = ["UNSTORABLE"]


def _nest(depth: int, leaf: Any = 1) -> Any:
    value: Any = leaf
    for _ in range(depth):
        value = [value]
    return value


UNSTORABLE: dict[str, Callable[[], Any]] = {
    "lone-surrogate": lambda: {"text": "bad \ud800 text"},
    "surrogate-key": lambda: {"k\udfff": 1},
    "split-pair": lambda: {"text": "\ud83d\ude00"},  # two code points, not the emoji
    "unsafe-integer": lambda: {"n": MAX_SAFE_INTEGER + 1},
    "negative-unsafe": lambda: {"n": [-(2**63)]},
    "huge-integer": lambda: {"n": 2**64},
    "too-deep": lambda: {"deep": _nest(MAX_WIRE_DEPTH + 1)},
    "very-deep": lambda: {"deep": _nest(100_000)},
    "non-finite": lambda: {"x": float("nan")},
}
"""Payloads (JSON objects) that every store must refuse, by what is wrong with them."""

_BAD_KEY = "key \ud800"


def _child(child_id: str, revision: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "childId": child_id,
        "revision": revision,
        "parent": {"runId": "p"},
        "agentId": "worker",
        "input": [],
        "metadata": extra or {},
        "status": "queued",
        "attempts": 0,
        "createdAt": T0,
        "updatedAt": T0,
    }


async def _refused(action: Awaitable[Any], what: str) -> None:
    try:
        await action
    except StorageDataError:
        return
    raise AssertionError(f"{what} was stored")


async def _seed(s: StoreBundle, ns: str) -> dict[str, Any]:
    """One record of every kind, and a snapshot of what a reader sees of them."""
    await s.sessions.create(tenant_id=ns, session_id="s", metadata={"m": 1})
    await s.sessions.append(
        tenant_id=ns, session_id="s", expected_revision=0, items=[text_item("a", "kept")]
    )
    await s.checkpoints.put(
        tenant_id=ns,
        checkpoint_id="c",
        run_id="r",
        expected_revision=None,
        status="running",
        state={"n": 1},
        updated_at=T0,
    )
    await s.memory.put(
        tenant_id=ns, memory_id="m", namespace="n", expected_revision=None, value={"v": 1}
    )
    await s.artifacts.put(
        tenant_id=ns, artifact_id="a", expected_revision=None, media_type="t/x", size=1, sha256=SHA
    )
    await s.children.create(tenant_id=ns, record=_child("c1", 0))
    return await _snapshot(s, ns)


async def _snapshot(s: StoreBundle, ns: str) -> dict[str, Any]:
    return {
        "session": await s.sessions.get(tenant_id=ns, session_id="s"),
        "items": list((await s.sessions.load(tenant_id=ns, session_id="s")).items),
        "checkpoint": await s.checkpoints.get(tenant_id=ns, checkpoint_id="c"),
        "memory": await s.memory.get(tenant_id=ns, memory_id="m"),
        "artifact": await s.artifacts.get(tenant_id=ns, artifact_id="a"),
        "child": await s.children.get(tenant_id=ns, child_id="c1"),
        "sessions": [r.session_id for r in await s.sessions.list_sessions(tenant_id=ns)],
    }


def _writes(s: StoreBundle, ns: str, bad: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Every store write, with ``bad`` (a JSON object) in its JSON-carrying argument."""
    return {
        "session metadata": lambda: s.sessions.create(tenant_id=ns, session_id="s2", metadata=bad),
        "session append": lambda: s.sessions.append(
            tenant_id=ns,
            session_id="s",
            expected_revision=1,
            items=[text_item("b", "fine"), NewSessionItem(item_id="c", kind="x", payload=bad)],
        ),
        "session compact": lambda: s.sessions.compact(
            tenant_id=ns, session_id="s", expected_revision=1, through_sequence=1, state=bad
        ),
        "checkpoint state": lambda: s.checkpoints.put(
            tenant_id=ns,
            checkpoint_id="c",
            run_id="r",
            expected_revision=0,
            status="running",
            state=bad,
            updated_at=T1,
        ),
        "checkpoint effects": lambda: s.checkpoints.put(
            tenant_id=ns,
            checkpoint_id="c",
            run_id="r",
            expected_revision=0,
            status="running",
            state={},
            pending_side_effects=[{"sideEffectId": "x", "kind": "k", "input": bad}],
            updated_at=T1,
        ),
        "memory value": lambda: s.memory.put(
            tenant_id=ns, memory_id="m", namespace="n", expected_revision=0, value=bad
        ),
        "memory metadata": lambda: s.memory.put(
            tenant_id=ns, memory_id="m", namespace="n", expected_revision=0, value=1, metadata=bad
        ),
        "artifact metadata": lambda: s.artifacts.put(
            tenant_id=ns,
            artifact_id="a",
            expected_revision=0,
            media_type="t/x",
            size=1,
            sha256=SHA,
            metadata=bad,
        ),
        "child create": lambda: s.children.create(tenant_id=ns, record=_child("c2", 0, bad)),
        "child cas": lambda: s.children.compare_and_set(
            tenant_id=ns, child_id="c1", expected_revision=0, record=_child("c1", 1, bad)
        ),
    }


@register
async def check_unstorable_json_is_refused_and_nothing_is_lost(s: StoreBundle, ns: str) -> None:
    before = await _seed(s, ns)
    for reason, make in UNSTORABLE.items():
        for write, action in _writes(s, ns, make()).items():
            await _refused(action(), f"{write} with {reason}")
    assert await _snapshot(s, ns) == before
    # The stores still work after the refusals.
    after = await s.sessions.append(
        tenant_id=ns, session_id="s", expected_revision=1, items=[text_item("b", "next")]
    )
    assert after.revision == 2


@register
async def check_keys_with_lone_surrogates_are_refused(s: StoreBundle, ns: str) -> None:
    await _keys_refused(s, ns, _BAD_KEY)


@register
async def check_keys_with_a_nul_character_are_refused(s: StoreBundle, ns: str) -> None:
    # PostgreSQL cannot hold NUL in a text column; every backend refuses it the same way,
    # in keys and in the filters of list calls alike.
    await _keys_refused(s, ns, "key\x00")
    for what, action in {
        "checkpoint status filter": lambda: s.checkpoints.list_checkpoints(
            tenant_id=ns,
            status="running\x00",  # type: ignore[arg-type]
        ),
        "child status filter": lambda: s.children.list_children(tenant_id=ns, status="queued\x00"),
        "child parent filter": lambda: s.children.list_children(
            tenant_id=ns, parent_run_id="p\x00"
        ),
        "child parent run id": lambda: s.children.create(
            tenant_id=ns, record={**_child("c9", 0), "parent": {"runId": "p\x00"}}
        ),
    }.items():
        await _refused(action(), what)
    # In JSON values NUL is an escape, so text holding one round-trips on every backend.
    item = NewSessionItem(item_id="i", kind="text", payload={"text": "a\x00b", "k\x00": 1})
    await s.sessions.append(tenant_id=ns, session_id="s", expected_revision=1, items=[item])
    stored = list((await s.sessions.load(tenant_id=ns, session_id="s")).items)[-1]
    assert stored.payload == item.payload


async def _keys_refused(s: StoreBundle, ns: str, bad: str) -> None:
    before = await _seed(s, ns)
    refused: dict[str, Callable[[], Awaitable[Any]]] = {
        "session id": lambda: s.sessions.create(tenant_id=ns, session_id=bad),
        "item id": lambda: s.sessions.append(
            tenant_id=ns, session_id="s", expected_revision=1, items=[text_item(bad, "x")]
        ),
        "item kind": lambda: s.sessions.append(
            tenant_id=ns,
            session_id="s",
            expected_revision=1,
            items=[NewSessionItem(item_id="z", kind=bad, payload={})],
        ),
        "item createdAt": lambda: s.sessions.append(
            tenant_id=ns,
            session_id="s",
            expected_revision=1,
            items=[NewSessionItem(item_id="z", kind="text", payload={}, created_at=bad)],
        ),
        "append updatedAt": lambda: s.sessions.append(
            tenant_id=ns,
            session_id="s",
            expected_revision=1,
            items=[text_item("z", "x")],
            updated_at=bad,
        ),
        "checkpoint run id": lambda: s.checkpoints.put(
            tenant_id=ns,
            checkpoint_id="c9",
            run_id=bad,
            expected_revision=None,
            status="running",
            state={},
            updated_at=T1,
        ),
        "memory namespace": lambda: s.memory.put(
            tenant_id=ns, memory_id="m9", namespace=bad, expected_revision=None, value=1
        ),
        "artifact media type": lambda: s.artifacts.put(
            tenant_id=ns,
            artifact_id="a9",
            expected_revision=None,
            media_type=bad,
            size=1,
            sha256=SHA,
        ),
        "child id": lambda: s.children.create(tenant_id=ns, record=_child(bad, 0)),
        "session read": lambda: s.sessions.get(tenant_id=ns, session_id=bad),
        "memory read": lambda: s.memory.get(tenant_id=ns, memory_id=bad),
    }
    for what, action in refused.items():
        await _refused(action(), what)
    assert await _snapshot(s, ns) == before


@register
async def check_records_are_required_not_dicts_or_tuples(s: StoreBundle, ns: str) -> None:
    await s.sessions.create(tenant_id=ns, session_id="s")
    await s.sessions.append(
        tenant_id=ns, session_id="s", expected_revision=0, items=[text_item("a", "kept")]
    )
    wrong: dict[str, Any] = {
        "a dict": [{"item_id": "b", "kind": "text", "payload": {}}],
        "a plain tuple": [("b", "text", {}, None)],
        "a short tuple": [("b", "text", {})],
        "one bare record": text_item("b", "x"),
        "a string": "b",
        "None": None,
        "a generator": (item for item in [text_item("b", "x")]),
        "a record then a dict": [text_item("b", "x"), {"item_id": "c"}],
    }
    for what, items in wrong.items():
        error = await expect_error(
            StorageDataError,
            s.sessions.append(tenant_id=ns, session_id="s", expected_revision=1, items=items),
        )
        assert "NewSessionItem" in error.message, what
    loaded = await s.sessions.load(tenant_id=ns, session_id="s")
    assert [item.item_id for item in loaded.items] == ["a"]
    assert loaded.session.revision == 1


@register
async def check_ledger_and_workflow_records_are_required(s: StoreBundle, ns: str) -> None:
    wrong_limits: list[Any] = [{"max_child_runs": 1}, (1, None, None, None), None]
    for limits in wrong_limits:
        error = await expect_error(
            StorageDataError, s.ledgers.create(tenant_id=ns, ledger_id="L", limits=limits)
        )
        assert "BudgetLedgerLimits" in error.message
    assert await s.ledgers.get(tenant_id=ns, ledger_id="L") is None
    run: dict[str, Any] = {
        "schemaVersion": 1,
        "runId": "w1",
        "graphId": "g",
        "revision": 0,
        "status": "running",
        "input": {},
        "createdAt": T0,
        "updatedAt": T0,
    }
    wrong_records: list[Any] = [tuple(run.items()), [run], {**run, "input": {"n": 2**53}}]
    for record in wrong_records:
        await _refused(s.workflows.create_run(tenant_id=ns, record=record), "a workflow run")
    assert await s.workflows.get_run(tenant_id=ns, run_id="w1") is None


@register
async def check_numbers_are_stored_as_every_language_reads_them(s: StoreBundle, ns: str) -> None:
    numbers: dict[str, Any] = {
        "integral": 2.0,
        "negativeZero": -0.0,
        "half": 0.5,
        "maxSafe": MAX_SAFE_INTEGER,
        "minSafe": -MAX_SAFE_INTEGER,
        "maxSafeFloat": float(MAX_SAFE_INTEGER),
        "twoTo53": 2.0**53,
        "big": 4.592740275229641e16,
        "huge": 1e300,
        "tiny": 5e-324,
        "flag": True,
    }
    expected: dict[str, Any] = {
        **numbers,
        "integral": 2,
        "negativeZero": 0,
        "maxSafeFloat": MAX_SAFE_INTEGER,
    }
    await s.sessions.create(tenant_id=ns, session_id="s")
    await s.sessions.append(
        tenant_id=ns,
        session_id="s",
        expected_revision=0,
        items=[NewSessionItem(item_id="n", kind="numbers", payload=dict(numbers))],
    )
    await s.memory.put(
        tenant_id=ns, memory_id="m", namespace="n", expected_revision=None, value=dict(numbers)
    )
    loaded = await s.sessions.load(tenant_id=ns, session_id="s")
    memory = await s.memory.get(tenant_id=ns, memory_id="m")
    assert memory is not None
    for stored in (dict(loaded.items[0].payload), memory.value):
        assert stored == expected
        types = {key: type(value) for key, value in stored.items()}  # type: ignore[union-attr]
        assert types == {key: type(value) for key, value in expected.items()}, types


@register
async def check_values_at_the_depth_limit_round_trip(s: StoreBundle, ns: str) -> None:
    deep = {"deep": _nest(MAX_WIRE_DEPTH - 1)}  # the object is one level: exactly at the limit
    deep_float = {"deep": _nest(MAX_WIRE_DEPTH - 2, [2.0])}  # an integral float at the bottom
    await s.sessions.create(tenant_id=ns, session_id="s")
    await s.sessions.append(
        tenant_id=ns,
        session_id="s",
        expected_revision=0,
        items=[
            NewSessionItem(item_id="d", kind="deep", payload=deep),
            NewSessionItem(item_id="f", kind="deep", payload=deep_float),
        ],
    )
    loaded = await s.sessions.load(tenant_id=ns, session_id="s")
    assert [item.payload for item in loaded.items] == [deep, deep_float]
    record = await s.checkpoints.put(
        tenant_id=ns,
        checkpoint_id="c",
        run_id="r",
        expected_revision=None,
        status="running",
        state=deep,
        updated_at=T0,
    )
    assert record.state == deep
    got = await s.checkpoints.get(tenant_id=ns, checkpoint_id="c")
    assert got is not None
    assert got.state == deep
