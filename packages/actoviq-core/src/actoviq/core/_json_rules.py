"""The strict-JSON walks behind :mod:`actoviq.core.json` (internal).

Two walks implement one rule set:

* :func:`scan` answers "valid?" in one pass without building paths (the hot path: item
  construction, store writes, encoders). It also reports whether the value holds an integral
  float in the safe range, which the encoders write as an integer.
* :func:`violation` re-walks a value that :func:`scan` refused, with paths and cycle tracking,
  to name the first violation and its reason. It only runs on the error path.

Both are iterative (a stack, never Python recursion), so a value nested a million levels deep is
refused in time proportional to the depth limit, not to the value, and cycles end at the depth
limit at the latest.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final, cast

__all__ = [
    "INTEGRAL_FLOATS",
    "INVALID",
    "MAX_JSON_DEPTH",
    "MAX_SAFE_INTEGER",
    "MAX_WIRE_DEPTH",
    "VALID",
    "has_surrogate",
    "plain_numbers",
    "scan",
    "violation",
]

MAX_JSON_DEPTH: Final = 512
"""The deepest nesting of arrays/objects a JSON value may have: ``[]`` is 1 deep, ``[[1]]`` 2.

It applies to every value the SDK accepts: item fields, tool inputs and outputs, metadata, event
data, store values."""

MAX_WIRE_DEPTH: Final = MAX_JSON_DEPTH + 64
"""The deepest nesting of a *document* that carries such values (576): an item, a run event, a
run state, a store record. The 64 levels of headroom are the SDK's own envelopes, so a value at
:data:`MAX_JSON_DEPTH` can always be written inside them and read back."""

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""The largest integer every JSON reader holds exactly (JavaScript's ``Number.MAX_SAFE_INTEGER``).

Integers beyond ±this are refused; values that need more range travel as strings."""

INVALID: Final = 0
VALID: Final = 1
INTEGRAL_FLOATS: Final = 2
"""Valid, and holds a float with an integral value in the safe range (written as an integer)."""

_find_surrogate = re.compile("[\ud800-\udfff]").search
_LOW: Final = -MAX_SAFE_INTEGER
_HIGH: Final = MAX_SAFE_INTEGER
_LOW_FLOAT: Final = float(-MAX_SAFE_INTEGER)
_HIGH_FLOAT: Final = float(MAX_SAFE_INTEGER)


def has_surrogate(text: str) -> bool:
    """True when ``text`` holds a UTF-16 surrogate code point (it cannot be encoded as UTF-8).

    ``str.isascii`` is O(1) in CPython, so ASCII text costs one call.
    """
    return not text.isascii() and _find_surrogate(text) is not None


def _integral(value: float) -> bool:
    return value.is_integer() and _LOW_FLOAT <= value <= _HIGH_FLOAT


def scan(value: object, max_depth: int) -> int:
    """:data:`INVALID`, :data:`VALID` or :data:`INTEGRAL_FLOATS` for ``value`` (exact types).

    Depth counts arrays and objects: a scalar is at depth 0, ``[]`` at 1, ``[[1]]`` at 2.
    """
    kind = type(value)
    if kind is not dict and kind is not list:
        return _scan_leaf(value)
    if max_depth < 1:
        return INVALID
    status = VALID
    find = _find_surrogate
    stack: list[tuple[object, int]] = [(value, 1)]
    pop = stack.pop
    push = stack.append
    while stack:
        node, depth = pop()
        children: object
        if type(node) is dict:
            mapping = cast("dict[object, object]", node)
            for key in mapping:
                if type(key) is not str or (not key.isascii() and find(key) is not None):
                    return INVALID
            children = mapping.values()
        else:
            children = node
        deeper = depth + 1
        for child in cast("list[object]", children):
            kind = type(child)
            if kind is str:
                if not child.isascii() and find(child) is not None:  # type: ignore[attr-defined]
                    return INVALID
            elif kind is int:
                if child > _HIGH or child < _LOW:  # type: ignore[operator]
                    return INVALID
            elif kind is dict or kind is list:
                if deeper > max_depth:
                    return INVALID
                push((child, deeper))
            elif kind is float:
                number = cast(float, child)
                if number - number != 0.0:  # NaN and ±inf give NaN
                    return INVALID
                if status == VALID and _integral(number):
                    status = INTEGRAL_FLOATS
            elif child is not None and kind is not bool:
                return INVALID
    return status


def _scan_leaf(value: object) -> int:
    kind = type(value)
    if kind is str:
        return INVALID if has_surrogate(cast(str, value)) else VALID
    if kind is int:
        return VALID if _LOW <= cast(int, value) <= _HIGH else INVALID
    if kind is float:
        number = cast(float, value)
        if not math.isfinite(number):
            return INVALID
        return INTEGRAL_FLOATS if _integral(number) else VALID
    if value is None or kind is bool:
        return VALID
    return INVALID


# --- the error path ----------------------------------------------------------------------------

NOT_JSON: Final = "not-json"
NON_FINITE: Final = "non-finite"
UNSAFE_INTEGER: Final = "unsafe-integer"
SURROGATE: Final = "lone-surrogate"
NON_STRING_KEY: Final = "non-string-key"
CYCLE: Final = "cycle"
TOO_DEEP: Final = "too-deep"


def _leaf_reason(value: object) -> str | None:
    kind = type(value)
    if kind is str:
        return SURROGATE if has_surrogate(cast(str, value)) else None
    if kind is int:
        return None if _LOW <= cast(int, value) <= _HIGH else UNSAFE_INTEGER
    if kind is float:
        return None if math.isfinite(cast(float, value)) else NON_FINITE
    if value is None or kind is bool:
        return None
    return NOT_JSON


def _key_path(path: str, key: str) -> str:
    return f"{path}.{key}"


def violation(value: object, max_depth: int) -> tuple[str, str] | None:
    """``(path, reason)`` of the first violation of ``value``, or None when it is valid.

    Reasons: ``not-json`` (a type JSON cannot hold), ``non-finite``, ``unsafe-integer``,
    ``lone-surrogate``, ``non-string-key``, ``cycle``, ``too-deep``. Cycles are tracked per
    ancestor path, so a shared sub-object reached along two paths (a DAG) is accepted.
    """
    ancestors: set[int] = set()
    # (value, path, depth, exiting): an exit marker removes its container from the ancestors.
    stack: list[tuple[object, str, int, bool]] = [(value, "$", 0, False)]
    while stack:
        current, path, depth, exiting = stack.pop()
        if exiting:
            ancestors.discard(id(current))
            continue
        kind = type(current)
        if kind is not dict and kind is not list:
            reason = _leaf_reason(current)
            if reason is not None:
                return path, reason
            continue
        ident = id(current)
        if ident in ancestors:
            return path, CYCLE
        if depth + 1 > max_depth:
            return path, TOO_DEEP
        ancestors.add(ident)
        stack.append((current, path, depth, True))
        pending: list[tuple[object, str, int, bool]] = []
        if kind is dict:
            mapping = cast("dict[object, object]", current)
            for key, child in mapping.items():
                if type(key) is not str:
                    return f"{path}[{key!r}]", NON_STRING_KEY
                if has_surrogate(key):
                    return _key_path(path, ascii(key)), SURROGATE
                pending.append((child, _key_path(path, key), depth + 1, False))
        else:
            sequence = cast("list[object]", current)
            for index, child in enumerate(sequence):
                pending.append((child, f"{path}[{index}]", depth + 1, False))
        pending.reverse()  # report the first violation in document order
        stack.extend(pending)
    return None


# --- writing numbers ---------------------------------------------------------------------------


def plain_numbers(value: object) -> object:
    """``value`` with every integral float in the safe range as an ``int``, for encoding.

    Only called when :func:`scan` returned :data:`INTEGRAL_FLOATS`. JSON has one number type:
    JavaScript (and any reader following ECMAScript ``Number::toString``) writes ``2.0`` as ``2``,
    so writing it as ``2`` ourselves means every reader sees the same number in the same form.

    Containers are copied only on the path to a float that changes (the rest is shared with
    ``value``, which is never modified), so the result is for encoding, not for handing out.
    """
    kind = type(value)
    if kind is float:
        number = cast(float, value)
        return int(number) if _integral(number) else number
    if kind is not dict and kind is not list:
        return value
    # A frame per container: [original, copy or None, parent frame or None, key in the parent].
    root: list[Any] = [value, None, None, None]
    stack: list[list[Any]] = [root]
    while stack:
        frame = stack.pop()
        node = frame[0]
        pairs: Any = (
            cast("dict[Any, object]", node).items()
            if type(node) is dict
            else (enumerate(cast("list[object]", node)))
        )
        for key, child in pairs:
            child_kind: type = type(cast(object, child))
            if child_kind is float:
                if _integral(cast(float, child)):
                    _copied(frame)[key] = int(cast(float, child))
            elif child_kind is dict or child_kind is list:
                stack.append([child, None, frame, key])
    return root[1] if root[1] is not None else value


def _copied(frame: list[Any]) -> Any:
    """The frame's container copied (once), linked into its parent's copy."""
    copy: Any = frame[1]
    if copy is None:
        original: Any = frame[0]
        if type(original) is dict:
            copy = dict(cast("dict[str, object]", original))
        else:
            copy = list(cast("list[object]", original))
        frame[1] = copy
        parent = frame[2]
        if parent is not None:
            _copied(parent)[frame[3]] = copy
    return copy
