"""The item types of a request's transcript, remembered across turns (internal).

Every model call checks what its request needs (:mod:`~actoviq.providers.capabilities`): the
types of the transcript's items, each once in order of first appearance, and the raw and
reasoning items, which only their own provider may receive. Taking the type of every item costs
about 30 ns an item, so a 2,000-item session paid ~60 µs a turn for it, growing with the history.

A transcript grows by appending: the next turn of a run sends the same items plus the model's
output and the tool results, and the next run of a session sends the previous run's items (the
runtime keeps the decoded history) plus the new turn. So :func:`scan_items` remembers the scan
of recent long transcripts and, when a request starts with a remembered transcript, scans only
the items after it. Whether it starts with it is one tuple comparison in C: identical items are
equal at pointer speed, and an item decoded again from storage is compared by value.

The successive transcripts of one session start with the same two items, so they share one entry
(the newest replaces the older); at most ``_MEMO_LIMIT`` transcripts are kept, least recently
stored dropped first. An entry keeps its items alive until it is replaced or dropped.

Two equal items always have the same type: canonical items are attrs classes whose equality
requires the same class. An item class whose ``__eq__`` claims equality with an item of another
class could hide its type from the scan; no canonical item does, and an adapter still maps (or
refuses) each item by its own type.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from itertools import compress
from typing import Any, Final

from actoviq.core import RawItem, ReasoningItem

__all__ = ["MEMO_FROM_ITEMS", "ItemScan", "scan_items"]

MEMO_FROM_ITEMS: Final = 64
"""Transcripts of at least this many items are remembered (shorter ones are scanned outright)."""
_MEMO_LIMIT: Final = 8  # transcripts remembered at once (each keeps its items alive)

ItemScan = tuple[dict[type[Any], None], tuple[object, ...]]
"""``(types, bound)``: the item types in order of first appearance, and the raw and reasoning
items (the ones tied to a provider), in transcript order."""

_BOUND: Final = (RawItem, ReasoningItem)
# (id of item 0, id of item 1) -> (the transcript, its scan). The ids are those of items the
# remembered tuple keeps alive, so they cannot be reused while the entry exists.
_memo: dict[tuple[int, int], tuple[tuple[object, ...], ItemScan]] = {}


def _scan(items: Sequence[object]) -> ItemScan:
    types = dict.fromkeys(map(type, items))
    bound = {kind for kind in types if issubclass(kind, _BOUND)}
    if not bound:
        return types, ()
    return types, tuple(compress(items, map(bound.__contains__, map(type, items))))


def _extends(items: tuple[object, ...], previous: tuple[object, ...]) -> bool:
    """Whether ``items`` starts with ``previous`` (identical items at pointer speed)."""
    count = len(previous)
    if count > len(items) or previous[0] is not items[0] or previous[1] is not items[1]:
        return False
    try:
        return items[:count] == previous
    except Exception:  # an item whose comparison fails: scan it outright
        return False


def scan_items(items: tuple[object, ...]) -> ItemScan:
    """The scan of ``items``; a long transcript reuses the scan of one it extends.

    The result is shared: callers must not mutate it.
    """
    if len(items) < MEMO_FROM_ITEMS:
        return _scan(items)
    key = (id(items[0]), id(items[1]))
    entry = _memo.get(key)
    if entry is not None and entry[0] is items:
        return entry[1]
    if entry is not None and _extends(items, entry[0]):
        (types, bound), count = entry[1], len(entry[0])
        tail_types, tail_bound = _scan(items[count:])
        if not tail_types.keys() <= types.keys():
            types = {**types, **tail_types}  # the prefix's types come first, as in a full scan
        # A type first seen in the tail does not occur in the prefix, so the bound items are
        # the prefix's followed by the tail's.
        scan: ItemScan = (types, bound + tail_bound if tail_bound else bound)
    else:
        scan = _scan(items)
    if entry is None and len(_memo) >= _MEMO_LIMIT:
        # The least recently stored (another thread may have emptied or changed the memo).
        with suppress(StopIteration, RuntimeError):
            _memo.pop(next(iter(_memo)), None)
    _memo.pop(key, None)
    _memo[key] = (items, scan)
    return scan
