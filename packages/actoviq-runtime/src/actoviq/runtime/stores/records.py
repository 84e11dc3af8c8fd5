"""The values store protocols take and return (frozen attrs classes; JSON payloads are plain JSON).

The two journal-entry records, :class:`NewSessionItem` and :class:`StoredSessionItem`, are
``NamedTuple``s instead: a session load builds one per stored item (100k for a long session), and a
tuple is built three times faster than a frozen attrs instance. They are immutable all the same.

Revisions are safe integers ``>= 0``; timestamps are ISO-8601 UTC strings with milliseconds and
a ``Z`` suffix (:func:`actoviq.core.iso_now`). Every returned value is a private copy: mutating it
never changes what the store holds.
"""

from __future__ import annotations

from typing import Literal, NamedTuple, TypeAlias

import attrs

from actoviq.core import CanonicalItem, JsonObject, JsonValue

__all__ = [
    "CHECKPOINT_STATUSES",
    "DURABLE_CHILD_STATUSES",
    "ArtifactRecord",
    "CheckpointRecord",
    "CheckpointStatus",
    "DurableChildRow",
    "MemoryRecord",
    "NewSessionItem",
    "RuntimeSessionLoad",
    "SessionLoad",
    "SessionRecord",
    "SessionSnapshot",
    "StoredSessionItem",
]

CheckpointStatus: TypeAlias = Literal[
    "running", "interrupted", "awaiting_side_effect", "completed", "failed", "cancelled"
]
CHECKPOINT_STATUSES: frozenset[str] = frozenset(
    {"running", "interrupted", "awaiting_side_effect", "completed", "failed", "cancelled"}
)
DURABLE_CHILD_STATUSES: frozenset[str] = frozenset(
    {"queued", "running", "completed", "failed", "cancelled", "needs_reconciliation"}
)


@attrs.frozen(kw_only=True)
class SessionRecord:
    """Session metadata: the CAS revision and the last journal sequence.

    ``revision`` grows by exactly one per append or compaction, whatever the item count;
    ``last_sequence`` is the sequence of the newest journal item (0 when empty).
    """

    tenant_id: str
    session_id: str
    revision: int
    metadata: JsonObject
    created_at: str
    updated_at: str
    last_sequence: int


class NewSessionItem(NamedTuple):
    """One journal entry to append (build it with keywords).

    Attributes:
        item_id: unique within the session; re-appending the same ids with identical content is a
            no-op (idempotent retry after a lost acknowledgement).
        kind: the canonical item ``type`` (or ``legacy_run`` etc. for audit-only entries).
        payload: the JSON object stored (a canonical item's wire form for transcript entries).
        created_at: defaults to the append time.
    """

    item_id: str
    kind: str
    payload: JsonObject
    created_at: str | None = None


class StoredSessionItem(NamedTuple):
    """One journal entry as stored, with its 1-based sequence."""

    sequence: int
    item_id: str
    kind: str
    payload: JsonObject
    created_at: str


@attrs.frozen(kw_only=True)
class SessionSnapshot:
    """A compaction of the journal through ``through_sequence`` (the journal itself is kept)."""

    through_sequence: int
    revision: int
    state: JsonObject
    created_at: str


@attrs.frozen(kw_only=True)
class SessionLoad:
    """A consistent read: the session row, the newest snapshot (if used) and the tail after it."""

    session: SessionRecord
    snapshot: SessionSnapshot | None
    items: tuple[StoredSessionItem, ...]


@attrs.frozen(kw_only=True)
class CheckpointRecord:
    """A run checkpoint; ``state`` is the runtime's serialised run state (a JSON object)."""

    tenant_id: str
    checkpoint_id: str
    run_id: str
    session_id: str | None
    revision: int
    status: CheckpointStatus
    state: JsonObject
    interruption: JsonObject | None
    pending_side_effects: tuple[JsonObject, ...]
    trace_context: JsonObject | None
    created_at: str
    updated_at: str


@attrs.frozen(kw_only=True)
class MemoryRecord:
    """A revisable JSON value in a namespace."""

    tenant_id: str
    memory_id: str
    namespace: str
    revision: int
    value: JsonValue
    metadata: JsonObject
    created_at: str
    updated_at: str


@attrs.frozen(kw_only=True)
class ArtifactRecord:
    """Artifact metadata; the bytes live elsewhere (``uri``), never in prompts or sessions."""

    tenant_id: str
    artifact_id: str
    revision: int
    media_type: str
    size: int
    sha256: str
    uri: str | None
    metadata: JsonObject
    created_at: str
    updated_at: str


@attrs.frozen(kw_only=True)
class DurableChildRow:
    """A durable child record (orchestration's JSON, camelCase) and its indexed columns.

    The columns are read from the record: ``childId``, ``revision`` (the fencing token),
    ``status``, ``parent.runId``, ``leaseOwner``, ``leaseExpiresAt`` and ``heartbeatAt`` (both
    epoch milliseconds), ``createdAt`` and ``updatedAt``.
    """

    tenant_id: str
    child_id: str
    parent_run_id: str | None
    revision: int
    status: str
    lease_owner: str | None
    lease_expires_at: int | None
    heartbeat_at: int | None
    created_at: str
    updated_at: str
    record: JsonObject


@attrs.frozen(kw_only=True)
class RuntimeSessionLoad:
    """What the runtime gets for a session: the transcript and the CAS revision (a string)."""

    items: tuple[CanonicalItem, ...]
    revision: str
