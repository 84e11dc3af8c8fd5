"""``StoreRunCheckpointAdapter``: the runtime's checkpoint store over a storage ``CheckpointStore``.

It maps the serialised run state to a checkpoint record (status, interruption, pending side
effects, trace context) and implements the claims of :mod:`actoviq.runtime.stores.claims` with the
record's compare-and-set: a claim reads the record, applies :func:`claim_refusal`, and writes the
new state with its lease at the revision it read; a fenced save or renewal writes only while the
record's ``lease_owner`` is the caller's. A lost race is a refusal, never a silent overwrite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from actoviq.core import Interruption, JsonObject, JsonValue, iso_now
from actoviq.runtime.errors import RunClaimLostError, RunStateStaleError
from actoviq.runtime.stores.claims import RunLease, claim_refusal, state_status
from actoviq.runtime.stores.clock import StoreClock, wall_clock_ms
from actoviq.runtime.stores.codec import PayloadCodec, decode_payload, encode_payload
from actoviq.runtime.stores.errors import StorageConflictError, StorageDataError
from actoviq.runtime.stores.pending import interruptions_of
from actoviq.runtime.stores.protocols import CheckpointStore
from actoviq.runtime.stores.records import CHECKPOINT_STATUSES, CheckpointRecord, CheckpointStatus
from actoviq.runtime.stores.validation import require_json_object, require_key

__all__ = ["DEFAULT_TENANT_ID", "StoreRunCheckpointAdapter"]

DEFAULT_TENANT_ID = "default"
"""The tenant of checkpoints saved without one."""

_PENDING_STATUS = {"committed": "succeeded", "started": "started", "unknown": "unknown"}


def _pending_tools(state: JsonObject) -> list[JsonObject]:
    tools = state.get("pendingTools")
    if type(tools) is list:
        return [t for t in cast(list[JsonValue], tools) if type(t) is dict]
    single = state.get("pendingTool")
    return [single] if type(single) is dict else []


def _tool_state(tool: JsonObject) -> str:
    value = tool.get("state", tool.get("status"))
    return value if isinstance(value, str) else ""


def _call(tool: JsonObject) -> JsonObject:
    call = tool.get("call")
    return call if type(call) is dict else {}


class StoreRunCheckpointAdapter:
    """A :class:`ClaimingRunCheckpointStore` over any :class:`CheckpointStore`.

    ``delete`` writes a ``completed`` tombstone (kept for audit) rather than removing the row.

    Args:
        store: the checkpoint store (owned by the host).
        tenant_id: the tenant every checkpoint is written under (non-empty).
        checkpoint_id: maps a run id to a checkpoint id (default: the run id itself).
        clock: epoch milliseconds, used for lease expiry. By default the store's own clock when
            it is a :class:`StoreClock` (the SQL store on PostgreSQL answers with the database
            server's time, so workers on several machines compare one clock), else this
            machine's wall clock. Inject one in tests.
        payload_codec: encodes the run state at rest (e.g. :class:`FernetPayloadCodec`); the
            record's side-effect summaries then omit tool inputs and outputs. Without it the
            state is stored in clear (resume needs it). States written before a codec was set
            are still read.
    """

    def __init__(
        self,
        store: CheckpointStore,
        *,
        tenant_id: str = DEFAULT_TENANT_ID,
        checkpoint_id: Callable[[str], str] | None = None,
        clock: Callable[[], float] | None = None,
        payload_codec: PayloadCodec | None = None,
    ) -> None:
        if not tenant_id.strip():
            raise StorageDataError("tenantId must be a non-empty string")
        self._codec = payload_codec
        self._store = store
        self._tenant = tenant_id
        self._checkpoint_id: Callable[[str], str] = checkpoint_id or (lambda run_id: run_id)
        self._clock = clock

    @property
    def store(self) -> CheckpointStore:
        """The wrapped checkpoint store (owned by the host)."""
        return self._store

    @staticmethod
    def _check_state(value: object) -> JsonObject:
        state = require_json_object(value, "run state")
        version = state.get("schemaVersion")
        if version not in (1, 2) or type(version) is not int:
            raise StorageDataError(f"Unsupported run state version {version}.")
        for field in ("runId", "agentId", "status"):
            require_key(state.get(field), field)
        if state["status"] not in CHECKPOINT_STATUSES:
            raise StorageDataError(f"Run state status {state['status']!r} is not known.")
        return state

    # -- encoding (overridden by the payload codec) -------------------------------------------

    @property
    def payload_codec(self) -> PayloadCodec | None:
        """The codec run states are stored with (None: in clear)."""
        return self._codec

    def _stored_body(self, state: JsonObject) -> JsonObject:
        """What the record's ``state`` column holds for ``state``."""
        return state if self._codec is None else encode_payload(self._codec, state)

    def _read_body(self, stored: JsonObject) -> JsonObject:
        """The run state held in a record's ``state`` column.

        Raises:
            PayloadCodecError: the state is encoded and the codec cannot read it.
        """
        return decode_payload(self._codec, stored)

    def _effect(self, tool: JsonObject) -> JsonObject:
        call = _call(tool)
        effect: JsonObject = {
            "sideEffectId": call.get("id") or "unknown",
            "kind": f"tool:{call.get('name') or 'unknown'}",
            "status": _PENDING_STATUS.get(_tool_state(tool), "pending"),
        }
        if isinstance(tool.get("idempotencyKey"), str):
            effect["idempotencyKey"] = tool["idempotencyKey"]
        if self._codec is not None:
            return effect  # inputs and outputs live only in the encoded state
        if "input" in call:
            effect["input"] = call["input"]
        result = tool.get("result")
        if type(result) is dict and result.get("type") == "tool_result" and "output" in result:
            effect["output"] = result["output"]
        return effect

    # -- writes -------------------------------------------------------------------------------

    async def _put(
        self,
        body: JsonObject,
        current: CheckpointRecord | None,
        *,
        lease_owner: str | None,
        lease_expires_at: int | None,
    ) -> None:
        run_id = cast(str, body["runId"])
        tools = _pending_tools(body)
        status = cast(CheckpointStatus, body["status"])
        if any(_tool_state(t) == "awaiting_approval" for t in tools):
            status = "awaiting_side_effect"
        interruption: JsonObject | None = None
        waiting = [t for t in tools if isinstance(t.get("interruptionId"), str)]
        if body["status"] == "interrupted" and waiting:
            call = _call(waiting[0])
            interruption = {
                "reason": "tool_approval",
                "resumable": True,
                "requestedAt": iso_now(),
                "details": {
                    "interruptionId": waiting[0]["interruptionId"],
                    "callId": call.get("id"),
                    "toolName": call.get("name"),
                },
            }
        session_id = body.get("sessionId")
        await self._store.put(
            tenant_id=self._tenant,
            checkpoint_id=self._checkpoint_id(run_id),
            run_id=run_id,
            expected_revision=None if current is None else current.revision,
            status=status,
            state=self._stored_body(body),
            session_id=session_id if isinstance(session_id, str) and session_id else None,
            interruption=interruption,
            pending_side_effects=[self._effect(t) for t in tools if t.get("effect") != "read"],
            trace_context=self._trace(body),
            lease_owner=lease_owner,
            lease_expires_at=lease_expires_at,
        )

    async def _get(self, run_id: str) -> CheckpointRecord | None:
        return await self._store.get(
            tenant_id=self._tenant, checkpoint_id=self._checkpoint_id(run_id)
        )

    async def _now(self) -> int:
        """The time leases are compared against (see ``clock``)."""
        if self._clock is not None:
            return int(self._clock())
        store = self._store
        if isinstance(store, StoreClock):
            return await store.clock_ms()
        return wall_clock_ms()

    async def save(self, state: JsonObject, *, lease: RunLease | None = None) -> None:
        """See :meth:`ClaimingRunCheckpointStore.save` (without ``lease``: last writer wins)."""
        body = self._check_state(state)
        run_id = cast(str, body["runId"])
        current = await self._get(run_id)
        if lease is None:
            await self._put(body, current, lease_owner=None, lease_expires_at=None)
            return
        self._fence(run_id, current, lease)
        assert current is not None
        running = body["status"] == "running"
        try:
            # A save keeps the lease's expiry (renewal is the heartbeat's job, one clock read per
            # beat instead of one per save); a terminal save releases the lease.
            await self._put(
                body,
                current,
                lease_owner=lease.owner if running else None,
                lease_expires_at=current.lease_expires_at if running else None,
            )
        except StorageConflictError:
            raise await self._lost(run_id) from None

    async def claim(
        self, state: JsonObject, *, expected: JsonObject | None, lease: RunLease
    ) -> None:
        """See :meth:`ClaimingRunCheckpointStore.claim`."""
        body = self._check_state(state)
        running = body["status"] == "running"
        if expected is not None and not running:
            raise StorageDataError("A resume claim writes a running state.")
        run_id = cast(str, body["runId"])
        current = await self._get(run_id)
        now = await self._now()
        if current is not None:
            refusal = claim_refusal(
                run_id,
                self._read_body(current.state),
                expected=expected,
                lease_owner=current.lease_owner,
                lease_expires_at=current.lease_expires_at,
                owner=lease.owner,
                now_ms=now,
                completed=current.status == "completed",
            )
            if refusal is not None:
                raise refusal
        try:
            await self._put(
                body,
                current,
                lease_owner=lease.owner if running else None,
                lease_expires_at=now + lease.duration_ms if running else None,
            )
        except StorageConflictError:
            # Another execution wrote between our read and our write: it got the run.
            latest = await self._get(run_id)
            raise RunStateStaleError(
                run_id,
                stored_status=self._status(latest),
                reason="claimed",
                details={"leaseOwner": None if latest is None else latest.lease_owner},
            ) from None

    async def renew(self, run_id: str, *, lease: RunLease) -> None:
        """See :meth:`ClaimingRunCheckpointStore.renew`."""
        current = await self._get(require_key(run_id, "runId"))
        self._fence(run_id, current, lease)
        assert current is not None
        try:
            await self._store.put(
                tenant_id=self._tenant,
                checkpoint_id=current.checkpoint_id,
                run_id=current.run_id,
                expected_revision=current.revision,
                status=current.status,
                state=current.state,
                session_id=current.session_id,
                interruption=current.interruption,
                pending_side_effects=current.pending_side_effects,
                trace_context=current.trace_context,
                lease_owner=lease.owner,
                lease_expires_at=await self._now() + lease.duration_ms,
            )
        except StorageConflictError:
            raise await self._lost(run_id) from None

    def _fence(self, run_id: str, current: CheckpointRecord | None, lease: RunLease) -> None:
        if current is None or current.lease_owner != lease.owner:
            raise RunClaimLostError(
                run_id,
                stored_status=self._status(current),
                owner=None if current is None else current.lease_owner,
            )

    async def _lost(self, run_id: str) -> RunClaimLostError:
        latest = await self._get(run_id)
        return RunClaimLostError(
            run_id,
            stored_status=self._status(latest),
            owner=None if latest is None else latest.lease_owner,
        )

    def _status(self, record: CheckpointRecord | None) -> str | None:
        """The run status a record stands for (a tombstone is ``completed``)."""
        if record is None:
            return None
        if record.status == "completed":
            return "completed"
        return state_status(self._read_body(record.state))

    @staticmethod
    def _trace(state: JsonObject) -> JsonObject | None:
        trace = state.get("trace")
        if type(trace) is not dict:
            return None
        trace_id, span_id = trace.get("traceId"), trace.get("spanId")
        if not (isinstance(trace_id, str) and trace_id and isinstance(span_id, str) and span_id):
            return None
        context: JsonObject = {"traceId": trace_id, "spanId": span_id}
        parent = trace.get("parentSpanId")
        if isinstance(parent, str) and parent:
            context["parentSpanId"] = parent
        return context

    # -- reads and tombstones -----------------------------------------------------------------

    async def load(self, run_id: str) -> JsonObject | None:
        """See :meth:`RunCheckpointStore.load`."""
        record = await self._get(require_key(run_id, "runId"))
        return None if record is None else self._check_state(self._read_body(record.state))

    async def delete(self, run_id: str) -> None:
        """Write a ``completed`` tombstone (no-op when absent or already completed)."""
        current = await self._get(require_key(run_id, "runId"))
        if current is None or current.status == "completed":
            return
        await self._store.put(
            tenant_id=self._tenant,
            checkpoint_id=current.checkpoint_id,
            run_id=current.run_id,
            expected_revision=current.revision,
            status="completed",
            state=current.state,
            session_id=current.session_id,
            pending_side_effects=current.pending_side_effects,
            trace_context=current.trace_context,
        )

    async def pending(self, run_id: str) -> tuple[Interruption, ...]:
        """What the run waits for: the open interruptions of its stored state.

        Empty when the run is unknown or not interrupted. Build ``InterruptionDecision`` values
        from them and pass them with :meth:`load`'s state to ``AgentRuntime.resume``.

        Raises:
            StorageDataError: the stored state is malformed.
        """
        state = await self.load(run_id)
        return () if state is None else interruptions_of(state)

    async def aclose(self) -> None:
        """No-op: the store belongs to the host."""
