"""Strict JSON values (spec 02 §1.1, decisions D2 and D10).

Strict JSON is what every reader — Python, JavaScript, any language — reads back unchanged:

* only ``None``, ``bool``, ``int``, finite ``float``, ``str``, ``list`` and ``dict`` with ``str``
  keys, by exact type (tuples, sets, bytes, datetimes, ``Decimal``, other mappings and custom
  objects are refused because JSON would change or lose them);
* integers within ±(2^53 - 1) (:data:`MAX_SAFE_INTEGER`): a JavaScript reader rounds larger
  ones silently, so values that need more range travel as strings by convention;
* no UTF-16 surrogate code points in any string, keys included (a lone surrogate cannot be
  written as UTF-8, and a pair of them is not the character it looks like);
* at most :data:`MAX_JSON_DEPTH` nested arrays/objects, hence acyclic.

Validation, encoding and decoding are iterative and refuse what breaks a rule with
:class:`~actoviq.core.errors.JsonValueError` naming the path and the reason; none of them raises
``RecursionError``, ``UnicodeEncodeError`` or ``OverflowError``.

Numbers on the wire: JSON has one number type. The encoders here write a float with an integral
value inside the safe range as an integer (``2.0`` → ``2``, ``-0.0`` → ``0``), exactly as
JavaScript does, so a value read back — by us, or by us after a JavaScript program rewrote it —
is the same number of the same type (``int``). Other floats are written in Python's shortest
round-trip form; one that JavaScript would rewrite as an integer beyond the safe range (a float
in [2^53, 1e21)) is then refused when read back, never silently changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias, cast

from actoviq.core._json_rules import (
    CYCLE,
    INTEGRAL_FLOATS,
    INVALID,
    MAX_JSON_DEPTH,
    MAX_SAFE_INTEGER,
    MAX_WIRE_DEPTH,
    NON_FINITE,
    NON_STRING_KEY,
    NOT_JSON,
    SURROGATE,
    TOO_DEEP,
    UNSAFE_INTEGER,
    has_surrogate,
    plain_numbers,
    scan,
    violation,
)
from actoviq.core.errors import JsonValueError

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_SAFE_INTEGER",
    "MAX_WIRE_DEPTH",
    "JsonArray",
    "JsonLike",
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
    "json_value_error",
    "loads_strict",
    "well_formed_text",
]

JsonPrimitive: TypeAlias = str | int | float | bool | None
"""A strict JSON scalar: string, number, boolean or null."""
JsonValue: TypeAlias = JsonPrimitive | list["JsonValue"] | dict[str, "JsonValue"]
"""Any strict JSON value (finite numbers, safe integers, string keys, bounded depth)."""
JsonObject: TypeAlias = dict[str, JsonValue]
"""A strict JSON object (string keys)."""
JsonArray: TypeAlias = list[JsonValue]
"""A strict JSON array."""
JsonLike: TypeAlias = (
    "str | int | float | bool | Sequence[JsonLike] | Mapping[str, JsonLike] | None"
)
"""What a public input that becomes JSON accepts: a variable holding ``{"a": [1, 2]}`` (inferred
``dict[str, list[int]]``) type-checks, unlike with the invariant :data:`JsonValue`. The value is
still validated as strict JSON at runtime (a tuple or a ``Mapping`` that is not a ``dict`` inside
it is refused where strict JSON is required)."""

_EXPECTED: Final = {
    NOT_JSON: None,
    NON_FINITE: None,
    CYCLE: None,
    NON_STRING_KEY: None,
    UNSAFE_INTEGER: "a JSON value with integers within ±(2^53 - 1), larger ones sent as strings",
    SURROGATE: "a JSON value with no lone UTF-16 surrogates in its strings",
    TOO_DEEP: "a JSON value nested at most {depth} levels deep",
}


def json_value_error(
    value: object, label: str = "value", *, max_depth: int = MAX_JSON_DEPTH
) -> JsonValueError | None:
    """The :class:`JsonValueError` that ``value`` deserves, or None when it is strict JSON.

    The error's ``path`` names the first violation (``$.a.b[1]``) and ``reason`` says what is
    wrong: ``not-json``, ``non-finite``, ``unsafe-integer``, ``lone-surrogate``,
    ``non-string-key``, ``cycle`` or ``too-deep``.
    """
    if scan(value, max_depth) != INVALID:
        return None
    found = violation(value, max_depth)
    path, reason = found if found is not None else ("$", TOO_DEEP)
    return _error(label, path, reason, max_depth)


def _error(label: str, path: str, reason: str, max_depth: int) -> JsonValueError:
    return JsonValueError(label, path, expected=_expected_text(reason, max_depth), reason=reason)


def _expected_text(reason: str | None, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """What a value must be, for a :class:`JsonValueError` ``reason`` (None: the reference text)."""
    expected = _EXPECTED.get(reason) if reason is not None else None
    return expected.format(depth=max_depth) if expected is not None else None


def find_json_violation(value: object, *, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Return a JSON-path-like location of the first invalid part of ``value``, or None if valid.

    The walk is iterative, so deeply nested values never hit the recursion limit. Cycles are
    tracked per ancestor path: a shared sub-object reached along two paths (a DAG) is accepted.
    """
    if scan(value, max_depth) != INVALID:
        return None
    found = violation(value, max_depth)
    return found[0] if found is not None else "$"


def is_json_value(value: object, *, max_depth: int = MAX_JSON_DEPTH) -> bool:
    """Return True when ``value`` is strict JSON (see the module docstring for the rules)."""
    return scan(value, max_depth) != INVALID


def assert_json_value(
    value: object, label: str = "value", *, max_depth: int = MAX_JSON_DEPTH
) -> JsonValue:
    """Raise :class:`JsonValueError` (a ``TypeError``) unless ``value`` is strict JSON.

    Example:
        >>> assert_json_value({"a": [1, 2.5, None]})
        {'a': [1, 2.5, None]}
    """
    if scan(value, max_depth) == INVALID:
        error = json_value_error(value, label, max_depth=max_depth)
        assert error is not None
        raise error
    return cast(JsonValue, value)


def assert_json_object(
    value: object, label: str = "value", *, max_depth: int = MAX_JSON_DEPTH
) -> JsonObject:
    """Like :func:`assert_json_value`, but the value must also be a ``dict``."""
    checked = assert_json_value(value, label, max_depth=max_depth)
    if not isinstance(checked, dict):
        raise JsonValueError(label, "$", expected="a JSON object")
    return checked


def _writable(value: object, label: str, max_depth: int) -> object:
    """``value`` checked, with integral floats as ints when it holds any (see module docs)."""
    status = scan(value, max_depth)
    if status == INVALID:
        error = json_value_error(value, label, max_depth=max_depth)
        assert error is not None
        raise error
    return plain_numbers(value) if status == INTEGRAL_FLOATS else value


def _too_deep(label: str, max_depth: int) -> JsonValueError:
    # Only reachable when the caller's own stack is already close to the recursion limit.
    return _error(label, "$", TOO_DEEP, max_depth)


def dumps_compact(
    value: JsonValue, label: str = "value", *, max_depth: int = MAX_JSON_DEPTH
) -> str:
    """Serialise like ``JSON.stringify``: compact, key order kept, UTF-8 text kept.

    Raises:
        JsonValueError: ``value`` is not strict JSON.
    """
    plain = _writable(value, label, max_depth)
    try:
        return json.dumps(plain, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except RecursionError:
        raise _too_deep(label, max_depth) from None


def dumps_canonical(
    value: JsonValue, label: str = "value", *, max_depth: int = MAX_JSON_DEPTH
) -> str:
    """Serialise to stable canonical JSON: validated, compact, keys sorted, one form per number.

    Equal values give equal text: ``1`` and ``1.0`` both give ``1``, ``-0.0`` gives ``0``.

    Raises:
        JsonValueError: ``value`` is not strict JSON.
    """
    plain = _writable(value, label, max_depth)
    try:
        return json.dumps(
            plain, separators=(",", ":"), ensure_ascii=False, allow_nan=False, sort_keys=True
        )
    except RecursionError:
        raise _too_deep(label, max_depth) from None


def _reject_constant(name: str) -> Any:
    raise JsonValueError("json", "$", expected=f"finite numbers (got {name})", reason=NON_FINITE)


def loads_strict(
    text: str | bytes, label: str = "json", *, max_depth: int = MAX_JSON_DEPTH
) -> JsonValue:
    r"""Parse JSON text and check the result is strict JSON.

    Refuses ``NaN``/``Infinity`` (which :func:`json.loads` accepts by default), numbers that
    overflow to infinity (``1e400``), integers beyond ±(2^53 - 1), escaped lone surrogates
    (``"\ud800"`` in the text) and nesting deeper than ``max_depth``. An integer literal too
    long for the interpreter to convert (more than 4,300 digits) is an unsafe integer too.

    Raises:
        JsonValueError: the text is JSON but not strict JSON (``path`` names where).
        json.JSONDecodeError: the text is not JSON (``UnicodeDecodeError`` for bytes that are not
            UTF-8).
    """
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except JsonValueError as error:
        raise JsonValueError(label, "$", expected=error.expected, reason=NON_FINITE) from None
    except RecursionError:
        raise _too_deep(label, max_depth) from None
    except ValueError as error:
        if isinstance(error, json.JSONDecodeError):
            raise
        # Only an integer literal past the interpreter's digit limit (4,300 digits by default)
        # gets here: far beyond ±(2^53 - 1), so it is refused like any unsafe integer.
        raise JsonValueError(
            label, "$", expected=_expected_text(UNSAFE_INTEGER, max_depth), reason=UNSAFE_INTEGER
        ) from None
    error = json_value_error(value, label, max_depth=max_depth)
    if error is not None:
        raise error
    return cast(JsonValue, value)


def clone_json_value(
    value: object, label: str = "value", *, max_depth: int = MAX_JSON_DEPTH
) -> JsonValue:
    """Validate and deep-copy a JSON value through a real serialise/parse round-trip.

    The copy is what any reader gets back from the wire: integral floats in the safe range come
    back as ``int`` (equal in value).
    """
    plain = _writable(value, label, max_depth)
    try:
        text = json.dumps(plain, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return cast(JsonValue, json.loads(text))
    except RecursionError:
        raise _too_deep(label, max_depth) from None


def well_formed_text(text: str) -> str:
    r"""``text`` with surrogate code points repaired, like JavaScript's ``String.toWellFormed``.

    A high surrogate followed by a low one (two code points that a UTF-16 split left apart,
    e.g. an emoji cut between two streamed deltas) becomes the character they encode; every
    other surrogate becomes U+FFFD. Text without surrogates is returned as is (for ASCII text in
    O(1)). For sanitising text on its way out (event data, logs); strict JSON validation refuses
    such text instead of changing it.

    Example:
        >>> well_formed_text("ok \ud83d\ude00 \ud800") == "ok \U0001f600 \ufffd"
        True
    """
    if not has_surrogate(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
