"""Runtime adapters over the SQL stores (spec 04 §3.13); they never own the storage connection."""

from __future__ import annotations

from collections.abc import Callable

from actoviq.core import ITEM_TYPES, CanonicalItem, item_from_json
from actoviq.runtime.stores import (
    DEFAULT_HISTORY_CACHE_ITEMS,
    DEFAULT_TENANT_ID,
    CheckpointStore,
    PayloadCodec,
    SessionStore,
    StoredSessionItem,
    StoreRunCheckpointAdapter,
    StoreRuntimeSessionAdapter,
)
from actoviq.storage.sqlite.legacy import convert_legacy_json_v1_message

__all__ = ["SqliteRunCheckpointAdapter", "SqliteRuntimeSessionAdapter"]


class SqliteRuntimeSessionAdapter(StoreRuntimeSessionAdapter):
    """The runtime's ``RuntimeSessionStore`` over a storage session store.

    Besides the generic mapping it reads preview databases whose ``message`` entries hold legacy
    ``{role, content}`` payloads (converted with :func:`convert_legacy_json_v1_message`). Legacy
    ``raw`` blocks and ``legacy_run`` entries stay in the journal but never reach the transcript.

    Decoded transcripts are cached between loads as in :class:`StoreRuntimeSessionAdapter`
    (``history_cache_items``); over ``storage.sessions`` each load reads only what changed.

    Example:
        >>> adapter = SqliteRuntimeSessionAdapter(storage.sessions)  # doctest: +SKIP
    """

    # Canonical payloads map as in the base class (only legacy ``message`` payloads differ).
    _canonical_payloads_as_base = True

    def __init__(
        self, store: SessionStore, *, history_cache_items: int = DEFAULT_HISTORY_CACHE_ITEMS
    ) -> None:
        super().__init__(store, history_cache_items=history_cache_items)

    def transcript_items(self, entry: StoredSessionItem) -> list[CanonicalItem]:
        """Map one journal entry, converting legacy ``message`` payloads."""
        payload_type = entry.payload.get("type")
        if entry.kind == "message" and not (
            isinstance(payload_type, str) and payload_type in ITEM_TYPES
        ):
            converted = convert_legacy_json_v1_message(entry.payload, f"item {entry.item_id}")
            return [
                item_from_json(payload)
                for payload in converted
                if not (payload.get("type") == "raw" and payload.get("provider") == "legacy")
            ]
        return super().transcript_items(entry)


class SqliteRunCheckpointAdapter(StoreRunCheckpointAdapter):
    """The runtime's checkpoint store (with claims) over a storage checkpoint store.

    Resume claims are a lease on the checkpoint row, taken and fenced with the row's CAS on its
    revision, so two workers (processes, hosts) on one database never run the same state twice.
    ``delete`` writes a ``completed`` tombstone; the run state is kept for audit.

    Args:
        store: ``storage.checkpoints``.
        tenant_id: the tenant every checkpoint is written under.
        checkpoint_id: maps a run id to a checkpoint id (default: the run id).
        clock: epoch milliseconds for lease expiry (default: the system clock).
        payload_codec: encodes run states at rest (``FernetPayloadCodec`` encrypts them): the
            database then holds no tool input, result or transcript in clear.
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
        super().__init__(
            store,
            tenant_id=tenant_id,
            checkpoint_id=checkpoint_id,
            clock=clock,
            payload_codec=payload_codec,
        )
