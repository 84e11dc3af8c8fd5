"""A strict JSON object checked once, then read-only (:class:`CheckedJsonObject`).

Validating a JSON value walks all of it. Code that builds the same pieces again and again (the
orchestration layer injects a scope's policy, tenant, workspace and budget into every child run's
metadata) can check each piece once and reuse it: a :class:`CheckedJsonObject` is validated and
copied when it is made, cannot be changed afterwards, and a :class:`CheckedJsonObject` nested in
another one is taken as it is (never walked again). Whoever receives one (the runtime, for run
metadata) skips its own check and takes a fresh plain copy with :meth:`CheckedJsonObject.to_json`.

Nothing is trusted that was not checked: every plain value given to the constructor is validated
with the rules of :mod:`actoviq.core.json` and copied (mutating the source afterwards changes
nothing), and depth is bounded through ``max_depth``: a nested object's bound must be smaller
than its container's.

Example:
    >>> policy = CheckedJsonObject({"id": "default", "attributes": {"tier": 1}}, max_depth=8)
    >>> meta = CheckedJsonObject({"policy": policy, "attempt": 1})
    >>> meta.to_json()
    {'policy': {'id': 'default', 'attributes': {'tier': 1}}, 'attempt': 1}
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final, cast, final

from actoviq.core._json_rules import INVALID, MAX_JSON_DEPTH, MAX_SAFE_INTEGER, scan
from actoviq.core.errors import JsonValueError
from actoviq.core.json import JsonObject, JsonValue, json_value_error

__all__ = ["DEFAULT_CHECKED_DEPTH", "CheckedJsonObject"]

DEFAULT_CHECKED_DEPTH: Final = MAX_JSON_DEPTH - 1
"""The default depth bound of a :class:`CheckedJsonObject` (511): one less than
:data:`~actoviq.core.json.MAX_JSON_DEPTH`, so it can be a value of a run's metadata object."""


_find_surrogate = re.compile("[\ud800-\udfff]").search


def _invalid(value: object, label: str, max_depth: int) -> JsonValueError:
    error = json_value_error(value, label, max_depth=max_depth)
    return error if error is not None else JsonValueError(label, "$")


def _copy(value: object) -> Any:
    """A plain deep copy of a checked plain array or object, without recursion."""
    if not value:
        return {} if type(value) is dict else []
    root: list[Any] = []
    stack: list[tuple[object, list[Any] | dict[str, Any], object]] = [(value, root, None)]
    while stack:
        node, parent, key = stack.pop()
        copy: list[Any] | dict[str, Any]
        if type(node) is dict:
            copy = dict(cast("dict[str, object]", node))
            for child_key, child in copy.items():
                if type(child) is dict or type(child) is list:
                    stack.append((cast(object, child), copy, child_key))
        else:
            copy = list(cast("list[object]", node))
            for index, child in enumerate(copy):
                if type(child) is dict or type(child) is list:
                    stack.append((cast(object, child), copy, index))
        if key is None:
            root.append(copy)
        elif type(parent) is dict:
            parent[cast(str, key)] = copy
        else:
            cast("list[Any]", parent)[cast(int, key)] = copy
    return root[0]


def _check_into(
    data: dict[str, object],
    nested: list[str],
    value: Mapping[str, object],
    label: str,
    max_depth: int,
) -> None:
    """Check each item of ``value`` and store it (plain containers copied) in ``data``."""
    find = _find_surrogate
    for key, item in value.items():
        if type(key) is not str or (  # a key already stored was checked then (an update)
            key not in data and not key.isascii() and find(key) is not None
        ):
            raise _invalid({key: None}, label, max_depth)
        kind = type(item)
        if kind is str:
            if not item.isascii() and find(item) is not None:  # type: ignore[union-attr]
                raise _invalid({key: item}, label, max_depth)
        elif kind is int:
            if item > MAX_SAFE_INTEGER or item < -MAX_SAFE_INTEGER:  # type: ignore[operator]
                raise _invalid({key: item}, label, max_depth)
        elif kind is float:
            if item - item != 0.0:  # type: ignore[operator]  # NaN and ±inf give NaN
                raise _invalid({key: item}, label, max_depth)
        elif kind is CheckedJsonObject:
            if item._max_depth >= max_depth:  # type: ignore[union-attr]
                raise JsonValueError(
                    label,
                    f"$.{key}",
                    expected=f"a nested checked object bounded below {max_depth} levels",
                    reason="too-deep",
                )
            if key not in nested:
                nested.append(key)
        elif item is not None and kind is not bool:
            if scan(item, max_depth - 1) == INVALID:
                raise _invalid({key: item}, label, max_depth)
            item = _copy(item)
            if key not in nested:
                nested.append(key)
        data[key] = item


def _init(
    target: CheckedJsonObject, data: dict[str, object], nested: list[str], depth: int
) -> None:
    setattr_ = object.__setattr__
    setattr_(target, "_data", data)
    setattr_(target, "_nested", tuple(nested))
    setattr_(target, "_max_depth", depth)


class _Unsealed(Mapping[str, JsonValue]):
    """The slot layout of :class:`CheckedJsonObject` (same base) without its read-only guard.

    An instance is filled with plain slot stores, then becomes a :class:`CheckedJsonObject` by
    assigning ``__class__``: ``object.__setattr__`` on a class that overrides ``__setattr__``
    walks the class hierarchy on every call (CPython's "hackcheck"), which cost more than the
    rest of making a copy. Never handed out.
    """

    __slots__ = ("_data", "_max_depth", "_nested")

    _data: dict[str, object]
    _nested: tuple[str, ...]
    _max_depth: int

    def __getitem__(self, key: str) -> JsonValue:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _made(data: dict[str, object], nested: tuple[str, ...], depth: int) -> CheckedJsonObject:
    made = _Unsealed()
    made._data = data  # pyright: ignore[reportPrivateUsage]
    made._nested = nested  # pyright: ignore[reportPrivateUsage]
    made._max_depth = depth  # pyright: ignore[reportPrivateUsage]
    made.__class__ = CheckedJsonObject  # pyright: ignore[reportAttributeAccessIssue]
    return made  # pyright: ignore[reportReturnType]


@final
class CheckedJsonObject(Mapping[str, JsonValue]):
    """A strict JSON object validated and copied once, then read-only (see the module doc).

    Args:
        value: the object; its values may be other :class:`CheckedJsonObject` instances (kept
            as they are, not checked again), everything else is validated and deep-copied.
        label: what the value is, for error messages (``"run metadata"``).
        max_depth: the deepest the object may be (``{}`` is 1 deep); a nested checked object
            must have a smaller bound.

    Raises:
        JsonValueError: ``value`` is not a mapping with string keys, a value is not strict JSON
            (the error's ``path`` names it), or a nested checked object's bound is not smaller
            than ``max_depth`` (reason ``too-deep``).

    Reading a key returns a nested :class:`CheckedJsonObject` as is and a copy of any other
    array or object, so nothing reachable from the object changes it.
    """

    __slots__ = ("_data", "_max_depth", "_nested")

    _data: dict[str, object]
    _nested: tuple[str, ...]  # keys holding an array, an object or a checked object
    _max_depth: int

    def __init__(
        self,
        value: Mapping[str, object] | None = None,
        /,
        *,
        label: str = "value",
        max_depth: int = DEFAULT_CHECKED_DEPTH,
    ) -> None:
        if type(max_depth) is not int or not 1 <= max_depth <= MAX_JSON_DEPTH:
            raise JsonValueError(label, "$", expected=f"max_depth within 1..{MAX_JSON_DEPTH}")
        if value is None:
            value = {}
        if not isinstance(value, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise JsonValueError(label, "$", expected="a JSON object")
        data: dict[str, object] = {}
        nested: list[str] = []
        _check_into(data, nested, value, label, max_depth)
        _init(self, data, nested, max_depth)

    def updated(
        self, changes: Mapping[str, object], /, *, label: str = "value"
    ) -> CheckedJsonObject:
        """A copy with ``changes`` set (added or replaced); only the changed values are checked.

        Raises:
            JsonValueError: a changed key or value is not strict JSON (see the class doc).
        """
        source: Mapping[str, object] = changes  # kept apart from the narrowing below
        if type(changes) is not dict and not isinstance(changes, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise JsonValueError(label, "$", expected="a JSON object")
        data = self._data.copy()
        nested = self._nested
        max_depth = self._max_depth
        find = _find_surrogate
        for key, item in source.items():  # the fast path: known keys, same kind of value
            if key not in data:
                break  # a new key: checked below
            kind = type(item)
            if kind is str:
                if key in nested or not (item.isascii() or find(item) is None):  # type: ignore[union-attr]
                    break
            elif kind is CheckedJsonObject:
                # A checked object in place of another one: nested stays as it is.
                if type(data[key]) is not CheckedJsonObject or item._max_depth >= max_depth:  # type: ignore[union-attr]
                    break
            elif item is None or kind is bool:
                if key in nested:
                    break
            elif kind is int:
                if key in nested or not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:  # type: ignore[operator]
                    break
            elif kind is float:
                if key in nested or item - item != 0.0:  # type: ignore[operator]  # NaN, ±inf
                    break
            else:
                break  # a container, or another type: looked at closely below
            data[key] = item
        else:
            return _made(data, nested, max_depth)
        data = self._data.copy()
        keys: list[str] = [key for key in nested if key not in source] if nested else []
        _check_into(data, keys, source, label, max_depth)
        return _made(data, tuple(keys), max_depth)

    @property
    def max_depth(self) -> int:
        """The depth bound the object was checked against."""
        return self._max_depth

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]
        if type(value) is dict or type(value) is list:
            return _copy(cast(object, value))
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __repr__(self) -> str:
        return f"CheckedJsonObject({self.to_json()!r})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("CheckedJsonObject is read-only.")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("CheckedJsonObject is read-only.")

    def to_json(self) -> JsonObject:
        """A fresh plain copy (``dict``/``list`` all the way down), not checked again."""
        root = self._data.copy()
        if not self._nested:
            return root  # pyright: ignore[reportReturnType]
        stack = [(root, self._nested)]
        push = stack.append
        while stack:
            target, keys = stack.pop()
            for key in keys:
                value = target[key]
                if type(value) is CheckedJsonObject:
                    copy = value._data.copy()
                    target[key] = copy
                    if value._nested:
                        push((copy, value._nested))
                elif value:
                    target[key] = _copy(value)
                else:  # an empty array or object
                    target[key] = {} if type(value) is dict else []
        return root  # pyright: ignore[reportReturnType]


def _parts(value: CheckedJsonObject) -> tuple[dict[str, object], tuple[str, ...], int]:  # pyright: ignore[reportUnusedFunction]
    """``value``'s data, nested keys and depth bound (for :mod:`actoviq.core.checked_template`).

    The template never changes the dict: it builds its copies with :func:`_made`.
    """
    return value._data, value._nested, value._max_depth  # pyright: ignore[reportPrivateUsage]
