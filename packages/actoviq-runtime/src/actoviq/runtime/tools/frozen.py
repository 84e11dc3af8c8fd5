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
from typing import TypeAlias, cast

from actoviq.core import JsonValue, JsonValueError, find_json_violation

__all__ = ["FrozenJson", "freeze_json", "thaw_json"]

FrozenJson: TypeAlias = (
    "str | int | float | bool | tuple[FrozenJson, ...] | Mapping[str, FrozenJson] | None"
)


def freeze_json(value: object, label: str = "value") -> FrozenJson:
    """Validate ``value`` as strict JSON (frozen input accepted) and return a deep-frozen copy.

    Raises:
        JsonValueError: ``value`` is not finite, acyclic JSON.
    """
    plain = thaw_json(value) if _is_frozen_container(value) else value
    violation = find_json_violation(plain)
    if violation is not None:
        raise JsonValueError(label, violation)
    return _freeze(cast(JsonValue, plain))


def thaw_json(value: object) -> JsonValue:
    """A plain, mutable JSON copy of a frozen (or plain) JSON value."""
    if isinstance(value, Mapping):
        mapping = cast(Mapping[object, object], value)
        return {str(key): thaw_json(item) for key, item in mapping.items()}
    if isinstance(value, list | tuple):
        sequence = cast(list[object] | tuple[object, ...], value)
        return [thaw_json(item) for item in sequence]
    return cast(JsonValue, value)


def _is_frozen_container(value: object) -> bool:
    return isinstance(value, MappingProxyType | tuple)


def _freeze(value: JsonValue) -> FrozenJson:
    if isinstance(value, dict):
        return MappingProxyType({key: _freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    return value
