"""A checked JSON object with scalar holes filled per use (:class:`CheckedJsonTemplate`).

Code that makes many objects of one shape, alike but for a few scalar fields (the orchestration
layer injects the same policy, tenant, workspace and budget limits into every child run, with
the child's own run id, span id and budget counters), can check the shape once as a
:class:`~actoviq.core.CheckedJsonObject` and then, per use, check only the scalars: a template
names the holes (paths to scalar fields, possibly inside nested checked objects) and
:meth:`CheckedJsonTemplate.fill` returns a new checked object with those values set. The nested
checked objects on the way to a hole are copied (a fresh one per fill); every other piece is
shared as it is, immutable.

Example:
    >>> base = CheckedJsonObject({"id": "", "trace": CheckedJsonObject({"span": ""}, max_depth=4)})
    >>> template = CheckedJsonTemplate(base, ["id", ("trace", "span")])
    >>> template.fill("run-1", "00f1").to_json()
    {'id': 'run-1', 'trace': {'span': '00f1'}}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, final

from actoviq.core._json_builders import Builder, builder_for
from actoviq.core._json_rules import MAX_SAFE_INTEGER
from actoviq.core.checked_json import (
    DEFAULT_CHECKED_DEPTH,
    CheckedJsonObject,
    _find_surrogate,  # pyright: ignore[reportPrivateUsage]
    _made,  # pyright: ignore[reportPrivateUsage]
    _parts,  # pyright: ignore[reportPrivateUsage]
)
from actoviq.core.errors import JsonValueError
from actoviq.core.json import json_value_error
from actoviq.core.json_handoff import (
    JsonHandOff,
    _handed,  # pyright: ignore[reportPrivateUsage]
)

__all__ = ["CheckedJsonTemplate"]

_SCALARS: Final = (str, int, float, bool, type(None))


class _Plan:
    """One checked object on the way to some holes: its own holes and its nested plans."""

    __slots__ = ("children", "data", "depth", "nested", "own")

    def __init__(self, source: CheckedJsonObject) -> None:
        self.data, self.nested, self.depth = _parts(source)
        self.own: list[tuple[str, int]] = []
        self.children: list[tuple[str, _Plan]] = []

    def child(self, key: str) -> _Plan:
        for name, plan in self.children:
            if name == key:
                return plan
        plan = _Plan(self.data[key])  # type: ignore[arg-type]  # checked by the caller
        self.children.append((key, plan))
        return plan

    def steps(self, into: list[_Step]) -> int:
        """Append this plan's steps, children first; returns the index of its own step."""
        kids = tuple((key, plan.steps(into)) for key, plan in self.children)
        into.append((self.data, tuple(self.own), kids, self.nested, self.depth))
        return len(into) - 1


# A checked object to make per fill: its base data, its holes (key, value index), its nested
# objects made by earlier steps (key, step index), its nested keys and depth bound.
_Step = tuple[
    dict[str, object],
    tuple[tuple[str, int], ...],
    tuple[tuple[str, int], ...],
    tuple[str, ...],
    int,
]


def _all_scalars(values: tuple[object, ...]) -> bool:
    """Whether every value is a strict JSON scalar (else :meth:`_refused` says which)."""
    for value in values:
        kind = type(value)
        if kind is str:
            if not value.isascii() and _find_surrogate(value) is not None:  # type: ignore[union-attr, arg-type]
                return False
        elif kind is int:
            if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:  # type: ignore[operator]
                return False
        elif kind is float:
            if value - value != 0.0:  # type: ignore[operator]  # NaN and ±inf give NaN
                return False
        elif value is not None and kind is not bool:
            return False
    return True


def _path_text(path: tuple[str, ...]) -> str:
    return "$" + "".join(f".{key}" for key in path)


@final
class CheckedJsonTemplate:
    """A :class:`~actoviq.core.CheckedJsonObject` with scalar holes (see the module doc).

    Args:
        base: the checked object every fill starts from.
        holes: the fields filled per use, in :meth:`fill`'s argument order: a top-level key, or
            a tuple of keys into nested checked objects. Each must already hold a scalar (text,
            number, bool or null) in ``base``.
        label: what the objects are, for error messages.

    Raises:
        JsonValueError: a hole is missing, repeated, not a scalar field, or on its way goes
            through something that is not a nested checked object.
    """

    __slots__ = ("_base", "_built", "_count", "_depth", "_label", "_paths", "_steps")

    def __init__(
        self,
        base: CheckedJsonObject,
        holes: Sequence[str | tuple[str, ...]],
        *,
        label: str = "value",
    ) -> None:
        if type(base) is not CheckedJsonObject:
            raise JsonValueError(label, "$", expected="a CheckedJsonObject")
        plan = _Plan(base)
        paths: list[tuple[str, ...]] = []
        for index, hole in enumerate(holes):
            path = (hole,) if isinstance(hole, str) else tuple(hole)
            if not path or path in paths or not all(type(key) is str for key in path):
                raise JsonValueError(
                    label, "$", expected=f"distinct, non-empty paths of keys (hole {index})"
                )
            current = plan
            for depth, key in enumerate(path[:-1]):
                if type(current.data.get(key)) is not CheckedJsonObject:
                    raise JsonValueError(
                        label,
                        _path_text(path[: depth + 1]),
                        expected="a nested CheckedJsonObject on the way to a hole",
                    )
                current = current.child(key)
            last = path[-1]
            if last not in current.data or type(current.data[last]) not in _SCALARS:
                raise JsonValueError(label, _path_text(path), expected="a scalar field to fill")
            current.own.append((last, index))
            paths.append(path)
        steps: list[_Step] = []
        plan.steps(steps)
        self._steps = tuple(steps)
        self._paths = tuple(paths)
        self._count = len(paths)
        self._label = label
        self._base = base
        self._depth = base.max_depth
        self._built: tuple[Builder, tuple[object, ...]] | Literal[False] | None = None

    @property
    def holes(self) -> tuple[tuple[str, ...], ...]:
        """The holes' paths, in :meth:`fill`'s argument order."""
        return self._paths

    def fill(self, *values: object) -> CheckedJsonObject:
        """A new checked object with the holes set to ``values`` (only they are checked).

        Raises:
            JsonValueError: wrong number of values, or a value that is not a strict JSON
                scalar (a container, a lone surrogate, an unsafe integer, NaN or infinity).
        """
        if len(values) != self._count:
            raise JsonValueError(
                self._label, "$", expected=f"{self._count} values, one per hole (got {len(values)})"
            )
        if not _all_scalars(values):
            raise self._refused(values)
        made: list[CheckedJsonObject] = []
        for data, own, kids, nested, depth in self._steps:
            copy = data.copy()
            for key, index in own:
                copy[key] = values[index]
            for key, index in kids:
                copy[key] = made[index]
            made.append(_made(copy, nested, depth))
        return made[-1]

    def hand_off(self, *values: object) -> JsonHandOff:
        """Like :meth:`fill`, as a :class:`~actoviq.core.JsonHandOff` of a fresh plain object.

        The plain object is built straight from the checked shape (every array and object a
        new one, the holes set to ``values``) by a function made once per shape, with no
        intermediate checked copies and no walk: its receiver takes it without copying it
        again. Only ``values`` are checked.

        Raises:
            JsonValueError: wrong number of values, a value that is not a strict JSON scalar
                (see :meth:`fill`), or a base whose depth bound is above
                :data:`~actoviq.core.DEFAULT_CHECKED_DEPTH` (it would not fit a hand-off).
        """
        if len(values) != self._count:
            raise JsonValueError(
                self._label, "$", expected=f"{self._count} values, one per hole (got {len(values)})"
            )
        if not _all_scalars(values):
            raise self._refused(values)
        built = self._built if self._built is not None else self._builder()
        if built is False:  # too deep or too large for a builder: a checked fill, copied
            plain = self.fill(*values).to_json()
        else:
            builder, scalars = built
            plain = builder(*values, *scalars)
        return _handed(plain, self._label, self._depth)  # pyright: ignore[reportArgumentType]

    def _builder(self) -> tuple[Builder, tuple[object, ...]] | Literal[False]:
        """The builder of the base's shape (made on the first :meth:`hand_off`)."""
        if self._depth > DEFAULT_CHECKED_DEPTH:
            raise JsonValueError(
                self._label,
                "$",
                expected=f"a template bounded within {DEFAULT_CHECKED_DEPTH} levels to hand off",
            )
        built = builder_for(self._base, self._paths)
        self._built = built if built is not None else False
        return self._built

    def _refused(self, values: tuple[object, ...]) -> JsonValueError:
        for index, value in enumerate(values):
            kind = type(value)
            if kind is str:
                reason = "lone-surrogate"
            elif kind is int:
                reason = "unsafe-integer"
            elif kind is float:
                reason = "non-finite"
            elif value is None or kind is bool:
                continue
            else:
                reason = "not-json"  # a container or another type: never a hole's value
            if reason != "not-json" and json_value_error(value, self._label) is None:
                continue
            return JsonValueError(
                self._label,
                _path_text(self._paths[index]),
                expected="a strict JSON scalar (text, safe integer, finite number, bool or null)",
                reason=reason,
            )
        return JsonValueError(self._label, "$")  # not reached: fill found a refused value
