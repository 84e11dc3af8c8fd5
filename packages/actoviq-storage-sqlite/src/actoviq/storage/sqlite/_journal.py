"""Bulk codecs of the session journal: validate-and-dump on append, decode-in-bulk on load.

Kept apart from the SQL so the rules are readable on their own. They match the runtime's shared
rules (``prepare_append``, ``decode_json_object``) message for message, without their per-item
deep copies: an append only needs the JSON text, and ``json.loads`` already returns fresh objects.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, cast

from actoviq.core import JsonObject, find_json_violation
from actoviq.runtime.stores import NewSessionItem, StorageDataError, StoredSessionItem
from actoviq.runtime.stores.validation import (
    MAX_SAFE_INTEGER,
    decode_json_object,
    dump_json,
    require_json_object,
    require_key,
    require_optional_key,
)

__all__ = ["PreparedItem", "decode_payloads", "prepare_items", "stored_items"]

_DECODE_CHUNK = 2048  # rows decoded per json.loads call

PreparedItem = tuple[str, str, str, str | None, JsonObject]
"""``(item_id, kind, payload_json, created_at, payload)`` of one validated item."""


def prepare_items(items: Sequence[NewSessionItem], stamp: str) -> list[PreparedItem]:
    """Validate an append (the rules and messages of ``prepare_append``) and dump each payload.

    Raises:
        StorageDataError: no items, an empty or duplicate id, an empty kind, a payload that is not
            a strict JSON object, or an empty ``created_at``.
    """
    require_key(stamp, "updatedAt")
    if len(items) == 0:
        raise StorageDataError("append requires at least one session item")
    seen: set[str] = set()
    prepared: list[PreparedItem] = []
    for item in items:
        item_id = require_key(item.item_id, "itemId")
        if item_id in seen:
            raise StorageDataError(f"append contains duplicate itemId {item_id!r}")
        seen.add(item_id)
        kind = require_key(item.kind, "kind")
        payload: object = item.payload
        if type(payload) is not dict or find_json_violation(payload) is not None:
            require_json_object(payload, "payload")  # raises with the shared message
            raise StorageDataError("payload must be a JSON object")  # pragma: no cover
        body = item.payload
        created_at = require_optional_key(item.created_at, "createdAt")
        prepared.append((item_id, kind, dump_json(body), created_at, body))
    return prepared


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
    if all(type(text) is str for text in texts):
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
        or not all(type(value) is dict for value in cast(list[object], values))
    ):
        return [decode_json_object(text, label) for text in texts]
    return cast(list[JsonObject], values)


def _check_column(values: Sequence[object], kind: type, field: str) -> None:
    if not all(type(value) is kind for value in values):
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
    return tuple(
        StoredSessionItem(
            sequence=sequence, item_id=item_id, kind=kind, payload=payload, created_at=stamp
        )
        for sequence, item_id, kind, payload, stamp in zip(
            sequences, item_ids, kinds, decoded, stamps, strict=True
        )
    )
