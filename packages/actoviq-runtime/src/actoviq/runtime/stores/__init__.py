"""Store protocols, typed storage errors, in-memory stores and runtime adapters.

Artifact bytes: :class:`ArtifactBlobStore` (content-addressed, streamed; in-memory and local
directory here, a SQL blob table in ``actoviq.storage.sqlite``) behind
:class:`ArtifactMetadataStore`, kept together by :class:`ArtifactStore`.

Backends (``actoviq.storage.sqlite``) implement the protocols; ``AgentRuntime`` talks only to
:class:`RuntimeSessionStore` and :class:`RunCheckpointStore`. The conformance suite lives in
:mod:`actoviq.runtime.stores.conformance` (imported explicitly by tests, not here).
"""

from actoviq.runtime.stores.adapters import (
    AUDIT_ONLY_KINDS,
    DEFAULT_TENANT_ID,
    StoreRunCheckpointAdapter,
    StoreRuntimeSessionAdapter,
    parse_session_revision,
)
from actoviq.runtime.stores.artifacts import (
    DEFAULT_GC_GRACE_MS,
    DEFAULT_MAX_ARTIFACT_BYTES,
    DEFAULT_MAX_READ_BYTES,
    ArtifactContent,
    ArtifactReader,
    ArtifactStore,
    GarbageReport,
)
from actoviq.runtime.stores.blob_directory import DirectoryArtifactBlobStore
from actoviq.runtime.stores.blob_memory import InMemoryArtifactBlobStore
from actoviq.runtime.stores.blobs import (
    DEFAULT_CHUNK_SIZE,
    ArtifactBlobStore,
    BlobInfo,
    ByteSource,
    DigestWriter,
    StreamVerifier,
    byte_chunks,
    check_chunk_size,
    check_max_bytes,
)
from actoviq.runtime.stores.claims import (
    DEFAULT_LEASE_MS,
    RunLease,
    claim_refusal,
    new_lease_owner,
    state_version,
)
from actoviq.runtime.stores.clock import StoreClock, wall_clock_ms
from actoviq.runtime.stores.codec import FernetPayloadCodec, PayloadCodec, PayloadCodecError
from actoviq.runtime.stores.errors import (
    ArtifactBlobMissingError,
    ArtifactIntegrityError,
    ArtifactTooLargeError,
    SessionRevisionConflictError,
    StorageConflictError,
    StorageDataError,
    StorageError,
    StorageNotFoundError,
    StorageUnavailableError,
)
from actoviq.runtime.stores.history_cache import (
    DEFAULT_HISTORY_CACHE_ITEMS,
    CachedTranscript,
    SessionHistoryCache,
)
from actoviq.runtime.stores.ledgers import (
    BudgetLedgerLimits,
    BudgetLedgerRecord,
    BudgetLedgerStore,
    BudgetLedgerUpdate,
    BudgetReservationRow,
)
from actoviq.runtime.stores.memory import (
    InMemoryArtifactMetadataStore,
    InMemoryCheckpointStore,
    InMemoryDurableChildStore,
    InMemoryMemoryStore,
)
from actoviq.runtime.stores.memory_ledgers import InMemoryBudgetLedgerStore
from actoviq.runtime.stores.memory_sessions import InMemorySessionStore
from actoviq.runtime.stores.memory_workflows import InMemoryWorkflowRunStore
from actoviq.runtime.stores.pending import interruptions_of, pending_interruptions
from actoviq.runtime.stores.protocols import (
    ArtifactMetadataStore,
    CheckpointStore,
    ClaimingRunCheckpointStore,
    DurableChildStore,
    MemoryStore,
    RunCheckpointStore,
    RuntimeSessionStore,
    SessionChangeStore,
    SessionStore,
)
from actoviq.runtime.stores.records import (
    CHECKPOINT_STATUSES,
    DURABLE_CHILD_STATUSES,
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
    StoredItems,
    StoredSessionItem,
)
from actoviq.runtime.stores.workflow_runs import (
    WORKFLOW_NODE_STATUSES,
    WORKFLOW_RUN_STATUSES,
    WorkflowNodeRow,
    WorkflowRunRow,
    WorkflowRunStore,
)

__all__ = [
    "AUDIT_ONLY_KINDS",
    "CHECKPOINT_STATUSES",
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_GC_GRACE_MS",
    "DEFAULT_HISTORY_CACHE_ITEMS",
    "DEFAULT_LEASE_MS",
    "DEFAULT_MAX_ARTIFACT_BYTES",
    "DEFAULT_MAX_READ_BYTES",
    "DEFAULT_TENANT_ID",
    "DURABLE_CHILD_STATUSES",
    "WORKFLOW_NODE_STATUSES",
    "WORKFLOW_RUN_STATUSES",
    "ArtifactBlobMissingError",
    "ArtifactBlobStore",
    "ArtifactContent",
    "ArtifactIntegrityError",
    "ArtifactMetadataStore",
    "ArtifactReader",
    "ArtifactRecord",
    "ArtifactStore",
    "ArtifactTooLargeError",
    "BlobInfo",
    "BudgetLedgerLimits",
    "BudgetLedgerRecord",
    "BudgetLedgerStore",
    "BudgetLedgerUpdate",
    "BudgetReservationRow",
    "ByteSource",
    "CachedTranscript",
    "CheckpointRecord",
    "CheckpointStatus",
    "CheckpointStore",
    "ClaimingRunCheckpointStore",
    "DigestWriter",
    "DirectoryArtifactBlobStore",
    "DurableChildRow",
    "DurableChildStore",
    "FernetPayloadCodec",
    "GarbageReport",
    "InMemoryArtifactBlobStore",
    "InMemoryArtifactMetadataStore",
    "InMemoryBudgetLedgerStore",
    "InMemoryCheckpointStore",
    "InMemoryDurableChildStore",
    "InMemoryMemoryStore",
    "InMemorySessionStore",
    "InMemoryWorkflowRunStore",
    "MemoryRecord",
    "MemoryStore",
    "NewSessionItem",
    "PayloadCodec",
    "PayloadCodecError",
    "RunCheckpointStore",
    "RunLease",
    "RuntimeSessionLoad",
    "RuntimeSessionStore",
    "SessionChangeStore",
    "SessionChanges",
    "SessionHistoryCache",
    "SessionLoad",
    "SessionRecord",
    "SessionRevisionConflictError",
    "SessionSnapshot",
    "SessionStore",
    "StorageConflictError",
    "StorageDataError",
    "StorageError",
    "StorageNotFoundError",
    "StorageUnavailableError",
    "StoreClock",
    "StoreRunCheckpointAdapter",
    "StoreRuntimeSessionAdapter",
    "StoredItems",
    "StoredSessionItem",
    "StreamVerifier",
    "WorkflowNodeRow",
    "WorkflowRunRow",
    "WorkflowRunStore",
    "byte_chunks",
    "check_chunk_size",
    "check_max_bytes",
    "claim_refusal",
    "interruptions_of",
    "new_lease_owner",
    "parse_session_revision",
    "pending_interruptions",
    "state_version",
    "wall_clock_ms",
]
