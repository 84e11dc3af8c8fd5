"""Decoded session transcripts kept between runs, bounded by item count (LRU).

:class:`~actoviq.runtime.stores.adapters.StoreRuntimeSessionAdapter` keeps one
:class:`CachedTranscript` per recently used session: the canonical items of the session as of a
known ``(revision, last_sequence)``. A run's load then decodes only what was appended since, and
the adapter's own appends extend the entry without decoding the session again. Whether an entry
still describes the stored session is the adapter's decision (it reads the session row, and the
newest snapshot's revision, on every load); this module only stores entries and bounds them.

Memory is bounded by the total number of items held: past ``max_items``, the least recently used
sessions are dropped (their next load decodes them again). A session longer than ``max_items``
is never kept. ``max_items=0`` keeps nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

import attrs

from actoviq.core import CanonicalItem

__all__ = ["DEFAULT_HISTORY_CACHE_ITEMS", "CachedTranscript", "SessionHistoryCache"]

DEFAULT_HISTORY_CACHE_ITEMS: Final = 200_000
"""Items the adapter keeps decoded by default, over all sessions (each item is one frozen
canonical item; a text item of a chat turn is a few hundred bytes)."""


@attrs.frozen(kw_only=True)
class CachedTranscript:
    """A session's transcript as of one state of the store.

    Attributes:
        revision: the session revision the transcript is current at.
        last_sequence: the journal sequence of its newest entry.
        created_at: the session's ``created_at`` (a session created again is another session).
        items: the transcript (the snapshot's items plus the journal after it, audit entries
            left out), exactly what a full load would return at that revision.
    """

    revision: int
    last_sequence: int
    created_at: str
    items: tuple[CanonicalItem, ...]


Key = tuple[str, str]


class SessionHistoryCache:
    """Transcripts by ``(tenant_id, session_id)``, least recently used dropped first.

    Args:
        max_items: the most items held over all sessions (``0``: nothing is kept).

    Raises:
        ValueError: ``max_items`` is negative or not an int.
    """

    __slots__ = ("_entries", "_items", "_max_items")

    def __init__(self, max_items: int = DEFAULT_HISTORY_CACHE_ITEMS) -> None:
        if type(max_items) is not int or max_items < 0:
            raise ValueError("max_items must be an int >= 0")
        self._max_items = max_items
        self._entries: OrderedDict[Key, CachedTranscript] = OrderedDict()
        self._items = 0

    @property
    def max_items(self) -> int:
        """The bound on items held."""
        return self._max_items

    @property
    def items(self) -> int:
        """Items held now, over all sessions."""
        return self._items

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: Key) -> CachedTranscript | None:
        """The entry of ``key`` (now the most recently used), or None."""
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key: Key, entry: CachedTranscript) -> None:
        """Keep ``entry`` for ``key`` unless an entry of a newer revision is already there.

        Entries past the bound are dropped, least recently used first; an entry that alone
        exceeds the bound is not kept (and the older entry of ``key`` is dropped).
        """
        entries = self._entries
        old = entries.get(key)
        if old is not None:
            if old.created_at == entry.created_at and old.revision > entry.revision:
                return  # a concurrent load already stored a newer state
            del entries[key]
            self._items -= len(old.items)
        size = len(entry.items)
        if size > self._max_items or not self._max_items:
            return
        entries[key] = entry
        self._items += size
        while self._items > self._max_items:
            _, dropped = entries.popitem(last=False)
            self._items -= len(dropped.items)

    def discard(self, key: Key) -> None:
        """Forget ``key`` (no error when it is not held)."""
        old = self._entries.pop(key, None)
        if old is not None:
            self._items -= len(old.items)

    def clear(self) -> None:
        """Forget every session."""
        self._entries.clear()
        self._items = 0
