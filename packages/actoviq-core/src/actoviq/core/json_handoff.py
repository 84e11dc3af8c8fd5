"""A checked JSON object handed to exactly one receiver without a copy (:class:`JsonHandOff`).

A :class:`~actoviq.core.CheckedJsonObject` is immutable and may be shared, so whoever wants a
plain object from it (the runtime, for a run's metadata) copies all of it. When the maker
builds a fresh plain object for one receiver anyway (the orchestration layer makes each child
run's ``orchestration`` metadata from a per-parent template), that copy is wasted: a
:class:`JsonHandOff` carries such an object, checked, to one receiver, and
:meth:`JsonHandOff.take` gives it away **once** (a second ``take`` raises), so the receiver owns
it alone and nothing else can reach or change it afterwards.

Nothing is trusted that was not checked: the constructor validates and copies its value like a
:class:`~actoviq.core.CheckedJsonObject` (nested checked objects are taken as checked);
:meth:`actoviq.core.CheckedJsonTemplate.hand_off` builds one from its checked shape, checking
only the filled scalars.

Example:
    >>> handed = JsonHandOff({"attempt": 1, "trace": {"spanId": "00f1"}})
    >>> handed.take()
    {'attempt': 1, 'trace': {'spanId': '00f1'}}
    >>> handed.taken
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast, final

from actoviq.core.checked_json import DEFAULT_CHECKED_DEPTH, CheckedJsonObject
from actoviq.core.errors import JsonValueError
from actoviq.core.json import JsonObject

__all__ = ["JsonHandOff"]


@final
class JsonHandOff:
    """A checked, fresh plain JSON object that one receiver takes (see the module doc).

    Args:
        value: the object; validated and deep-copied (nested
            :class:`~actoviq.core.CheckedJsonObject` values are taken as checked).
        label: what the value is, for error messages.
        max_depth: the deepest the object may be (``{}`` is 1 deep), at most
            :data:`~actoviq.core.DEFAULT_CHECKED_DEPTH` so it always fits as a value of a run's
            metadata object.

    Raises:
        JsonValueError: ``value`` is not a JSON object of strict JSON values, or ``max_depth``
            is out of range.
    """

    __slots__ = ("_box", "_label", "_max_depth")

    _box: list[dict[str, object]]  # the object until it is taken, then empty
    _label: str
    _max_depth: int

    def __init__(
        self,
        value: Mapping[str, object],
        /,
        *,
        label: str = "value",
        max_depth: int = DEFAULT_CHECKED_DEPTH,
    ) -> None:
        if type(max_depth) is not int or not 1 <= max_depth <= DEFAULT_CHECKED_DEPTH:
            raise JsonValueError(
                label, "$", expected=f"max_depth within 1..{DEFAULT_CHECKED_DEPTH}"
            )
        plain = CheckedJsonObject(value, label=label, max_depth=max_depth).to_json()
        setattr_ = object.__setattr__
        setattr_(self, "_box", [plain])
        setattr_(self, "_label", label)
        setattr_(self, "_max_depth", max_depth)

    @property
    def max_depth(self) -> int:
        """The depth bound the object was checked against."""
        return self._max_depth

    @property
    def taken(self) -> bool:
        """Whether :meth:`take` has given the object away."""
        return not self._box

    def take(self) -> JsonObject:
        """The plain object itself (not a copy): the caller owns it from now on.

        Raises:
            JsonValueError: it was taken before (a hand-off has one receiver).
        """
        try:
            return cast(JsonObject, self._box.pop())  # one atomic step: never given twice
        except IndexError:
            raise JsonValueError(
                self._label, "$", expected="a JsonHandOff that was not taken yet"
            ) from None

    def __repr__(self) -> str:
        return f"JsonHandOff(label={self._label!r}, taken={self.taken})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("JsonHandOff is read-only.")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("JsonHandOff is read-only.")


class _Unsealed:
    """:class:`JsonHandOff`'s slot layout without its read-only guard.

    Filled with plain slot stores, then sealed by assigning ``__class__`` (as ``checked_json``'s
    ``_Unsealed``). Never handed out.
    """

    __slots__ = ("_box", "_label", "_max_depth")

    _box: list[dict[str, object]]
    _label: str
    _max_depth: int


def _handed(data: dict[str, object], label: str, depth: int) -> JsonHandOff:  # pyright: ignore[reportUnusedFunction]
    """A hand-off of ``data``, already checked and referenced by nothing else (the template's)."""
    made = _Unsealed()
    made._box = [data]  # pyright: ignore[reportPrivateUsage]
    made._label = label  # pyright: ignore[reportPrivateUsage]
    made._max_depth = depth  # pyright: ignore[reportPrivateUsage]
    made.__class__ = JsonHandOff  # pyright: ignore[reportAttributeAccessIssue]
    return made  # pyright: ignore[reportReturnType]
