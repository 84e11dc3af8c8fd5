"""The item ids of recently written sessions, so an append checks id uniqueness without a scan.

The turn journal has no unique index on item ids (``_tables``): an append must itself prove that
none of its ids is already in the session. Inside the append's transaction, after the CAS bump
has locked the session at a known state, the store asks this index for the ids of that state.

A state is named by the session's ``incarnation`` (random per created session) and its
``last_sequence``: the journal is append-only, so the ids through a sequence never change. An
entry is *valid* for a state when it has the same incarnation and ``last_sequence``; an older
entry of the same incarnation is brought up to date by reading only the newer turns' id columns;
anything else (no entry, another incarnation, a newer entry than the state) reads every turn's
ids. Reads happen in the transaction; entries change only in :meth:`SessionIdIndex.commit`,
which the store calls from ``on_commit`` (after ``COMMIT``, under the writer lock), so a rolled
back append never leaves its ids behind and readers never see an entry half-updated.

Memory is bounded: past ``max_ids`` ids in all entries, the least recently used sessions are
dropped (a dropped session is read again on its next append).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence

import attrs

__all__ = ["IdLookup", "SessionIdIndex"]

DEFAULT_MAX_IDS = 1_000_000


@attrs.define(eq=False)
class _Entry:
    incarnation: str
    last_sequence: int
    ids: set[str]


@attrs.frozen
class IdLookup:
    """What one append learnt about the ids of the state it extends.

    ``base`` is the entry the append started from (None: it read every turn), ``base_last`` that
    entry's ``last_sequence`` when read, and ``read`` the ids it read from newer turns.
    """

    incarnation: str
    last_sequence: int
    base: _Entry | None
    base_last: int
    read: frozenset[str]

    def clashes(self, ids: Sequence[str]) -> bool:
        """True when one of ``ids`` is already in the state (no set is built from ``ids``)."""
        if not self.read.isdisjoint(ids):
            return True
        return self.base is not None and not self.base.ids.isdisjoint(ids)


class SessionIdIndex:
    """Known item ids per ``(tenant_id, session_id)``; see the module docstring."""

    def __init__(self, max_ids: int = DEFAULT_MAX_IDS) -> None:
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._size = 0
        self._max_ids = max_ids

    def start(
        self, key: tuple[str, str], incarnation: str, last_sequence: int
    ) -> tuple[_Entry | None, int]:
        """The entry to extend and the sequence after which turns must be read."""
        entry = self._entries.get(key)
        if entry is None or entry.incarnation != incarnation or entry.last_sequence > last_sequence:
            return None, 0
        return entry, entry.last_sequence

    def commit(
        self, key: tuple[str, str], lookup: IdLookup, new_ids: Iterable[str], last: int
    ) -> None:
        """Record a committed append of ``new_ids`` ending at ``last`` (after ``COMMIT``)."""
        entry = self._entries.get(key)
        if entry is not None and entry is lookup.base and entry.last_sequence == lookup.base_last:
            self._size -= len(entry.ids)
            entry.ids.update(lookup.read)
            entry.ids.update(new_ids)
            entry.last_sequence = last
            self._size += len(entry.ids)
            self._entries.move_to_end(key)
        elif lookup.base is None:
            if entry is not None:
                self._size -= len(entry.ids)
            fresh = _Entry(lookup.incarnation, last, set(lookup.read))
            fresh.ids.update(new_ids)
            self._entries[key] = fresh
            self._entries.move_to_end(key)
            self._size += len(fresh.ids)
        else:  # the entry moved on (another in-process writer): it is simply read again later
            self.forget(key)
        while self._size > self._max_ids and len(self._entries) > 1:
            _, dropped = self._entries.popitem(last=False)
            self._size -= len(dropped.ids)

    def forget(self, key: tuple[str, str]) -> None:
        """Drop a session's entry (its next append reads every turn's ids)."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._size -= len(entry.ids)

    @property
    def size(self) -> int:
        """The ids held in all entries."""
        return self._size
