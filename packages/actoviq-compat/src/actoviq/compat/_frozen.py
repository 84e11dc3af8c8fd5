"""An immutable sequence that also compares equal to a list with the same items.

The reference returns (frozen) arrays: code and tests moved over compare with ``== []``. A
``tuple`` never equals a list, so the façade returns this ``tuple`` subclass instead: still
immutable and hashable, equal to the tuple and to the list of the same items.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

__all__ = ["FrozenList"]

T = TypeVar("T")


class FrozenList(tuple[T, ...]):
    """A ``tuple`` equal to the ``list`` of the same items (``FrozenList([]) == []``)."""

    __slots__ = ()

    def __new__(cls, items: Iterable[T] = ()) -> FrozenList[T]:
        return super().__new__(cls, items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return tuple(self) == tuple(other)  # pyright: ignore[reportUnknownArgumentType]
        return tuple.__eq__(self, other)  # pyright: ignore[reportUnknownMemberType]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:  # defining __eq__ would otherwise drop the tuple's hash
        return super().__hash__()
