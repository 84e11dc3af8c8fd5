"""The common canonical items structured without the generic converter (internal).

:func:`~actoviq.core.converter.item_from_json` tries :func:`fast_item` first. For the item types a
transcript is made of (``text``, ``tool_call``, ``tool_result``) it checks every rule the class
validators check (exact types, literals, no unknown keys, no lone surrogates, strict JSON in the
nested fields) with a few inline type tests, then fills the slots directly, skipping the
converter's per-field dispatch and the validator chain (about five times faster). Anything it
does not accept, a wrong value or another item type, returns None and takes the generic path,
which raises the canonical error; so it accepts exactly what the generic path accepts, and
builds an equal item (``test_core_fast_items.py`` checks both properties).

:func:`fast_items` does the same for a whole transcript, column by column: the rules are checked
over each field's values at once (``set(map(type, ...))``, one surrogate search over the joined
strings, literal sets), so the per-item work left is filling the slots. It returns None unless
every item is accepted; the caller then goes item by item (and names the bad one).

If a class gains or loses a field, its fast path switches itself off (:func:`slot_setters`) until
this module learns the new shape; the generic path keeps working.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, repeat
from typing import Any, Final, cast

import attrs

from actoviq.core._json_rules import INVALID, MAX_JSON_DEPTH, has_surrogate, scan
from actoviq.core.items import CanonicalItem, TextItem, ToolCallItem, ToolResultItem

__all__ = ["FAST_DECODERS", "fast_item", "fast_items", "slot_setters"]

_Setter = Callable[[object, object], None]
_new: Final = object.__new__


def slot_setters(cls: type[Any], names: tuple[str, ...]) -> tuple[_Setter, ...] | None:
    """The slot setters of ``cls`` in ``names`` order, or None if its fields are not ``names``."""
    if tuple(field.name for field in attrs.fields(cls)) != names:
        return None
    return tuple(cls.__dict__[name].__set__ for name in names)


def _str(value: object) -> bool:
    return type(value) is str and not has_surrogate(value)


def _opt_str(value: object) -> bool:
    return value is None or _str(value)


def _opt_object(value: object) -> bool:
    return value is None or (
        type(value) is dict and scan(cast(object, value), MAX_JSON_DEPTH) != INVALID
    )


_ROLES: Final = frozenset({"system", "user", "assistant"})
_STATUSES: Final = frozenset({"success", "error"})

_TEXT: Final = slot_setters(TextItem, ("role", "text", "id", "metadata"))
_TEXT_KEYS: Final = frozenset({"type", "role", "text", "id", "metadata"})


def _text(data: dict[str, Any]) -> CanonicalItem | None:
    assert _TEXT is not None
    if not data.keys() <= _TEXT_KEYS:
        return None
    get = data.get
    role = get("role")
    text = get("text")
    ident = get("id")
    metadata = get("metadata")
    if (
        type(role) is not str
        or role not in _ROLES
        or type(text) is not str
        or (not text.isascii() and has_surrogate(text))
        or (ident is not None and not _str(ident))
        or (metadata is not None and not _opt_object(metadata))
    ):
        return None
    item = _new(TextItem)
    set_role, set_text, set_id, set_metadata = _TEXT
    set_role(item, role)
    set_text(item, text)
    set_id(item, ident)
    set_metadata(item, metadata)
    return cast(CanonicalItem, item)


_CALL: Final = slot_setters(ToolCallItem, ("id", "name", "input", "metadata"))
_CALL_KEYS: Final = frozenset({"type", "id", "name", "input", "metadata"})


def _tool_call(data: dict[str, Any]) -> CanonicalItem | None:
    assert _CALL is not None
    if not data.keys() <= _CALL_KEYS:
        return None
    ident = data.get("id")
    name = data.get("name")
    arguments: object = data.get("input")
    metadata = data.get("metadata")
    if (
        not _str(ident)
        or not _str(name)
        or type(arguments) is not dict
        or scan(cast(object, arguments), MAX_JSON_DEPTH) == INVALID
        or not _opt_object(metadata)
    ):
        return None
    item = _new(ToolCallItem)
    set_id, set_name, set_input, set_metadata = _CALL
    set_id(item, ident)
    set_name(item, name)
    set_input(item, cast(object, arguments))
    set_metadata(item, metadata)
    return cast(CanonicalItem, item)


_RESULT: Final = slot_setters(
    ToolResultItem, ("call_id", "status", "output", "name", "id", "metadata")
)
_RESULT_KEYS: Final = frozenset({"type", "callId", "status", "output", "name", "id", "metadata"})


def _tool_result(data: dict[str, Any]) -> CanonicalItem | None:
    assert _RESULT is not None
    if not data.keys() <= _RESULT_KEYS or "output" not in data:
        return None
    call_id = data.get("callId")
    status = data.get("status")
    output = data["output"]
    name = data.get("name")
    ident = data.get("id")
    metadata = data.get("metadata")
    if (
        not _str(call_id)
        or type(status) is not str
        or status not in _STATUSES
        or scan(output, MAX_JSON_DEPTH) == INVALID
        or not _opt_str(name)
        or not _opt_str(ident)
        or not _opt_object(metadata)
    ):
        return None
    item = _new(ToolResultItem)
    set_call_id, set_status, set_output, set_name, set_id, set_metadata = _RESULT
    set_call_id(item, call_id)
    set_status(item, status)
    set_output(item, output)
    set_name(item, name)
    set_id(item, ident)
    set_metadata(item, metadata)
    return cast(CanonicalItem, item)


FAST_DECODERS: Final[dict[object, Callable[[dict[str, Any]], CanonicalItem | None]]] = {
    item_type: decoder
    for item_type, decoder, slots in (
        ("text", _text, _TEXT),
        ("tool_call", _tool_call, _CALL),
        ("tool_result", _tool_result, _RESULT),
    )
    if slots is not None
}


def fast_item(data: dict[str, Any]) -> CanonicalItem | None:
    """``data`` (a dict) as a canonical item, or None: then the generic path decides.

    :data:`FAST_DECODERS` maps a ``type`` string to its decoder, for callers that loop.
    """
    kind = data.get("type")
    decoder = FAST_DECODERS.get(kind) if type(kind) is str else None
    return None if decoder is None else decoder(data)


# --- whole transcripts, column by column ---------------------------------------------------------

_get = cast(Callable[[object, str], Any], dict.get)  # pyright: ignore[reportUnknownMemberType]
_has = cast(Callable[[object, str], bool], dict.__contains__)  # pyright: ignore[reportUnknownMemberType]
_find_surrogate = re.compile("[\ud800-\udfff]").search
_NONE: Final = type(None)
_drain: Final = deque[object](maxlen=0).extend
_STR_TYPES: Final = frozenset({str})
_OPT_STR_TYPES: Final = frozenset({str, _NONE})
_DICT_TYPES: Final = frozenset({dict})
_OPT_DICT_TYPES: Final = frozenset({dict, _NONE})


def _clean(strings: Iterable[str]) -> bool:
    joined = "".join(strings)
    return joined.isascii() or _find_surrogate(joined) is None


def _strs(values: list[Any]) -> bool:
    return set(map(type, values)) <= _STR_TYPES and _clean(values)


def _opt_strs(values: list[Any]) -> bool:
    return set(map(type, values)) <= _OPT_STR_TYPES and _clean(filter(None, values))


def _literals(values: list[Any], allowed: frozenset[str]) -> bool:
    return set(map(type, values)) <= _STR_TYPES and set(values) <= allowed


def _json_values(values: Iterable[object]) -> bool:
    return all(scan(value, MAX_JSON_DEPTH) != INVALID for value in values)


def _objects(values: list[Any]) -> bool:
    return set(map(type, values)) <= _DICT_TYPES and _json_values(values)


def _opt_objects(values: list[Any]) -> bool:
    kinds = set(map(type, values))
    if kinds == {_NONE}:
        return True
    return kinds <= _OPT_DICT_TYPES and _json_values(value for value in values if value is not None)


def _columns(batch: Sequence[dict[str, Any]], keys: tuple[str, ...]) -> list[list[Any]]:
    return [list(map(_get, batch, repeat(key))) for key in keys]


def _optional(batch: Sequence[dict[str, Any]], present: set[str], key: str) -> list[Any] | None:
    """The column of an optional field, or None when no entry of ``batch`` has the key."""
    return list(map(_get, batch, repeat(key))) if key in present else None


def _build(
    cls: type[Any], setters: tuple[_Setter, ...], count: int, *columns: list[Any] | None
) -> list[Any]:
    """``count`` new ``cls`` instances, slot ``i`` of each filled from ``columns[i]``.

    A None column fills its slot with None. Column by column: each pass is ``map`` over a slot
    descriptor's setter, so no Python frame runs per item.
    """
    items = list(map(_new, repeat(cls, count)))
    for setter, column in zip(setters, columns, strict=True):
        _drain(map(setter, items, repeat(None, count) if column is None else column))
    return items


def _texts(batch: Sequence[dict[str, Any]]) -> list[Any] | None:
    present = set(chain.from_iterable(batch))
    if _TEXT is None or not present <= _TEXT_KEYS:
        return None
    roles, texts = _columns(batch, ("role", "text"))
    idents = _optional(batch, present, "id")
    metadata = _optional(batch, present, "metadata")
    if not (
        _literals(roles, _ROLES)
        and _strs(texts)
        and (idents is None or _opt_strs(idents))
        and (metadata is None or _opt_objects(metadata))
    ):
        return None
    return _build(TextItem, _TEXT, len(batch), roles, texts, idents, metadata)


def _tool_calls(batch: Sequence[dict[str, Any]]) -> list[Any] | None:
    present = set(chain.from_iterable(batch))
    if _CALL is None or not present <= _CALL_KEYS:
        return None
    idents, names, inputs = _columns(batch, ("id", "name", "input"))
    metadata = _optional(batch, present, "metadata")
    if not (
        _strs(idents)
        and _strs(names)
        and _objects(inputs)
        and (metadata is None or _opt_objects(metadata))
    ):
        return None
    return _build(ToolCallItem, _CALL, len(batch), idents, names, inputs, metadata)


def _tool_results(batch: Sequence[dict[str, Any]]) -> list[Any] | None:
    present = set(chain.from_iterable(batch))
    if (
        _RESULT is None
        or not present <= _RESULT_KEYS
        or not all(map(_has, batch, repeat("output")))
    ):
        return None
    call_ids, statuses, outputs = _columns(batch, ("callId", "status", "output"))
    names = _optional(batch, present, "name")
    idents = _optional(batch, present, "id")
    metadata = _optional(batch, present, "metadata")
    if not (
        _strs(call_ids)
        and _literals(statuses, _STATUSES)
        and _json_values(outputs)
        and (names is None or _opt_strs(names))
        and (idents is None or _opt_strs(idents))
        and (metadata is None or _opt_objects(metadata))
    ):
        return None
    columns = (call_ids, statuses, outputs, names, idents, metadata)
    return _build(ToolResultItem, _RESULT, len(batch), *columns)


_BULK: Final[dict[object, Callable[[Sequence[dict[str, Any]]], list[Any] | None]]] = {
    "text": _texts,
    "tool_call": _tool_calls,
    "tool_result": _tool_results,
}


def fast_items(data: Sequence[object]) -> list[CanonicalItem] | None:
    """Every entry of ``data`` as a canonical item, or None unless all are accepted.

    Accepts exactly what :func:`~actoviq.core.converter.item_from_json` accepts for ``text``,
    ``tool_call`` and ``tool_result`` mappings; any other type (or anything refused) gives None.
    """
    if not data or not set(map(type, data)) <= _DICT_TYPES:
        return None
    batch = cast(Sequence[dict[str, Any]], data)
    try:
        types = list(map(_get, batch, repeat("type")))
        kinds = set(types)
    except TypeError:  # an unhashable "type"
        return None
    if len(kinds) == 1:
        decode = _BULK.get(types[0])
        return None if decode is None else cast("list[CanonicalItem] | None", decode(batch))
    groups: dict[object, list[int]] = {kind: [] for kind in kinds}
    for index, kind in enumerate(types):
        groups[kind].append(index)
    out: list[Any] = [None] * len(batch)
    for kind, indices in groups.items():
        decode = _BULK.get(kind)
        decoded = None if decode is None else decode([batch[index] for index in indices])
        if decoded is None:
            return None
        for index, item in zip(indices, decoded, strict=True):
            out[index] = item
    return cast("list[CanonicalItem]", out)
