"""actoviq.compat (work in progress)."""

from actoviq.compat.legacy_store import LegacyJsonV1SessionJournal, LegacyJsonV1SessionStore

__all__ = ["LegacyJsonV1SessionJournal", "LegacyJsonV1SessionStore"]
