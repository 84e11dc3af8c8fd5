"""The values store protocols take and return (frozen attrs classes; JSON payloads are plain JSON).

The two journal-entry records, :class:`NewSessionItem` and :class:`StoredSessionItem`, are
``NamedTuple``s instead: a session load builds one per stored item (100k for a long session), and a
tuple is built three times faster than a frozen attrs instance. They are immutable all the same.

Revisions are safe integers ``>= 0``; timestamps are ISO-8601 UTC strings with milliseconds and
a ``Z`` suffix (:func:`actoviq.core.iso_now`). Every returned value is a private copy: mutating it
never changes what the store holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import Any, Literal, NamedTuple, TypeAlias, cast, overload

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
    "SessionChanges",
    "SessionLoad",
    "SessionRecord",
    "SessionSnapshot",
    "StoredItems",
    "StoredSessionItem",
]

CheckpointStatus: TypeAlias = Literal[
    "running", "interrupted", "awaiting_side_effect", "completed", "failed", "cancelled"
]
"""The status of a stored run checkpoint."""
CHECKPOINT_STATUSES: frozenset[str] = frozenset(
    {"running", "interrupted", "awaiting_side_effect", "completed", "failed", "cancelled"}
)
"""Every `CheckpointStatus` value."""
DURABLE_CHILD_STATUSES: frozenset[str] = frozenset(
    {
        "queued",
        "running",
        "interrupted",
        "completed",
        "failed",
        "cancelled",
        "needs_reconciliation",
    }
)
"""Every status a durable child-run record may have."""


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


_NEW_RECORD = cast(
    "Any",
    tuple.__new__,  # pyright: ignore[reportUnknownMemberType]
)


class StoredItems(Sequence[StoredSessionItem]):
    """Journal entries held as columns; each :class:`StoredSessionItem` is built when read.

    A long session load returns tens of thousands of entries. Holding them as five columns (a
    sequence range and four tuples) instead of one record object each makes the load cheaper and,
    above all, leaves nothing for the garbage collector to track: 100k record tuples kept alive
    would make every later full collection of the process walk them. Indexing, slicing and
    iteration build records on the fly (iteration in C); the columns are there for bulk readers.

    It compares equal to any sequence of the same records (a ``tuple`` of them included).
    """

    __slots__ = ("_created_at", "_item_ids", "_kinds", "_payloads", "_sequences")

    def __init__(
        self,
        *,
        first_sequence: int,
        item_ids: Sequence[str],
        kinds: Sequence[str],
        payloads: Sequence[JsonObject],
        created_at: Sequence[str],
    ) -> None:
        count = len(item_ids)
        if not len(kinds) == len(payloads) == len(created_at) == count:
            raise ValueError("StoredItems columns must have the same length")
        self._sequences = range(first_sequence, first_sequence + count)
        self._item_ids = tuple(item_ids)
        self._kinds = tuple(kinds)
        self._payloads = tuple(payloads)
        self._created_at = tuple(created_at)

    @property
    def sequences(self) -> range:
        """The entries' sequences (consecutive)."""
        return self._sequences

    @property
    def item_ids(self) -> tuple[str, ...]:
        """The entries' ids, in order."""
        return self._item_ids

    @property
    def kinds(self) -> tuple[str, ...]:
        """The entries' kinds, in order."""
        return self._kinds

    @property
    def payloads(self) -> tuple[JsonObject, ...]:
        """The entries' payloads, in order (this load's private copies)."""
        return self._payloads

    @property
    def created_at(self) -> tuple[str, ...]:
        """The entries' timestamps, in order."""
        return self._created_at

    def __len__(self) -> int:
        return len(self._item_ids)

    @overload
    def __getitem__(self, index: int) -> StoredSessionItem: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[StoredSessionItem, ...]: ...

    def __getitem__(self, index: int | slice) -> StoredSessionItem | tuple[StoredSessionItem, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        return StoredSessionItem(
            self._sequences[index],
            self._item_ids[index],
            self._kinds[index],
            self._payloads[index],
            self._created_at[index],
        )

    def __iter__(self) -> Iterator[StoredSessionItem]:
        columns = zip(
            self._sequences,
            self._item_ids,
            self._kinds,
            self._payloads,
            self._created_at,
            strict=True,
        )
        return cast(
            Iterator[StoredSessionItem], map(_NEW_RECORD, repeat(StoredSessionItem), columns)
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredItems):
            return (
                self._sequences == other._sequences
                and self._item_ids == other._item_ids
                and self._kinds == other._kinds
                and self._payloads == other._payloads
                and self._created_at == other._created_at
            )
        if isinstance(other, Sequence):
            return tuple(self) == tuple(cast(Sequence[object], other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # payloads are dicts

    def __repr__(self) -> str:
        return f"StoredItems({tuple(self)!r})"


@attrs.frozen(kw_only=True)
class SessionLoad:
    """A consistent read: the session row, the newest snapshot (if used) and the tail after it.

    ``items`` is a sequence of :class:`StoredSessionItem` (the SQL stores return
    :class:`StoredItems`, whose columns build records only when read).
    """

    session: SessionRecord
    snapshot: SessionSnapshot | None
    items: Sequence[StoredSessionItem]


@attrs.frozen(kw_only=True)
class SessionChanges:
    """What :meth:`SessionChangeStore.load_changes` read: the row, the tail, the newest snapshot.

    ``items`` are the journal entries after the sequence asked for (snapshots ignored);
    ``snapshot_revision`` is the session revision at which the newest snapshot was written (None
    without a snapshot), so a reader that knows the session at revision ``r`` can tell whether
    it was compacted since (``snapshot_revision > r``).
    """

    session: SessionRecord
    items: Sequence[StoredSessionItem]
    snapshot_revision: int | None


@attrs.frozen(kw_only=True)
class CheckpointRecord:
    """A run checkpoint; ``state`` is the runtime's serialised run state (a JSON object).

    ``lease_owner`` / ``lease_expires_at`` (epoch milliseconds) name the execution that holds the
    run while it runs (a resume claim, decision D10); both are None when nobody holds it.
    """

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
    lease_owner: str | None = None
    lease_expires_at: int | None = None


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
