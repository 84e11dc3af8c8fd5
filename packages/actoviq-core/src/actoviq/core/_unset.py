"""The ``UNSET`` sentinel: "absent", as opposed to JSON ``null`` (``None``)."""

from __future__ import annotations

import enum
from typing import Final, Literal, TypeGuard, TypeVar

__all__ = ["UNSET", "Unset", "is_set"]

_T = TypeVar("_T")


class Unset(enum.Enum):
    """Type of :data:`UNSET`. A one-member enum so type checkers can narrow on ``is UNSET``."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> Literal[False]:
        return False


UNSET: Final = Unset.UNSET
"""A field that holds ``UNSET`` is absent from the wire JSON; ``None`` is serialised as ``null``."""


def is_set(value: _T | Unset) -> TypeGuard[_T]:
    """Return True when ``value`` is not :data:`UNSET` (``None`` counts as set)."""
    return value is not UNSET
