"""Conformance checks of tenant isolation and the runtime-facing adapters."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from actoviq.core import (
    JsonObject,
    TextItem,
    ToolCallItem,
    ToolResultItem,
)
from actoviq.runtime.errors import RunClaimLostError, RunStateStaleError
from actoviq.runtime.stores.adapters import StoreRunCheckpointAdapter, StoreRuntimeSessionAdapter
from actoviq.runtime.stores.claims import RunLease
from actoviq.runtime.stores.clock import StoreClock
from actoviq.runtime.stores.codec import PayloadCodecError
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
from actoviq.runtime.stores.protocols import SessionChangeStore

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


def _run_state(run_id: str, status: str, revision: int, span: str = "sp") -> dict[str, Any]:
    return {
        "schemaVersion": 2,
        "runId": run_id,
        "agentId": "a",
        "agentConfigDigest": "d",
        "status": status,
        "trace": {"runId": run_id, "traceId": "t", "spanId": span},
        "stateRevision": revision,
        "pendingTools": [],
    }


@register
async def check_run_checkpoint_claims(s: StoreBundle, ns: str) -> None:
    now = [1_000_000.0]
    adapter = StoreRunCheckpointAdapter(s.checkpoints, tenant_id=ns, clock=lambda: now[0])
    one, two = RunLease(owner="one", duration_ms=1000), RunLease(owner="two", duration_ms=1000)
    # A fresh run claims with its first save; the record carries the lease.
    await adapter.claim(_run_state("r", "running", 1), expected=None, lease=one)
    record = await s.checkpoints.get(tenant_id=ns, checkpoint_id="r")
    assert record is not None
    assert (record.lease_owner, record.lease_expires_at) == ("one", 1_001_000)
    # Nobody else may take a live claim, not even with the current state.
    held = await expect_error(
        RunStateStaleError,
        adapter.claim(
            _run_state("r", "running", 2), expected=_run_state("r", "running", 1), lease=two
        ),
    )
    assert (held.reason, held.stored_status, held.retryable) == ("claimed", "running", True)
    # The holder's saves are fenced on its owner and renew the lease; renew extends it.
    now[0] += 500
    await adapter.save(_run_state("r", "running", 2), lease=one)
    await adapter.renew("r", lease=one)
    record = await s.checkpoints.get(tenant_id=ns, checkpoint_id="r")
    assert record is not None
    assert (record.lease_owner, record.lease_expires_at) == ("one", 1_001_500)
    await expect_error(RunClaimLostError, adapter.save(_run_state("r", "running", 3), lease=two))
    await expect_error(RunClaimLostError, adapter.renew("r", lease=two))
    # After expiry, only the newest state may be claimed; the old holder is fenced out.
    now[0] += 1001
    stale = await expect_error(
        RunStateStaleError,
        adapter.claim(
            _run_state("r", "running", 9), expected=_run_state("r", "running", 1), lease=two
        ),
    )
    assert (stale.reason, stale.stored_status) == ("superseded", "running")
    await expect_error(
        RunStateStaleError,
        adapter.claim(
            _run_state("r", "running", 9),
            expected=_run_state("r", "running", 2, span="other"),
            lease=two,
        ),
    )
    await adapter.claim(
        _run_state("r", "running", 3), expected=_run_state("r", "running", 2), lease=two
    )
    lost = await expect_error(
        RunClaimLostError, adapter.save(_run_state("r", "running", 3), lease=one)
    )
    assert lost.code == "RUN_CLAIM_LOST"
    assert await adapter.load("r") == _run_state("r", "running", 3)
    # A terminal save releases the lease; a completed run is never claimed again.
    await adapter.save(_run_state("r", "interrupted", 4), lease=two)
    record = await s.checkpoints.get(tenant_id=ns, checkpoint_id="r")
    assert record is not None
    assert (record.status, record.lease_owner, record.lease_expires_at) == (
        "interrupted",
        None,
        None,
    )
    await adapter.claim(
        _run_state("r", "running", 5), expected=_run_state("r", "interrupted", 4), lease=one
    )
    await adapter.save(_run_state("r", "completed", 6), lease=one)
    done = await expect_error(
        RunStateStaleError,
        adapter.claim(
            _run_state("r", "running", 7), expected=_run_state("r", "completed", 6), lease=two
        ),
    )
    assert (done.reason, done.stored_status, done.retryable) == ("completed", "completed", False)
    # A fresh run may reuse the id of a run nobody holds.
    await adapter.claim(_run_state("r", "running", 1, span="new"), expected=None, lease=two)


@register
async def check_run_checkpoint_claim_race(s: StoreBundle, ns: str) -> None:
    adapter = StoreRunCheckpointAdapter(s.checkpoints, tenant_id=ns)
    await adapter.save(_run_state("race", "interrupted", 4))
    resumed = _run_state("race", "interrupted", 4)
    leases = [RunLease(owner=f"w{k}", duration_ms=60_000) for k in range(8)]
    outcomes = await asyncio.gather(
        *(
            adapter.claim(_run_state("race", "running", 5), expected=resumed, lease=lease)
            for lease in leases
        ),
        return_exceptions=True,
    )
    winners = [o for o in outcomes if o is None]
    refused = [o for o in outcomes if isinstance(o, RunStateStaleError)]
    assert len(winners) == 1, outcomes
    assert len(refused) == 7, outcomes
    record = await s.checkpoints.get(tenant_id=ns, checkpoint_id="race")
    assert record is not None
    assert record.lease_owner == leases[outcomes.index(None)].owner


class _Base64Codec:
    """A reversible, keyless codec: enough to check how adapters use the hook."""

    @property
    def id(self) -> str:
        return "b64-test"

    def encode(self, data: bytes) -> str:
        return base64.b64encode(data[::-1]).decode("ascii")

    def decode(self, text: str) -> bytes:
        try:
            return base64.b64decode(text.encode("ascii"), validate=True)[::-1]
        except (ValueError, UnicodeEncodeError):
            raise PayloadCodecError("not a b64-test payload") from None


@register
async def check_run_checkpoint_payload_codec(s: StoreBundle, ns: str) -> None:
    adapter = StoreRunCheckpointAdapter(s.checkpoints, tenant_id=ns, payload_codec=_Base64Codec())
    state: JsonObject = {
        **_run_state("enc", "interrupted", 3),
        "pendingTools": [
            {
                "call": {"type": "tool_call", "id": "c1", "name": "pay", "input": {"iban": "X-9"}},
                "effect": "side-effect",
                "state": "awaiting_approval",
                "interruptionId": "i-1",
            }
        ],
    }
    await adapter.save(state)
    record = await s.checkpoints.get(tenant_id=ns, checkpoint_id="enc")
    assert record is not None
    assert set(record.state) == {"$codec", "payload"}
    assert "X-9" not in repr(record)
    assert record.pending_side_effects == (
        {"sideEffectId": "c1", "kind": "tool:pay", "status": "pending"},
    )
    assert await adapter.load("enc") == state
    lease = RunLease(owner="w", duration_ms=1000)
    await adapter.claim(_run_state("enc", "running", 4), expected=state, lease=lease)
    await expect_error(
        PayloadCodecError, StoreRunCheckpointAdapter(s.checkpoints, tenant_id=ns).load("enc")
    )


@register
async def check_run_checkpoint_lease_uses_the_store_clock(s: StoreBundle, ns: str) -> None:
    store = s.checkpoints
    assert isinstance(store, StoreClock), "checkpoint stores tell the time leases compare with"
    adapter = StoreRunCheckpointAdapter(store, tenant_id=ns)
    before = await store.clock_ms()
    await adapter.claim(
        _run_state("clock", "running", 1), expected=None, lease=RunLease(owner="w", duration_ms=5)
    )
    after = await store.clock_ms()
    record = await store.get(tenant_id=ns, checkpoint_id="clock")
    assert record is not None
    assert record.lease_expires_at is not None
    assert before + 5 <= record.lease_expires_at <= after + 5


@register
async def check_runtime_session_cache_under_other_writers(s: StoreBundle, ns: str) -> None:
    """The adapter's decoded-history cache follows other writers, compactions and conflicts."""
    ours = StoreRuntimeSessionAdapter(s.sessions)
    theirs = StoreRuntimeSessionAdapter(s.sessions)
    whole = StoreRuntimeSessionAdapter(s.sessions, history_cache_items=0)

    async def turn(adapter: StoreRuntimeSessionAdapter, text: str) -> str:
        loaded = await adapter.load(tenant_id=ns, session_id="s")
        items = [TextItem(role="user", text=text), TextItem(role="assistant", text=f"re {text}")]
        return await adapter.append(
            tenant_id=ns, session_id="s", items=items, expected_revision=loaded.revision
        )

    async def same() -> None:
        mine = await ours.load(tenant_id=ns, session_id="s")
        truth = await whole.load(tenant_id=ns, session_id="s")
        assert (mine.items, mine.revision) == (truth.items, truth.revision)

    await turn(ours, "a")
    held = await ours.load(tenant_id=ns, session_id="s")
    await turn(theirs, "b")  # another writer: ours reads the new turn
    await same()
    if isinstance(s.sessions, SessionChangeStore):
        changes = await s.sessions.load_changes(tenant_id=ns, session_id="s", after_sequence=2)
        assert [entry.sequence for entry in changes.items] == [3, 4]
        assert [entry.payload["text"] for entry in changes.items] == ["b", "re b"]
        assert changes.session.last_sequence == 4
        assert changes.snapshot_revision is None
        await expect_error(
            StorageError,
            s.sessions.load_changes(tenant_id=ns, session_id="missing", after_sequence=0),
        )
    await expect_error(  # a stale append conflicts and drops the cached entry
        SessionRevisionConflictError,
        ours.append(
            tenant_id=ns,
            session_id="s",
            items=[TextItem(role="user", text="stale")],
            expected_revision=held.revision,
        ),
    )
    assert (ns, "s") not in ours.history_cache
    await same()
    await theirs.compact(tenant_id=ns, session_id="s")  # compacted elsewhere: reload whole
    await same()
    await turn(theirs, "c")
    await same()
    await turn(ours, "d")
    await ours.compact(tenant_id=ns, session_id="s")
    await same()
    if isinstance(s.sessions, SessionChangeStore):
        changes = await s.sessions.load_changes(tenant_id=ns, session_id="s", after_sequence=8)
        assert len(changes.items) == 0
        assert changes.snapshot_revision == changes.session.revision
    texts = [
        item.text
        for item in (await ours.load(tenant_id=ns, session_id="s")).items
        if isinstance(item, TextItem)
    ]
    assert texts == ["a", "re a", "b", "re b", "c", "re c", "d", "re d"]
