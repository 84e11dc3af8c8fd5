"""Bulk codecs of the session journal: validate-and-dump on append, decode-in-bulk on load.

Kept apart from the SQL so the rules are readable on their own. An append is checked by the
runtime's shared ``check_append_items`` (the rules of ``prepare_append``) and loads match
``decode_json_object`` message for message, without their per-item deep copies: an append only
needs the JSON text, and ``json.loads`` already returns fresh objects.

Append: each payload is serialised by the C JSON encoder first (``allow_nan=False`` refuses
non-finite floats, ``check_circular`` refuses cycles, unknown types raise); what the encoder
accepts but strict JSON does not (tuples, ``str``/``int``/``float``/``dict``/``list`` subclasses,
non-``str`` keys) is then refused by an exact-type pass over the now known acyclic value, which
checks whole containers with ``set(map(type, ...))`` instead of one Python step per node. Anything
refused goes through the shared strict validator, so the error is the shared one. The property
test ``test_storage_sqlite_journal_codec.py`` checks this equals "validate, then dump".

Load (trust boundary): rows are re-checked column by column and every payload is decoded with
non-finite numbers refused, so a corrupt row fails closed with ``StorageDataError``. The values
``json.loads`` returns are strict JSON by construction (``str`` keys, ``list``/``dict``/``str``/
``int``/finite ``float``/``bool``/``None`` only), so the checked columns are put into
``StoredSessionItem`` slots directly rather than through its ``__init__``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterable, Sequence
from types import MemberDescriptorType
from typing import Any, cast

from actoviq.core import JsonObject, find_json_violation
from actoviq.runtime.stores import NewSessionItem, StorageDataError, StoredSessionItem
from actoviq.runtime.stores.rules import check_append_items
from actoviq.runtime.stores.validation import (
    MAX_SAFE_INTEGER,
    decode_json_object,
    dump_json,
    require_json_object,
)

__all__ = [
    "PreparedItem",
    "decode_payloads",
    "dump_json_object",
    "prepare_items",
    "stored_items",
]

_DECODE_CHUNK = 2048  # rows decoded per json.loads call

PreparedItem = tuple[str, str, tuple[str, JsonObject], str | None]
"""``(item_id, kind, (payload_json, payload), created_at)`` of one validated item."""


def _dump_payload(value: JsonObject, label: str) -> tuple[str, JsonObject]:
    return dump_json_object(value, label), value


def prepare_items(items: Sequence[NewSessionItem], stamp: str) -> list[PreparedItem]:
    """Validate an append (the shared ``check_append_items``) and dump each payload.

    Raises:
        StorageDataError: no items, an empty or duplicate id, an empty kind, a payload that is not
            a strict JSON object, or an empty ``created_at``.
    """
    return check_append_items(items, stamp, _dump_payload)


def _unserialisable(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _make_encode() -> Callable[[object], str]:
    """``dump_json``'s exact output, from one reusable C encoder when the C extension exists.

    The reusable encoder has no cycle markers (a shared markers dict would not be thread-safe):
    a cycle then ends in ``RecursionError`` (the C encoder guards its recursion), which sends the
    value to the strict validator like any other refusal.
    """
    make: Any = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has the C accelerator
        encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return encoder.encode
    iterencode: Any = make(
        None, _unserialisable, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
    join = "".join

    def encode(value: object) -> str:
        return join(iterencode(value, 0))

    return encode


_encode = _make_encode()
# Exact types (``type(x) is ...``, never subclasses); floats reaching here are already finite.
_LEAVES: frozenset[type] = frozenset({str, int, float, bool, type(None)})
_CONTAINERS: frozenset[type] = _LEAVES | {dict, list}
_NESTED: set[type] = {dict, list}
_DICT: type = dict  # compared by identity without narrowing ``object`` to ``dict[Unknown, ...]``
_STR_ONLY: set[type] = {str}
_DICT_ONLY: set[type] = {dict}


def _exact_json(value: dict[Any, Any]) -> bool:
    """Exact strict-JSON types throughout ``value``, which must already be acyclic."""
    pending: list[Any] = [value]
    while pending:
        node: object = pending.pop()
        children: Collection[object]
        if type(node) is dict:
            mapping = cast(dict[object, object], node)
            if mapping and not _types(mapping) <= _STR_ONLY:
                return False
            children = mapping.values()
        else:
            children = cast(list[object], node)
        kinds = _types(children)
        if kinds <= _LEAVES:
            continue
        if not kinds <= _CONTAINERS:
            return False
        pending.extend(child for child in children if type(child) in _NESTED)
    return True


def _is_json_object(value: object) -> bool:
    return type(value) is _DICT and find_json_violation(value) is None


def dump_json_object(value: object, label: str) -> str:
    """Strict-JSON-object check and compact dump in one pass; equals "validate, then dump".

    Raises:
        StorageDataError: ``value`` is not a strict JSON object (the shared message, naming the
            offending path).
    """
    if type(value) is _DICT:
        body = cast(dict[Any, Any], value)
        try:
            text = _encode(body)
        except (ValueError, TypeError, RecursionError):
            pass
        else:
            if _exact_json(body):
                return text
    # Refused (or a value the encoder cannot write): the shared rules name the problem.
    if not _is_json_object(value):
        require_json_object(value, label)  # raises with the shared message
        raise StorageDataError(f"{label} must be a JSON object")  # pragma: no cover
    return dump_json(cast(JsonObject, value))  # what the strict path would do (may raise)


def _reject_constant(name: str) -> object:
    raise ValueError(f"non-finite number {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses to inf without a parse_constant call
        raise ValueError(f"non-finite number {text}")
    return value


def decode_payloads(texts: Sequence[object], label: str) -> list[JsonObject]:
    """Decode stored payload texts that must each hold one JSON object, in one parse.

    A corrupt row makes the bulk parse fail or the count differ; then each text is decoded on
    its own, so the error names the row's problem exactly as ``decode_json_object`` does.

    Raises:
        StorageDataError: a text is not a string, not JSON, non-finite, or not an object.
    """
    if not texts:
        return []
    values: Any = None
    if _types(texts) == _STR_ONLY:
        try:
            values = json.loads(
                "[" + ",".join(cast(Sequence[str], texts)) + "]",
                parse_constant=_reject_constant,
                parse_float=_finite_float,
            )
        except ValueError:
            values = None
    if (
        type(values) is not list
        or len(cast(list[object], values)) != len(texts)
        or _types(cast(list[object], values)) != _DICT_ONLY
    ):
        return [decode_json_object(text, label) for text in texts]
    return cast(list[JsonObject], values)


def _types(values: Iterable[object]) -> set[type]:
    return set(map(type, values))


def _check_column(values: Sequence[object], kind: type, field: str) -> None:
    if values and _types(values) != {kind}:
        raise StorageDataError(f"stored {field} must be {'an integer' if kind is int else 'text'}")


def stored_items(rows: Sequence[Sequence[Any]], after: int) -> tuple[StoredSessionItem, ...]:
    """Journal rows ``(sequence, item_id, kind, payload_json, created_at)`` → stored items.

    Columns are checked in bulk (fail closed): sequences are safe integers above ``after``.
    """
    if not rows:
        return ()
    sequences, item_ids, kinds, payloads, stamps = zip(*rows, strict=True)
    _check_column(sequences, int, "sequence")
    if sequences[0] <= after or max(sequences) > MAX_SAFE_INTEGER:
        raise StorageDataError("stored sequence must be a non-negative safe integer")
    _check_column(item_ids, str, "item_id")
    _check_column(kinds, str, "kind")
    _check_column(stamps, str, "created_at")
    decoded: list[JsonObject] = []
    for start in range(0, len(payloads), _DECODE_CHUNK):  # bounds the joined text's size
        decoded.extend(decode_payloads(payloads[start : start + _DECODE_CHUNK], "payload_json"))
    return _build_items(sequences, item_ids, kinds, decoded, stamps)


def _slot_setters() -> tuple[Any, ...] | None:
    """The slot setters of ``StoredSessionItem``, if it is still the five-field slotted class."""
    names = ("sequence", "item_id", "kind", "payload", "created_at")
    fields = getattr(StoredSessionItem, "__attrs_attrs__", ())
    if tuple(field.name for field in fields) != names or any(
        field.converter is not None or field.validator is not None for field in fields
    ):
        return None  # pragma: no cover - the runtime changed the class: use its __init__
    slots = [StoredSessionItem.__dict__.get(name) for name in names]
    if not all(type(slot) is MemberDescriptorType for slot in slots):
        return None  # pragma: no cover - not slotted any more
    return tuple(cast(MemberDescriptorType, slot).__set__ for slot in slots)


_SETTERS = _slot_setters()


def _build_items(
    sequences: Sequence[int],
    item_ids: Sequence[str],
    kinds: Sequence[str],
    payloads: Sequence[JsonObject],
    stamps: Sequence[str],
) -> tuple[StoredSessionItem, ...]:
    """``StoredSessionItem``s from columns already checked (the trust boundary, module doc)."""
    columns = zip(sequences, item_ids, kinds, payloads, stamps, strict=True)
    if _SETTERS is None:  # pragma: no cover - see _slot_setters
        return tuple(
            StoredSessionItem(sequence=a, item_id=b, kind=c, payload=d, created_at=e)
            for a, b, c, d, e in columns
        )
    set_sequence, set_item_id, set_kind, set_payload, set_created_at = _SETTERS
    new = object.__new__
    cls = StoredSessionItem
    out: list[StoredSessionItem] = []
    append = out.append
    for sequence, item_id, kind, payload, stamp in columns:
        item = new(cls)
        set_sequence(item, sequence)
        set_item_id(item, item_id)
        set_kind(item, kind)
        set_payload(item, payload)
        set_created_at(item, stamp)
        append(item)
    return tuple(out)
