"""Strict JSON values (spec 02 §1.1, decision D2).

The validator is deliberately stricter than :func:`json.dumps`: only ``None``, ``bool``, ``int``,
finite ``float``, ``str``, ``list`` and ``dict`` with ``str`` keys are accepted, by exact type, and
cycles are rejected. Tuples, sets, bytes, datetimes, ``Decimal``, mappings that are not ``dict`` and
custom objects are rejected because JSON would change or lose them.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeAlias, cast

from actoviq.core.errors import JsonValueError

__all__ = [
    "JsonArray",
    "JsonObject",
    "JsonPrimitive",
    "JsonValue",
    "assert_json_object",
    "assert_json_value",
    "clone_json_value",
    "dumps_canonical",
    "dumps_compact",
    "find_json_violation",
    "is_json_value",
    "loads_strict",
]

JsonPrimitive: TypeAlias = str | int | float | bool | None
JsonValue: TypeAlias = JsonPrimitive | list["JsonValue"] | dict[str, "JsonValue"]
JsonObject: TypeAlias = dict[str, JsonValue]
JsonArray: TypeAlias = list[JsonValue]

_SCALARS = (str, int, bool, type(None))


def find_json_violation(value: object) -> str | None:
    """Return a JSON-path-like location of the first invalid part of ``value``, or None if valid.

    The walk is iterative, so deeply nested values do not hit the recursion limit. Cycles are
    tracked per ancestor path: a shared sub-object reached along two paths (a DAG) is accepted.
    """
    # Stack entries: (value, path, is_exit_marker). Exit markers pop the ancestor set.
    ancestors: set[int] = set()
    stack: list[tuple[object, str, bool]] = [(value, "$", False)]
    while stack:
        current, path, exiting = stack.pop()
        if exiting:
            ancestors.discard(id(current))
            continue
        kind = type(current)
        if kind in _SCALARS:
            continue
        if kind is float:
            if not math.isfinite(cast(float, current)):
                return path
            continue
        if kind is dict or kind is list:
            ident = id(current)
            if ident in ancestors:
                return path
            ancestors.add(ident)
            stack.append((current, path, True))
            if kind is dict:
                mapping = cast("dict[object, object]", current)
                for key, child in mapping.items():
                    if type(key) is not str:
                        return f"{path}[{key!r}]"
                    stack.append((child, f"{path}.{key}", False))
            else:
                sequence = cast("list[object]", current)
                for index, child in enumerate(sequence):
                    stack.append((child, f"{path}[{index}]", False))
            continue
        return path
    return None


def is_json_value(value: object) -> bool:
    """Return True when ``value`` is a finite, acyclic, strict JSON value."""
    return find_json_violation(value) is None


def assert_json_value(value: object, label: str = "value") -> JsonValue:
    """Raise :class:`JsonValueError` (a ``TypeError``) unless ``value`` is a strict JSON value.

    Example:
        >>> assert_json_value({"a": [1, 2.5, None]})
        {'a': [1, 2.5, None]}
    """
    where = find_json_violation(value)
    if where is not None:
        raise JsonValueError(label, where)
    return cast(JsonValue, value)


def assert_json_object(value: object, label: str = "value") -> JsonObject:
    """Like :func:`assert_json_value`, but the value must also be a ``dict``."""
    checked = assert_json_value(value, label)
    if not isinstance(checked, dict):
        raise JsonValueError(label, "$", expected="a JSON object")
    return checked


def dumps_compact(value: JsonValue) -> str:
    """Serialise like ``JSON.stringify``: compact, key order kept, no NaN, UTF-8 text kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def dumps_canonical(value: JsonValue, label: str = "value") -> str:
    """Serialise to stable canonical JSON: validated, compact, keys sorted, no NaN."""
    assert_json_value(value, label)
    return json.dumps(
        value, separators=(",", ":"), ensure_ascii=False, allow_nan=False, sort_keys=True
    )


def _reject_constant(name: str) -> Any:
    raise JsonValueError("json", "$", expected=f"finite numbers (got {name})")


def loads_strict(text: str | bytes, label: str = "json") -> JsonValue:
    """Parse JSON text, refusing ``NaN``/``Infinity`` which :func:`json.loads` accepts by default.

    Raises:
        JsonValueError: the text holds a non-finite number.
        json.JSONDecodeError: the text is not JSON.
    """
    try:
        return cast(JsonValue, json.loads(text, parse_constant=_reject_constant))
    except JsonValueError as error:
        raise JsonValueError(label, "$", expected=error.expected) from None


def clone_json_value(value: object, label: str = "value") -> JsonValue:
    """Validate and deep-copy a JSON value through a real serialise/parse round-trip."""
    assert_json_value(value, label)
    return cast(JsonValue, json.loads(dumps_compact(cast(JsonValue, value))))
