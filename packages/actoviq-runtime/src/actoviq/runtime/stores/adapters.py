"""Runtime-facing adapters over the storage protocols (spec 04 §3.13.1-3.13.2, §8.1.8).

The adapters never own the store they wrap: ``aclose()`` is a no-op and the host closes the store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from actoviq.core import (
    ITEM_TYPES,
    CanonicalItem,
    ItemValidationError,
    JsonObject,
    JsonValue,
    UnknownItemTypeError,
    iso_now,
    item_from_json,
    item_to_json,
)
from actoviq.runtime.stores.errors import SessionRevisionConflictError, StorageDataError
from actoviq.runtime.stores.protocols import CheckpointStore, SessionStore
from actoviq.runtime.stores.records import (
    CHECKPOINT_STATUSES,
    CheckpointStatus,
    NewSessionItem,
    RuntimeSessionLoad,
    SessionRecord,
    StoredSessionItem,
)
from actoviq.runtime.stores.validation import MAX_SAFE_INTEGER, require_json_object, require_key

__all__ = [
    "AUDIT_ONLY_KINDS",
    "DEFAULT_TENANT_ID",
    "StoreRunCheckpointAdapter",
    "StoreRuntimeSessionAdapter",
    "parse_session_revision",
]

DEFAULT_TENANT_ID = "default"
AUDIT_ONLY_KINDS: frozenset[str] = frozenset({"legacy_run", "run"})
"""Journal kinds kept for audit and never shown to the model."""


def parse_session_revision(text: object) -> int:
    """Parse a runtime revision string (a decimal safe integer ``>= 0``).

    Raises:
        StorageDataError: ``Invalid session revision "x".``
    """
    if type(text) is not str or not text.isascii() or not text.isdigit():
        raise StorageDataError(f'Invalid session revision "{text}".')
    value = int(text)
    if value > MAX_SAFE_INTEGER:
        raise StorageDataError(f'Invalid session revision "{text}".')
    return value


class StoreRuntimeSessionAdapter:
    """A :class:`RuntimeSessionStore` over any :class:`SessionStore`.

    ``load`` returns the newest snapshot's items (``state["items"]``) plus the tail, so a compacted
    session never reads its full history; journal entries of kind ``legacy_run``/``run`` and
    ``raw`` items from the ``legacy`` provider stay in the journal but not in the transcript.
    """

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    @property
    def store(self) -> SessionStore:
        """The wrapped session store (owned by the host)."""
        return self._store

    async def _ensure(self, tenant_id: str, session_id: str) -> SessionRecord:
        record = await self._store.get(tenant_id=tenant_id, session_id=session_id)
        if record is not None:
            return record
        try:
            return await self._store.create(tenant_id=tenant_id, session_id=session_id)
        except SessionRevisionConflictError:
            # A concurrent creator won the race; its session is as good as ours.
            again = await self._store.get(tenant_id=tenant_id, session_id=session_id)
            if again is None:
                raise
            return again

    async def load(self, *, tenant_id: str, session_id: str) -> RuntimeSessionLoad:
        """See :meth:`RuntimeSessionStore.load`."""
        await self._ensure(tenant_id, session_id)
        loaded = await self._store.load(tenant_id=tenant_id, session_id=session_id)
        items: list[CanonicalItem] = []
        if loaded.snapshot is not None:
            items.extend(self._snapshot_items(loaded.snapshot.state))
        for entry in loaded.items:
            items.extend(self.transcript_items(entry))
        return RuntimeSessionLoad(items=tuple(items), revision=str(loaded.session.revision))

    def _snapshot_items(self, state: JsonObject) -> list[CanonicalItem]:
        raw = state.get("items")
        if type(raw) is not list:
            raise StorageDataError("session snapshot state must hold an 'items' list")
        return [self._decode(value, "snapshot item") for value in cast(list[JsonValue], raw)]

    @staticmethod
    def _decode(value: JsonValue, label: str) -> CanonicalItem:
        try:
            return item_from_json(value)
        except (ItemValidationError, UnknownItemTypeError) as error:
            raise StorageDataError(f"{label} is not a canonical item: {error}") from None

    def transcript_items(self, entry: StoredSessionItem) -> list[CanonicalItem]:
        """Map one journal entry to transcript items (subclasses add legacy conversions)."""
        if entry.kind in AUDIT_ONLY_KINDS:
            return []
        payload_type = entry.payload.get("type")
        if not isinstance(payload_type, str) or payload_type not in ITEM_TYPES:
            raise StorageDataError(
                f"Session item {entry.item_id!r} of kind {entry.kind!r} is not a canonical item."
            )
        if payload_type == "raw" and entry.payload.get("provider") == "legacy":
            return []
        return [self._decode(entry.payload, f"Session item {entry.item_id!r}")]

    async def append(
        self,
        *,
        tenant_id: str,
        session_id: str,
        items: Sequence[CanonicalItem],
        expected_revision: str,
    ) -> str:
        """See :meth:`RuntimeSessionStore.append`."""
        expected = parse_session_revision(expected_revision)
        stamp = iso_now()
        # Ids derive from the expected revision and position (provider ids repeat across turns):
        # retrying the same append after a lost acknowledgement replays idempotently, while a
        # different append at the same revision is an ordinary revision conflict.
        entries = [
            NewSessionItem(
                item_id=f"turn-{expected}:{index}",
                kind=item.type,
                payload=item_to_json(item),
                created_at=stamp,
            )
            for index, item in enumerate(items)
        ]
        if not entries:
            return expected_revision
        if expected == 0:
            await self._ensure(tenant_id, session_id)
        record = await self._store.append(
            tenant_id=tenant_id,
            session_id=session_id,
            expected_revision=expected,
            items=entries,
            updated_at=stamp,
        )
        return str(record.revision)

    async def compact(self, *, tenant_id: str, session_id: str) -> str:
        """Snapshot the transcript so later loads read only the tail; returns the new revision."""
        record = await self._ensure(tenant_id, session_id)
        loaded = await self.load(tenant_id=tenant_id, session_id=session_id)
        snapshot = await self._store.compact(
            tenant_id=tenant_id,
            session_id=session_id,
            expected_revision=record.revision,
            through_sequence=record.last_sequence,
            state={"items": [item_to_json(item) for item in loaded.items]},
        )
        return str(snapshot.revision)

    async def aclose(self) -> None:
        """No-op: the store belongs to the host."""


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
    """A :class:`RunCheckpointStore` over any :class:`CheckpointStore`.

    ``delete`` writes a ``completed`` tombstone (kept for audit) rather than removing the row.

    Args:
        store: the checkpoint store (owned by the host).
        tenant_id: the tenant every checkpoint is written under (non-empty).
        checkpoint_id: maps a run id to a checkpoint id (default: the run id itself).
    """

    def __init__(
        self,
        store: CheckpointStore,
        *,
        tenant_id: str = DEFAULT_TENANT_ID,
        checkpoint_id: Callable[[str], str] | None = None,
    ) -> None:
        if not tenant_id.strip():
            raise StorageDataError("tenantId must be a non-empty string")
        self._store = store
        self._tenant = tenant_id
        self._checkpoint_id: Callable[[str], str] = checkpoint_id or (lambda run_id: run_id)

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

    async def save(self, state: JsonObject) -> None:
        """See :meth:`RunCheckpointStore.save`."""
        body = self._check_state(state)
        run_id = cast(str, body["runId"])
        checkpoint_id = self._checkpoint_id(run_id)
        current = await self._store.get(tenant_id=self._tenant, checkpoint_id=checkpoint_id)
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
            checkpoint_id=checkpoint_id,
            run_id=run_id,
            expected_revision=None if current is None else current.revision,
            status=status,
            state=body,
            session_id=session_id if isinstance(session_id, str) and session_id else None,
            interruption=interruption,
            pending_side_effects=[self._effect(t) for t in tools if t.get("effect") != "read"],
            trace_context=self._trace(body),
        )

    @staticmethod
    def _effect(tool: JsonObject) -> JsonObject:
        call = _call(tool)
        effect: JsonObject = {
            "sideEffectId": call.get("id") or "unknown",
            "kind": f"tool:{call.get('name') or 'unknown'}",
            "status": _PENDING_STATUS.get(_tool_state(tool), "pending"),
        }
        if isinstance(tool.get("idempotencyKey"), str):
            effect["idempotencyKey"] = tool["idempotencyKey"]
        if "input" in call:
            effect["input"] = call["input"]
        result = tool.get("result")
        if type(result) is dict and result.get("type") == "tool_result" and "output" in result:
            effect["output"] = result["output"]
        return effect

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

    async def load(self, run_id: str) -> JsonObject | None:
        """See :meth:`RunCheckpointStore.load`."""
        record = await self._store.get(
            tenant_id=self._tenant, checkpoint_id=self._checkpoint_id(require_key(run_id, "runId"))
        )
        return None if record is None else self._check_state(record.state)

    async def delete(self, run_id: str) -> None:
        """Write a ``completed`` tombstone (no-op when absent or already completed)."""
        checkpoint_id = self._checkpoint_id(require_key(run_id, "runId"))
        current = await self._store.get(tenant_id=self._tenant, checkpoint_id=checkpoint_id)
        if current is None or current.status == "completed":
            return
        await self._store.put(
            tenant_id=self._tenant,
            checkpoint_id=checkpoint_id,
            run_id=current.run_id,
            expected_revision=current.revision,
            status="completed",
            state=current.state,
            session_id=current.session_id,
            pending_side_effects=current.pending_side_effects,
            trace_context=current.trace_context,
        )

    async def aclose(self) -> None:
        """No-op: the store belongs to the host."""
