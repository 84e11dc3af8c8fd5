"""``to_tool_json``: what a tool returns, as JSON (attrs, dataclass, pydantic, enum, tuple).

A leaf module below the runner (which re-exports it); the MCP server converts agent output with
it too.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from collections.abc import Sequence
from typing import Any, cast

import attrs

from actoviq.core import MAX_WIRE_DEPTH, JsonValueError, converter

__all__ = ["json_size_over", "to_tool_json"]


def to_tool_json(value: object) -> object:
    """Convert common typed values to JSON: attrs/dataclass/pydantic/enum/tuple; others unchanged.

    The result is checked for strict JSON when the :class:`ToolOutput` is built. The walk uses an
    explicit stack, so a value at the depth limit converts whatever the caller's stack depth.

    Raises:
        JsonValueError: the value nests deeper than ``MAX_WIRE_DEPTH`` (or is cyclic).
    """
    root: list[Any] = [None]
    stack: list[tuple[object, Any, Any, int]] = [(value, root, 0, 0)]
    while stack:
        current, target, slot, depth = stack.pop()
        if current is None or type(current) in (str, int, float, bool):
            target[slot] = current
            continue
        if isinstance(current, dict | list | tuple):
            if depth >= MAX_WIRE_DEPTH:
                raise JsonValueError(
                    "Tool output",
                    "$",
                    expected=f"a JSON value nested at most {MAX_WIRE_DEPTH} levels deep",
                    reason="too-deep",
                )
            if isinstance(current, dict):
                mapping: dict[object, Any] = {}
                for key, item in cast(dict[object, object], current).items():
                    mapping[key] = None
                    stack.append((item, mapping, key, depth + 1))
                target[slot] = mapping
            else:
                items: list[Any] = list(cast(Sequence[object], current))
                for index, item in enumerate(items):
                    stack.append((item, items, index, depth + 1))
                target[slot] = items
            continue
        converted = _typed_json(current)
        if converted is current:
            target[slot] = current
        else:
            stack.append((converted, target, slot, depth))
    return root[0]


def _typed_json(value: object) -> object:
    """One conversion step of a typed value (the result is walked again), or ``value`` itself."""
    if isinstance(value, enum.Enum):
        return value.value
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return cast(Any, value).model_dump(mode="json")
    if attrs.has(type(value)):
        return converter.unstructure(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def json_size_over(value: object, limit: int) -> int | None:
    """The size of JSON ``value`` when it exceeds ``limit``, else None (counting stops early).

    The size is the length of the value's compact JSON text, with each string counted by its
    length (escapes not counted): ``len(json.dumps(value, separators=(",", ":")))`` for ASCII
    text without escapes. Counting stops once past ``limit``, so a huge value costs only
    ``limit`` characters of work, and a small one a short walk.
    """
    if type(value) is str:
        size = len(value) + 2
        return size if size > limit else None
    total = 0
    stack: list[object] = [value]
    while stack:
        current = stack.pop()
        kind = type(current)
        if kind is str:
            total += len(cast(str, current)) + 2
        elif kind is dict:
            mapping = cast(dict[str, object], current)
            total += 1 + len(mapping) if mapping else 2  # braces and commas
            for key, item in mapping.items():
                total += (len(key) if type(key) is str else len(str(key))) + 3
                stack.append(item)
        elif kind is list or kind is tuple:
            items = cast(Sequence[object], current)
            total += 1 + len(items) if items else 2
            stack.extend(items)
        elif current is None or current is True:
            total += 4
        elif current is False:
            total += 5
        else:
            total += len(repr(current))
        if total > limit:
            return total
    return None
