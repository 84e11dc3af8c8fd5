"""Packed turn reads: a session's tail as one row of JSON array texts (SQLite file loads).

``DriverJournalSql.packed_turns`` has SQLite join each turn column over the tail (``group_concat``
in primary-key order): the sequences, the stamps, and the id, kind and payload arrays of all turns
arrive as one JSON text each. Decoding them is six ``json.loads`` calls whatever the number of
turns, instead of a Python row with seven values per turn and a parse per batch of row texts.

It is a fast path, never a weaker one: every check of :func:`~._journal.decode_turns` runs on the
parsed columns (integer sequences in order without gaps or overlaps, arrays of each turn's length,
string ids and kinds, object payloads, finite numbers, the nesting limit). Anything it cannot
prove (a BLOB in a column, a stamp with a backslash or a quote, per-item stamps, a text that does
not parse, a shape that does not fit) gives None and the caller decodes the turn rows instead,
in the same transaction, with :func:`~._journal.decode_turns`: a corrupt row fails closed there
with its own precise ``StorageDataError``, and unusual but valid rows load as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Any

from actoviq.runtime.stores import StorageDataError, StoredItems
from actoviq.storage.sqlite._journal import TurnColumns, assemble_turns, parse_strict_json

__all__ = ["PackedTurns", "decode_packed"]

PackedTurns = tuple[
    int, str | None, str | None, str | None, str | None, str | None, str | None, int, float
]
"""``(turns, firsts, lasts, stamps, item_ids, kinds, payloads, stamped_turns, blob_turns)``: the
turn count, six JSON array texts (NULL without turns), the turns with per-item stamps and the
turns holding a BLOB."""

_INT: set[type] = {int}
_STR: set[type] = {str}
_LIST: set[type] = {list}


def decode_packed(row: Sequence[Any], after: int, end: int | None) -> StoredItems | None:
    """The items ``after < sequence <= end`` of a packed tail, or None: then decode the rows.

    ``end`` None means up to the newest item. None is returned for anything the packed form
    cannot prove; never for a session whose rows would decode, except rows with per-item stamps,
    stamps holding a backslash or quote, or a join SQLite did not make in sequence order.
    """
    count, firsts_text, lasts_text, stamps_text, ids_text, kinds_text, payloads_text = row[:7]
    stamped, blobs = row[7:9]
    if count == 0 and firsts_text is None:
        return StoredItems(
            first_sequence=after + 1, item_ids=(), kinds=(), payloads=(), created_at=()
        )
    if (
        type(count) is not int
        or stamped != 0
        or blobs != 0
        or type(stamps_text) is not str
        or "\\" in stamps_text
    ):
        return None
    try:
        columns = [
            parse_strict_json(text)
            for text in (firsts_text, lasts_text, stamps_text, ids_text, kinds_text, payloads_text)
        ]
    except (ValueError, TypeError, RecursionError):
        return None
    if set(map(type, columns)) != _LIST or set(map(len, columns)) != {count}:
        return None  # a smuggled "],[" or a quote in a stamp adds values
    firsts, lasts, stamps, ids, kinds, payloads = columns
    if set(map(type, firsts)) != _INT or set(map(type, lasts)) != _INT:
        return None
    if set(map(type, stamps)) != _STR:
        return None
    turns = TurnColumns(
        firsts=firsts,
        lasts=lasts,
        stamps=stamps,
        ids=ids,
        kinds=kinds,
        created=list(repeat(None, count)),
        payloads=payloads,
    )
    try:
        return assemble_turns(turns, after, end)
    except StorageDataError:
        return None
