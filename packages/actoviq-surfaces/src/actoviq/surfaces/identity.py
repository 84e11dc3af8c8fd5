"""Bounded identity windows and stable fingerprints (spec 03 §5.7, §6.3, §6.5).

A surface keeps the identities it has seen in a FIFO window of fixed size, so memory stays flat
on endless streams: an exact replay inside the window is dropped; a replay older than the window
is no longer recognised (document that window size to producers that retry).

Example:
    >>> window: IdentityWindow[str] = IdentityWindow(2)
    >>> window.remember("a", "x"); window.remember("b", "y"); window.remember("c", "z")
    >>> window.get("a") is None, window.get("c")
    (True, 'z')
"""

from __future__ import annotations

import datetime
import enum
import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence, Set
from typing import Any, Final, Generic, TypeVar, cast

__all__ = ["DEFAULT_DEDUPE_WINDOW_SIZE", "IdentityWindow", "fingerprint", "stable_serialize"]

DEFAULT_DEDUPE_WINDOW_SIZE: Final = 8192
"""How many identities a projector or legacy adapter remembers by default."""

V = TypeVar("V")

_MAX_DEPTH: Final = 256


class IdentityWindow(Generic[V]):
    """A bounded FIFO map of identities (oldest forgotten first).

    Args:
        size: the most identities kept (a positive int).

    Raises:
        ValueError: ``size`` is not a positive int.
    """

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int = DEFAULT_DEDUPE_WINDOW_SIZE) -> None:
        if type(size) is not int or size < 1:
            raise ValueError(f"The dedupe window size must be a positive int, got {size!r}.")
        self._size = size
        # An OrderedDict, not a dict: evicting the oldest key of a plain dict that has seen many
        # deletions scans its dead slots (``next(iter(d))`` degrades to O(n)); popitem is O(1).
        self._entries: OrderedDict[str, V] = OrderedDict()

    @property
    def size(self) -> int:
        """The capacity."""
        return self._size

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> V | None:
        """The value remembered for ``key``, or None."""
        return self._entries.get(key)

    def remember(self, key: str, value: V) -> None:
        """Remember ``key`` (forgetting the oldest identity when full)."""
        entries = self._entries
        if key in entries:
            entries[key] = value
            return
        if len(entries) >= self._size:
            entries.popitem(last=False)  # FIFO: the oldest identity goes
        entries[key] = value

    def clear(self) -> None:
        """Forget everything."""
        self._entries.clear()


def _tag(value: object, depth: int, ancestors: set[int]) -> Any:
    if depth > _MAX_DEPTH:
        return "[Depth]"
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value if abs(value) <= 2**53 - 1 else f"[bigint:{value}]"
    if isinstance(value, float):
        return value if math.isfinite(value) else f"[number:{value}]"
    if isinstance(value, enum.Enum):
        return _tag(value.value, depth + 1, ancestors)
    if isinstance(value, datetime.date | datetime.time):
        return f"[date:{value.isoformat()}]"
    if isinstance(value, BaseException):
        return {"name": type(value).__name__, "message": str(value)}
    if callable(value):
        return "[function]"
    ident = id(value)
    if ident in ancestors:
        return "[Circular]"
    ancestors.add(ident)
    try:
        if isinstance(value, Mapping):
            pairs = [
                (str(key), _tag(child, depth + 1, ancestors))
                for key, child in cast(Mapping[object, object], value).items()
            ]
            return dict(sorted(pairs, key=lambda pair: pair[0]))
        if isinstance(value, Set):
            items = [_tag(child, depth + 1, ancestors) for child in cast(Set[object], value)]
            return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
        if isinstance(value, Sequence | tuple):
            return [_tag(child, depth + 1, ancestors) for child in cast(Sequence[object], value)]
        fields = getattr(value, "__dict__", None)
        if isinstance(fields, dict):
            return _tag(cast(dict[str, object], fields), depth + 1, ancestors)
        return f"[object {type(value).__name__}]"
    finally:
        ancestors.discard(ident)


def stable_serialize(value: object) -> str:
    """Deterministic text for any value: sorted keys, tagged non-JSON values, cycles marked.

    Mappings are sorted by key, sets by content; ``NaN``/``±Infinity``, big integers, dates,
    functions and errors become tagged strings or ``{name, message}``; a cycle becomes
    ``"[Circular]"``. Equal values give equal text.
    """
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(_tag(value, 0, set()), sort_keys=True, ensure_ascii=False)


def fingerprint(value: object) -> str:
    """``sha256`` hex digest of :func:`stable_serialize`."""
    return hashlib.sha256(stable_serialize(value).encode("utf-8", "surrogatepass")).hexdigest()
