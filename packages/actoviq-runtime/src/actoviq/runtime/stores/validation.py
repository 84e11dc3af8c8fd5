"""Input and stored-data validation shared by every store (spec 04 §3.2).

These helpers raise :class:`StorageDataError` (``STORAGE_DATA_INVALID``) with the reference message
fragments. Backends call them before opening a transaction, and again on every read (fail closed).

JSON follows the strict rules of :mod:`actoviq.core.json` (D2, D10): finite numbers, integers
within ±(2^53 - 1), no lone UTF-16 surrogates, no cycles. Stored values are documents (an item, a
run state, a record), so they may nest up to ``MAX_WIRE_DEPTH`` levels. Copies and stored text
are made by the core encoder, so every backend stores the same numbers (an integral float in the
safe range becomes an integer, as in JavaScript).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import cast

from actoviq.core import (
    MAX_SAFE_INTEGER,
    MAX_WIRE_DEPTH,
    JsonObject,
    JsonValue,
    JsonValueError,
    clone_json_value,
    dumps_compact,
    json_value_error,
)
from actoviq.runtime.stores.errors import StorageDataError

__all__ = [
    "MAX_SAFE_INTEGER",
    "copy_object",
    "decode_json_object",
    "decode_json_text",
    "dump_json",
    "json_data_error",
    "require_json_object",
    "require_json_value",
    "require_key",
    "require_limit",
    "require_optional_key",
    "require_revision",
    "require_sha256",
]

_SHA256 = re.compile(r"[0-9a-f]{64}")


def require_key(value: object, field: str) -> str:
    """Return ``value`` if it is a non-empty string (not trimmed) of valid text, else raise.

    Valid text has no lone UTF-16 surrogates and no NUL character: no database driver can
    store the first (D2), and PostgreSQL refuses the second in a text column, so every backend
    refuses both (a key one store accepts is a key every store accepts).
    """
    if type(value) is not str or value == "":
        raise StorageDataError(f"{field} must be a non-empty string")
    if "\x00" in value:
        raise StorageDataError(
            f"{field} must not contain a NUL character",
            details={"label": field, "path": "$", "reason": "nul"},
        )
    if not value.isascii() and json_value_error(value) is not None:
        raise StorageDataError(
            f"{field} must not contain lone UTF-16 surrogates",
            details={"label": field, "path": "$", "reason": "lone-surrogate"},
        )
    return value


def require_optional_key(value: object, field: str) -> str | None:
    """Like :func:`require_key`, but None passes."""
    return None if value is None else require_key(value, field)


def require_revision(value: object, field: str) -> int:
    """Return ``value`` if it is a safe integer ``>= 0`` (bools are refused), else raise."""
    if type(value) is not int or value < 0 or value > MAX_SAFE_INTEGER:
        raise StorageDataError(f"{field} must be a non-negative safe integer")
    return value


def require_limit(value: object) -> int | None:
    """Return ``value`` if it is None (unlimited) or a positive safe integer, else raise."""
    if value is None:
        return None
    if type(value) is not int or value <= 0 or value > MAX_SAFE_INTEGER:
        raise StorageDataError("limit must be a positive safe integer")
    return value


def require_json_value(value: object, label: str) -> JsonValue:
    """Validate ``value`` as strict JSON and return a deep copy of it.

    Raises:
        StorageDataError: ``"<label> <problem> at <path>"``, e.g. ``contains a non-finite number``,
            ``contains an integer beyond ±(2^53 - 1)``, ``contains a lone UTF-16 surrogate``,
            ``nests deeper than 576 levels``.
    """
    try:
        return clone_json_value(value, label, max_depth=MAX_WIRE_DEPTH)
    except JsonValueError as error:
        raise json_data_error(value, label, error) from None


_PROBLEMS = {
    "non-finite": "contains a non-finite number",
    "cycle": "contains a cycle",
    "unsafe-integer": "contains an integer beyond ±(2^53 - 1) (store larger integers as strings)",
    "lone-surrogate": "contains a lone UTF-16 surrogate",
    "too-deep": f"nests deeper than {MAX_WIRE_DEPTH} levels",
    "non-string-key": "contains a non-JSON value",
}


def json_data_error(value: object, label: str, error: JsonValueError) -> StorageDataError:
    """The :class:`StorageDataError` for a value the core rules refused with ``error``."""
    reason = error.reason or "not-json"
    detail = _PROBLEMS.get(reason) or _classify(value, error.path)
    where = error.path if len(error.path) <= 120 else f"{error.path[:60]}...{error.path[-40:]}"
    return StorageDataError(
        f"{label} {detail} at {where}",
        details={"label": label, "path": error.path, "reason": reason},
    )


def _classify(value: object, where: str) -> str:
    # Walk the path again to name the offending node like the reference does.
    node = _node_at(value, where)
    if type(node) is float:
        return "contains a non-finite number"
    if type(node) in (dict, list):
        return "contains a cycle"
    if node is _MISSING:
        return "contains a non-JSON value"
    if isinstance(node, (dict, list, tuple, set, frozenset, bytes)) or hasattr(node, "__dict__"):
        return "contains a non-plain object"
    return "contains a non-JSON value"


_MISSING = object()


def _node_at(value: object, where: str) -> object:
    node = value
    for token in re.findall(r"\.([^.\[]+)|\[(\d+)\]", where):
        key, index = cast(tuple[str, str], token)
        if key and type(node) is dict:
            node = cast(dict[str, object], node).get(key, _MISSING)
        elif index and type(node) is list:
            items = cast(list[object], node)
            position = int(index)
            node = items[position] if position < len(items) else _MISSING
        else:
            return _MISSING
    return node


def require_json_object(value: object, label: str) -> JsonObject:
    """Validate ``value`` as a strict JSON object and return a deep copy of it."""
    if type(value) is not dict:
        raise StorageDataError(f"{label} must be a JSON object")
    return cast(JsonObject, require_json_value(cast(object, value), label))


def dump_json(value: JsonValue, label: str = "value") -> str:
    """Serialise compactly (key order kept): the stored text form of a payload.

    Raises:
        StorageDataError: ``value`` is not strict JSON (see :func:`require_json_value`).
    """
    try:
        return dumps_compact(value, label, max_depth=MAX_WIRE_DEPTH)
    except JsonValueError as error:
        raise json_data_error(value, label, error) from None


def _reject_constant(name: str) -> object:
    raise ValueError(f"non-finite number {name}")


def decode_json_text(text: object, label: str) -> JsonValue:
    """Decode stored JSON text, raising :class:`StorageDataError` on anything unexpected."""
    if type(text) is not str:
        raise StorageDataError(f"{label} must be stored as text")
    try:
        value: object = json.loads(text, parse_constant=_reject_constant)
    except ValueError as error:
        raise StorageDataError(f"{label} is not valid JSON: {error}") from None
    except RecursionError:
        raise StorageDataError(f"{label} nests deeper than {MAX_WIRE_DEPTH} levels") from None
    return require_json_value(value, label)


def decode_json_object(text: object, label: str) -> JsonObject:
    """Decode stored JSON text that must hold an object."""
    value = decode_json_text(text, label)
    if type(value) is not dict:
        raise StorageDataError(f"{label} must be a JSON object")
    return value


def require_sha256(value: object, field: str = "sha256") -> str:
    """Return ``value`` if it is a lowercase hex sha256 digest, else raise."""
    if type(value) is not str or _SHA256.fullmatch(value) is None:
        raise StorageDataError(f"{field} must be a lowercase hex sha256 digest")
    return value


def copy_object(value: Mapping[str, JsonValue]) -> JsonObject:
    """Deep-copy a JSON object already known to be valid."""
    plain: JsonObject = dict(value)
    return cast(JsonObject, json.loads(dump_json(plain)))
