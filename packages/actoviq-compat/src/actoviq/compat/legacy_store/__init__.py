"""The legacy JSON v1 session store: the 0.x face and the runtime's SessionStore face."""

from actoviq.compat.legacy_store.journal import LegacyJsonV1SessionJournal, tenant_root
from actoviq.compat.legacy_store.shapes import (
    JOURNAL_KEY,
    SessionCheckpoint,
    SessionCheckpointSummary,
    SessionSummary,
    StoredRunSummary,
    StoredSession,
)
from actoviq.compat.legacy_store.store import LegacyJsonV1SessionStore

__all__ = [
    "JOURNAL_KEY",
    "LegacyJsonV1SessionJournal",
    "LegacyJsonV1SessionStore",
    "SessionCheckpoint",
    "SessionCheckpointSummary",
    "SessionSummary",
    "StoredRunSummary",
    "StoredSession",
    "tenant_root",
]
