"""Store protocols (spec 04 §3.1-3.7, §1.9.2; spec 03 §1.14, §1.19).

Two layers:

* **Storage protocols** — :class:`SessionStore`, :class:`CheckpointStore`,
  :class:`MemoryStore`, :class:`ArtifactMetadataStore`, :class:`DurableChildStore`. Every key
  includes ``tenant_id``; every write is guarded by a compare-and-set on an integer revision;
  payloads are strict JSON.
  Backends: the in-memory stores here, ``actoviq.storage.sqlite`` (SQLite and PostgreSQL).
* **Runtime protocols** — :class:`RuntimeSessionStore` and :class:`RunCheckpointStore`, what
  ``AgentRuntime`` itself calls (string revisions, canonical items, the serialised run state).
  :class:`~actoviq.runtime.stores.adapters.StoreRuntimeSessionAdapter` and
  :class:`~actoviq.runtime.stores.adapters.StoreRunCheckpointAdapter` implement them over any
  storage protocol implementation.

All methods are coroutines; all arguments after ``self`` are keyword-only except on the runtime
protocols, which follow the reference call shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from actoviq.core import CanonicalItem, JsonObject, JsonValue
from actoviq.runtime.stores.claims import RunLease
from actoviq.runtime.stores.records import (
    ArtifactRecord,
    CheckpointRecord,
    CheckpointStatus,
    DurableChildRow,
    MemoryRecord,
    NewSessionItem,
    RuntimeSessionLoad,
    SessionChanges,
    SessionLoad,
    SessionRecord,
    SessionSnapshot,
)

__all__ = [
    "ArtifactMetadataStore",
    "CheckpointStore",
    "ClaimingRunCheckpointStore",
    "DurableChildStore",
    "MemoryStore",
    "RunCheckpointStore",
    "RuntimeSessionStore",
    "SessionChangeStore",
    "SessionStore",
]


@runtime_checkable
class SessionStore(Protocol):
    """Append-only session journal with metadata, CAS revisions and snapshots."""

    async def create(
        self,
        *,
        tenant_id: str,
        session_id: str,
        metadata: JsonObject | None = None,
        created_at: str | None = None,
    ) -> SessionRecord:
        """Create an empty session at revision 0.

        Raises:
            SessionRevisionConflictError: the session exists (expected None, actual its revision).
            StorageDataError: a key is empty or the metadata is not strict JSON.
        """
        ...

    async def get(self, *, tenant_id: str, session_id: str) -> SessionRecord | None:
        """Return the session record, or None."""
        ...

    async def append(
        self,
        *,
        tenant_id: str,
        session_id: str,
        expected_revision: int,
        items: Sequence[NewSessionItem],
        updated_at: str | None = None,
    ) -> SessionRecord:
        """Append items in one transaction; the revision grows by exactly one.

        If every item id already exists with the same kind and payload, nothing is written and the
        current record is returned (an idempotent retry), whatever ``expected_revision`` is.
        Otherwise a stale ``expected_revision`` is a conflict, even when some ids exist.

        Raises:
            SessionRevisionConflictError: ``expected_revision`` is not the stored revision.
            StorageNotFoundError: the session does not exist.
            StorageDataError: no items, an empty id/kind, a payload that is not strict JSON, or
                (at the current revision) an item id that already exists with other content.
        """
        ...

    async def load(
        self,
        *,
        tenant_id: str,
        session_id: str,
        after_sequence: int | None = None,
        use_snapshot: bool = True,
        limit: int | None = None,
    ) -> SessionLoad:
        """Read the session, its newest snapshot and the items after it, consistently.

        The snapshot is used only when ``after_sequence`` is None and ``use_snapshot`` is true;
        items have ``sequence > after_sequence or snapshot.through_sequence or 0``, ascending.

        Raises:
            StorageNotFoundError: the session does not exist.
        """
        ...

    async def compact(
        self,
        *,
        tenant_id: str,
        session_id: str,
        expected_revision: int,
        through_sequence: int,
        state: JsonObject,
        created_at: str | None = None,
    ) -> SessionSnapshot:
        """Store a snapshot covering items ``1..through_sequence``; the revision grows by one.

        Raises:
            SessionRevisionConflictError: stale ``expected_revision``.
            StorageDataError: ``through_sequence`` beyond the tail, or not past the last snapshot.
        """
        ...

    async def list_sessions(
        self, *, tenant_id: str, limit: int | None = None
    ) -> list[SessionRecord]:
        """The tenant's sessions, newest ``updated_at`` first, then by session id."""
        ...

    async def aclose(self) -> None:
        """Release resources; idempotent."""
        ...


@runtime_checkable
class SessionChangeStore(Protocol):
    """A :class:`SessionStore` that can say what changed after a sequence in one read.

    Optional: :class:`~actoviq.runtime.stores.adapters.StoreRuntimeSessionAdapter` uses it to
    bring a cached transcript up to date by reading only the turns another writer appended. A
    store without it still works; the adapter then reloads the whole session whenever the
    revision moved.
    """

    async def load_changes(
        self, *, tenant_id: str, session_id: str, after_sequence: int
    ) -> SessionChanges:
        """The session row, the entries after ``after_sequence`` and the newest snapshot's revision.

        One consistent read; the entries are all those with ``sequence > after_sequence``,
        ascending, whatever the snapshots (which are reported by revision only).

        Raises:
            StorageNotFoundError: the session does not exist.
            StorageDataError: a key is empty or ``after_sequence`` is not a revision-like integer.
        """
        ...


@runtime_checkable
class CheckpointStore(Protocol):
    """Run-state checkpoints keyed by ``(tenant_id, checkpoint_id)`` (usually the run id)."""

    async def put(
        self,
        *,
        tenant_id: str,
        checkpoint_id: str,
        run_id: str,
        expected_revision: int | None,
        status: CheckpointStatus,
        state: JsonObject,
        session_id: str | None = None,
        interruption: JsonObject | None = None,
        pending_side_effects: Sequence[JsonObject] = (),
        trace_context: JsonObject | None = None,
        updated_at: str | None = None,
        lease_owner: str | None = None,
        lease_expires_at: int | None = None,
    ) -> CheckpointRecord:
        """Create (``expected_revision=None``, revision 0) or fully replace (revision + 1).

        ``lease_owner`` and ``lease_expires_at`` (epoch ms) are stored as given, together or not
        at all; a write without them clears the lease (the CAS on the revision is the guard).

        Raises:
            StorageConflictError: the stored revision (or absence) differs from the expected one.
            StorageDataError: invalid keys, status or JSON.
        """
        ...

    async def get(self, *, tenant_id: str, checkpoint_id: str) -> CheckpointRecord | None:
        """Return the checkpoint, or None."""
        ...

    async def list_checkpoints(
        self,
        *,
        tenant_id: str,
        run_id: str | None = None,
        status: CheckpointStatus | None = None,
        limit: int = 1000,
    ) -> list[CheckpointRecord]:
        """Checkpoints ordered by ``created_at`` then ``checkpoint_id``."""
        ...

    async def delete(
        self, *, tenant_id: str, checkpoint_id: str, expected_revision: int | None = None
    ) -> bool:
        """Delete the checkpoint; False when absent.

        Raises:
            StorageConflictError: ``expected_revision`` is given and differs from the stored one.
        """
        ...

    async def aclose(self) -> None:
        """Release resources; idempotent."""
        ...


@runtime_checkable
class MemoryStore(Protocol):
    """Revisable JSON memory entries in namespaces."""

    async def put(
        self,
        *,
        tenant_id: str,
        memory_id: str,
        namespace: str,
        expected_revision: int | None,
        value: JsonValue,
        metadata: JsonObject | None = None,
        updated_at: str | None = None,
    ) -> MemoryRecord:
        """Create or replace (CAS as for checkpoints); an update may move the namespace."""
        ...

    async def get(self, *, tenant_id: str, memory_id: str) -> MemoryRecord | None:
        """Return the entry, or None."""
        ...

    async def list_memories(
        self, *, tenant_id: str, namespace: str | None = None, limit: int | None = None
    ) -> list[MemoryRecord]:
        """Entries ordered by ``updated_at`` descending, then ``memory_id``."""
        ...

    async def delete(
        self, *, tenant_id: str, memory_id: str, expected_revision: int | None = None
    ) -> bool:
        """Delete the entry; False when absent."""
        ...

    async def aclose(self) -> None:
        """Release resources; idempotent."""
        ...


@runtime_checkable
class ArtifactMetadataStore(Protocol):
    """Artifact metadata (media type, size, sha256, where the bytes are); never the bytes.

    The bytes live in an :class:`~actoviq.runtime.stores.blobs.ArtifactBlobStore` under the
    record's sha256; :class:`~actoviq.runtime.stores.artifacts.ArtifactStore` keeps both together.
    """

    async def put(
        self,
        *,
        tenant_id: str,
        artifact_id: str,
        expected_revision: int | None,
        media_type: str,
        size: int,
        sha256: str,
        uri: str | None = None,
        metadata: JsonObject | None = None,
        updated_at: str | None = None,
    ) -> ArtifactRecord:
        """Create or replace (CAS as for checkpoints)."""
        ...

    async def get(self, *, tenant_id: str, artifact_id: str) -> ArtifactRecord | None:
        """Return the metadata, or None."""
        ...

    async def list_artifacts(
        self, *, tenant_id: str, limit: int | None = None
    ) -> list[ArtifactRecord]:
        """Metadata ordered by ``updated_at`` descending, then ``artifact_id``."""
        ...

    async def delete(
        self, *, tenant_id: str, artifact_id: str, expected_revision: int | None = None
    ) -> bool:
        """Delete the metadata; False when absent."""
        ...

    async def referenced_sha256(self, *, sha256s: Sequence[str]) -> frozenset[str]:
        """Which of ``sha256s`` some record of *any* tenant references (blob garbage collection).

        Raises:
            StorageDataError: an entry is not a lowercase hex sha256 digest.
        """
        ...

    async def aclose(self) -> None:
        """Release resources; idempotent."""
        ...


@runtime_checkable
class DurableChildStore(Protocol):
    """Durable background-child records: status, lease, heartbeat and fencing revision."""

    async def create(self, *, tenant_id: str, record: JsonObject) -> DurableChildRow:
        """Insert a record whose ``revision`` is 0.

        Raises:
            StorageConflictError: ``Durable child "<id>" already exists.``
            StorageDataError: the record lacks ``childId``/``status``/``revision`` 0 or is not JSON.
        """
        ...

    async def get(self, *, tenant_id: str, child_id: str) -> DurableChildRow | None:
        """Return the record, or None."""
        ...

    async def compare_and_set(
        self, *, tenant_id: str, child_id: str, expected_revision: int, record: JsonObject
    ) -> bool:
        """Replace the record if its revision is ``expected_revision``; False otherwise.

        The revision is the fencing token: a worker whose CAS fails has lost its lease.

        Raises:
            StorageDataError: ``Durable child CAS must advance exactly one revision.`` when
                ``record`` names another child or its revision is not ``expected_revision + 1``.
        """
        ...

    async def list_children(
        self,
        *,
        tenant_id: str,
        parent_run_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[DurableChildRow]:
        """Records ordered by ``created_at`` then ``child_id``."""
        ...

    async def aclose(self) -> None:
        """Release resources; idempotent."""
        ...


@runtime_checkable
class RuntimeSessionStore(Protocol):
    """What ``AgentRuntime`` calls for session history (spec 03 §1.14)."""

    async def load(self, *, tenant_id: str, session_id: str) -> RuntimeSessionLoad:
        """The history (canonical items) and revision; a missing session loads as ``([], "0")``."""
        ...

    async def append(
        self,
        *,
        tenant_id: str,
        session_id: str,
        items: Sequence[CanonicalItem],
        expected_revision: str,
    ) -> str:
        """Append one turn under CAS and return the new revision.

        Raises:
            SessionRevisionConflictError: the revision moved since ``load``.
        """
        ...

    async def aclose(self) -> None:
        """Release what the adapter owns (never a shared storage connection)."""
        ...


@runtime_checkable
class RunCheckpointStore(Protocol):
    """What ``AgentRuntime`` calls to persist its serialised run state (spec 03 §1.19)."""

    async def save(self, state: JsonObject) -> None:
        """Persist the run state (a ``SerializedRunState`` JSON object, keyed by its ``runId``)."""
        ...

    async def load(self, run_id: str) -> JsonObject | None:
        """Return a copy of the stored state, or None."""
        ...

    async def delete(self, run_id: str) -> None:
        """Forget the run (implementations may keep a ``completed`` tombstone for audit)."""
        ...

    async def aclose(self) -> None:
        """Release what the adapter owns (never a shared storage connection)."""
        ...


@runtime_checkable
class ClaimingRunCheckpointStore(RunCheckpointStore, Protocol):
    """A :class:`RunCheckpointStore` that takes claims: what makes ``resume()`` exactly-once.

    ``AgentRuntime`` claims a run before a resumed execution does anything and a fresh run with
    its first save; afterwards every save of that execution passes its lease and is fenced on it
    (see :mod:`actoviq.runtime.stores.claims`). Stores without these methods still work, with a
    weaker, non-atomic check (``load`` and compare) before a resume.
    """

    async def claim(
        self, state: JsonObject, *, expected: JsonObject | None, lease: RunLease
    ) -> None:
        """Atomically take the run for one execution and write ``state``.

        A ``running`` state is written with the lease; a fresh run whose first save is already
        terminal writes it without one.

        Args:
            state: the first state of the execution (its ``runId`` keys the record; ``running``
                when resuming).
            expected: the state being resumed; None for a fresh run, which may replace any record
                that no live lease holds.
            lease: the execution's lease (written with the state).

        Raises:
            RunStateStaleError: the stored run completed, a newer state exists, or another live
                execution holds the run (``reason`` says which; nothing was written).
        """
        ...

    async def save(self, state: JsonObject, *, lease: RunLease | None = None) -> None:
        """Persist the state; with ``lease``, only while that lease holds the run.

        A ``running`` state renews the lease; any other status releases it.

        Raises:
            RunClaimLostError: another execution holds (or took over) the run.
        """
        ...

    async def renew(self, run_id: str, *, lease: RunLease) -> None:
        """Extend the lease of a running execution (the heartbeat).

        Raises:
            RunClaimLostError: another execution holds (or took over) the run.
        """
        ...
