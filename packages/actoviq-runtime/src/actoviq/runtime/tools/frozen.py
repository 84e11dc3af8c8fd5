"""Deep-frozen JSON values: what tool outputs and middleware read-only views hold.

``freeze_json`` turns dicts into :class:`types.MappingProxyType` and lists into tuples, so a
holder cannot change a value it was handed; ``thaw_json`` makes a fresh plain-JSON copy again
(for canonical items and the wire).

Example:
    >>> frozen = freeze_json({"a": [1, 2]})
    >>> frozen["a"]
    (1, 2)
    >>> thaw_json(frozen)
    {'a': [1, 2]}
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeAlias, cast

from actoviq.core import MAX_JSON_DEPTH, MAX_WIRE_DEPTH, JsonValue, JsonValueError, json_value_error

__all__ = ["FrozenJson", "freeze_json", "thaw_json"]

FrozenJson: TypeAlias = (
    "str | int | float | bool | tuple[FrozenJson, ...] | Mapping[str, FrozenJson] | None"
)
"""An immutable JSON value (tuples and read-only mappings) handed to tools."""


def freeze_json(
    value: object, label: str = "value", *, max_depth: int = MAX_JSON_DEPTH
) -> FrozenJson:
    """Validate ``value`` as strict JSON (frozen input accepted) and return a deep-frozen copy.

    Both copies are made with an explicit stack, so a value at the depth limit never meets
    Python's recursion limit.

    Raises:
        JsonValueError: ``value`` is not strict JSON (``reason`` and ``path`` say why and where).
    """
    plain = thaw_json(value) if _is_frozen_container(value) else value
    error = json_value_error(plain, label, max_depth=max_depth)
    if error is not None:
        raise error
    return cast(FrozenJson, _freeze(plain))


def thaw_json(value: object) -> JsonValue:
    """A plain, mutable JSON copy of a frozen (or plain) JSON value.

    Raises:
        JsonValueError: the value nests deeper than ``MAX_WIRE_DEPTH`` (or is cyclic).
    """
    return cast(JsonValue, _thaw(value))


_SCALARS = frozenset({str, int, float, bool, type(None)})
_PLAIN_CONTAINERS = frozenset({dict, list, tuple, MappingProxyType})


def _is_frozen_container(value: object) -> bool:
    return type(value) in (MappingProxyType, tuple) or (
        type(value) not in _SCALARS and isinstance(value, MappingProxyType | tuple)
    )


def _container(value: object) -> bool:
    kind = type(value)
    if kind in _PLAIN_CONTAINERS:
        return True
    return kind not in _SCALARS and isinstance(value, Mapping | list | tuple)


def _too_deep() -> JsonValueError:
    return JsonValueError(
        "value",
        "$",
        expected=f"a JSON value nested at most {MAX_WIRE_DEPTH} levels deep",
        reason="too-deep",
    )


def _thaw(value: object) -> object:
    """Copy mappings to dicts and lists/tuples to lists (iteratively, ``MAX_WIRE_DEPTH`` deep)."""
    if not _container(value):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 1)]  # (source, target, slot, depth)
    scalars = _SCALARS
    while stack:
        source, target, slot, depth = stack.pop()
        if depth > MAX_WIRE_DEPTH:
            raise _too_deep()
        copy: Any
        if type(source) is dict or isinstance(source, Mapping):
            mapping = cast(Mapping[object, object], source)
            copy = {key if type(key) is str else str(key): item for key, item in mapping.items()}
            for key, item in copy.items():
                if type(item) not in scalars and _container(item):
                    stack.append((item, copy, key, depth + 1))
        else:
            copy = list(cast(list[object] | tuple[object, ...], source))
            for index, item in enumerate(copy):
                if type(item) not in scalars and _container(item):
                    stack.append((item, copy, index, depth + 1))
        target[slot] = copy
    return root[0]


def _freeze(value: object) -> object:
    """Deep-freeze a validated plain JSON value (dicts → read-only proxies, lists → tuples)."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]  # (source, target, slot)
    built: list[tuple[Any, Any, Any]] = []
    while stack:
        source, target, slot = stack.pop()
        copy: dict[str, object] | list[object]
        if type(source) is dict:
            mapping: dict[str, object] = dict(cast(dict[str, object], source))
            for key, item in mapping.items():
                kind = type(item)
                if kind is dict or kind is list:
                    stack.append((item, mapping, key))
            copy = mapping
        else:
            sequence: list[object] = list(cast(list[object], source))
            for index, item in enumerate(sequence):
                kind = type(item)
                if kind is dict or kind is list:
                    stack.append((item, sequence, index))
            copy = sequence
        target[slot] = copy
        built.append((copy, target, slot))
    # Parents were built before their children: freezing in reverse order freezes the inner
    # containers before the outer ones that hold them.
    for copy, target, slot in reversed(built):
        target[slot] = MappingProxyType(copy) if type(copy) is dict else tuple(copy)
    return root[0]
