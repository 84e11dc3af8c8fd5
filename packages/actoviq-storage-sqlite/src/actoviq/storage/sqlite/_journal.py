"""Codecs of the session journal: one append becomes one turn row, a load decodes turns in bulk.

A turn row (``_tables.session_turns``) holds one append: its item ids, kinds and payloads as
JSON arrays (``kinds_json`` is one JSON string when every item has the same kind, and
``item_created_at_json`` is NULL when every item has the append's ``created_at``).

Append: the items are checked by the rules of the runtime's shared ``check_append_items`` in bulk
(``zip(*items)`` over the ``NewSessionItem`` tuples, type sets per column) and the payload list
is serialised by the C JSON encoder in one call (``allow_nan=False`` refuses non-finite floats,
unknown types raise). The strict-JSON rules the encoder does not know (D2/D10) cost little more:
lone surrogates are found by one search over the encoded text (every key and string is in it,
and ``str.isascii`` answers in O(1) for ASCII text); tuples, ``str``/``int``/``float``/``dict``/
``list`` subclasses and non-``str`` keys by an exact-type pass that walks all payloads level by
level with ``set(map(type, ...))`` over whole levels, which also counts the depth and, on levels
holding numbers, checks the safe-integer range and finds integral floats (those are re-encoded as
integers by the core encoder). Anything refused goes through ``check_append_items`` itself, so
the error is the shared one. The property tests in ``test_storage_sqlite_journal_codec.py`` check
this equals "validate, then dump".

Load (trust boundary): turn columns are re-checked (integers, texts, contiguous sequences, array
lengths equal to the turn's item count) and the arrays of many turns are parsed by one
``json.loads`` each, with non-finite numbers refused and nesting beyond the parser's stack
refused, so a corrupt row fails closed with ``StorageDataError``. The checked columns become a
``StoredItems`` (records are built only when read) without further walks: every write enforced
the strict rules, and decoding a payload into a canonical item (the runtime adapter) checks them
again, so a foreign row with a lone surrogate or an unsafe integer is refused there, typed.
On a SQLite file a tail load first tries the packed form (``_journal_packed``: SQLite joins each
column over the turns, parsed once); it runs the same checks (:func:`assemble_turns`) and leaves
anything it cannot prove to :func:`decode_turns`.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, islice, repeat
from typing import Any, NamedTuple, cast

from actoviq.core import MAX_WIRE_DEPTH, JsonObject
from actoviq.runtime.stores import NewSessionItem, StorageDataError, StoredItems
from actoviq.runtime.stores.rules import check_append_items, require_new_items
from actoviq.runtime.stores.validation import (
    MAX_SAFE_INTEGER,
    dump_json,
    require_json_object,
)

__all__ = [
    "PreparedTurn",
    "TurnColumns",
    "TurnRow",
    "assemble_turns",
    "decode_id_rows",
    "decode_turns",
    "dump_json_object",
    "parse_strict_json",
    "prepare_turn",
]

_DECODE_TEXT = 4 << 20  # characters of row texts joined into one json.loads call

TurnRow = tuple[int, int, str, str, str, str | None, str]
"""``(first_sequence, last_sequence, created_at, item_ids_json, kinds_json,
item_created_at_json, payloads_json)`` of one stored turn."""


class PreparedTurn(NamedTuple):
    """One validated append, ready to insert as a turn row."""

    ids: list[str]
    kinds: list[str]
    payloads: list[JsonObject]
    created: list[str]
    """Each item's ``created_at`` (the append's stamp where the item has none)."""
    ids_json: str
    kinds_json: str
    created_json: str | None
    payloads_json: str


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
_DICT: type = dict  # compared by identity without narrowing ``object`` to ``dict[Unknown, ...]``
_STR_ONLY: set[type] = {str}
_DICT_ONLY: set[type] = {dict}
_NONE_ONLY: set[type] = {type(None)}
_STR_OR_NONE: set[type] = {str, type(None)}
_LIST_ONLY: set[type] = {list}
_DICT_VALUES = cast(Callable[[dict[Any, Any]], Iterable[Any]], dict.values)  # pyright: ignore[reportUnknownMemberType]


_NEW_ITEM_ONLY: set[type] = {NewSessionItem}
_NEXT = (1).__add__
_PREVIOUS = (-1).__add__


def _dump_payload(value: JsonObject, label: str) -> str:
    return dump_json_object(value, label)


def prepare_turn(items: Sequence[NewSessionItem], stamp: str) -> PreparedTurn:
    """Validate an append (the rules of ``check_append_items``) and encode it as one turn.

    Raises:
        StorageDataError: ``items`` is not a sequence of ``NewSessionItem`` records, no items, an
            empty or duplicate id, an empty kind, a payload that is not a strict JSON object, or
            an empty ``created_at`` (the shared messages).
    """
    kind = type(items)
    if (kind is list or kind is tuple) and items and _types(items) == _NEW_ITEM_ONLY:
        turn = _fast_turn(items, stamp)
    else:
        items = require_new_items(items)  # raises unless a sequence of records
        turn = None
    if turn is not None:
        return turn
    # Refused (or not plain NewSessionItem tuples): the shared rules name the problem, or accept
    # what the bulk checks could not prove (then the turn is encoded item by item).
    prepared = check_append_items(items, stamp, _dump_payload)
    ids = [item[0] for item in prepared]
    kinds = [item[1] for item in prepared]
    created = [item[3] or stamp for item in prepared]
    payloads = [cast(JsonObject, json.loads(item[2])) for item in prepared]
    return _encode_turn(
        ids, kinds, payloads, created, stamp, "[" + ",".join(p[2] for p in prepared) + "]"
    )


def _fast_turn(items: Sequence[NewSessionItem], stamp: str) -> PreparedTurn | None:
    """The turn if every bulk check passes, else None (the caller re-checks item by item)."""
    if type(stamp) is not str or not stamp:
        return None
    ids, kinds, payloads, stamps = cast(
        tuple[tuple[str, ...], tuple[str, ...], tuple[JsonObject, ...], tuple[str | None, ...]],
        tuple(zip(*items, strict=True)),
    )
    count = len(ids)
    # Exact types first: ``count``/``in`` compare with ``==``, which a subclass may answer.
    if (
        _types(cast(list[Any], ids)) != _STR_ONLY
        or "" in ids
        or len(set(ids)) != count
        or _types(cast(list[Any], kinds)) != _STR_ONLY
        or "" in kinds
        or _types(cast(list[Any], payloads)) != _DICT_ONLY
    ):
        return None
    stamp_types = _types(stamps)
    if stamp_types == _NONE_ONLY:
        created = [stamp] * count
        stamp_text = stamp
    elif stamp_types <= _STR_OR_NONE and "" not in stamps:
        created = [value or stamp for value in stamps]
        stamp_text = _join(created)
    else:
        return None
    keys = _join(ids) + _join(kinds) + stamp_text
    if not keys.isascii() or "\x00" in keys:
        return None  # maybe a lone surrogate or a NUL: the shared rules decide
    try:
        text = _encode(payloads)
    except (ValueError, TypeError, RecursionError):
        return None
    if not text.isascii() and _find_surrogate(text) is not None:
        return None
    body = list(payloads)
    status = _exact_json_many(body)
    if status == _INVALID:
        return None
    if status == _INTEGRAL_FLOATS:  # integral floats written as integers, payload by payload
        text = "[" + ",".join([dump_json(payload, "payload") for payload in body]) + "]"
    return _encode_turn(list(ids), list(kinds), body, created, stamp, text)


_join = "".join


def _encode_turn(
    ids: list[str],
    kinds: list[str],
    payloads: list[JsonObject],
    created: list[str],
    stamp: str,
    payloads_json: str,
) -> PreparedTurn:
    first_kind = kinds[0]
    uniform_kind = kinds.count(first_kind) == len(kinds)
    uniform_stamp = created.count(stamp) == len(created)
    return PreparedTurn(
        ids=ids,
        kinds=kinds,
        payloads=payloads,
        created=created,
        ids_json=_encode(ids),
        kinds_json=_encode(first_kind if uniform_kind else kinds),
        created_json=None if uniform_stamp else _encode(created),
        payloads_json=payloads_json,
    )


_INVALID = 0
_VALID = 1
_INTEGRAL_FLOATS = 2
_find_surrogate = re.compile("[\ud800-\udfff]").search
_IS_INT = cast(Callable[[object], bool], int.__instancecheck__)
_IS_FLOAT = cast(Callable[[object], bool], float.__instancecheck__)
_FLOAT_IS_INTEGER = cast(Callable[[float], bool], float.is_integer)


def _exact_json_many(values: list[Any]) -> int:
    """Exact strict-JSON types, safe integers and depth throughout the dicts of ``values``.

    Returns ``_INVALID``, ``_VALID`` or ``_INTEGRAL_FLOATS`` (valid, and a float with an integral
    value in the safe range needs writing as an integer). Strings are checked by the caller on
    the encoded text; cycles cannot reach here (the encoder refused them).

    Walks level by level: all keys of a level in one ``set(map(type, ...))``, all children in
    another, so a list of a thousand flat payloads costs a few C-level passes. The level count is
    the depth (``values`` sit inside one array, so the payloads are at level 1).
    """
    dicts: list[Any] = values
    lists: list[Any] = []
    status = _VALID
    depth = 1
    while dicts or lists:
        if depth > MAX_WIRE_DEPTH:
            return _INVALID
        if dicts and not _types(chain.from_iterable(dicts)) <= _STR_ONLY:
            return _INVALID  # a non-str key
        children: list[Any] = list(chain.from_iterable(map(_DICT_VALUES, dicts)))
        if lists:
            children.extend(chain.from_iterable(lists))
        kinds = _types(children)
        if not kinds <= _CONTAINERS:
            return _INVALID
        if int in kinds:
            ints = list(filter(_IS_INT, children))  # bools too: harmless for the range
            if max(ints) > MAX_SAFE_INTEGER or min(ints) < -MAX_SAFE_INTEGER:
                return _INVALID
        if float in kinds and status == _VALID:
            floats: list[float] = list(filter(_IS_FLOAT, children))
            if any(map(_FLOAT_IS_INTEGER, floats)) and any(
                number.is_integer() and -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER
                for number in floats
            ):
                status = _INTEGRAL_FLOATS
        if kinds <= _LEAVES:
            return status
        dicts = [child for child in children if type(child) is _DICT] if _DICT in kinds else []
        lists = [child for child in children if type(child) is list] if list in kinds else []
        depth += 1
    return status


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
            if (text.isascii() or _find_surrogate(text) is None) and _exact_json_many(
                [body]
            ) == _VALID:
                return text
    # Refused, or a value the encoder cannot write, or integral floats to write as integers:
    # the shared rules name the problem or give the text.
    if type(value) is not _DICT:
        require_json_object(value, label)  # raises "<label> must be a JSON object"
    return dump_json(cast(JsonObject, value), label)


def _reject_constant(name: str) -> object:
    raise ValueError(f"non-finite number {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses to inf without a parse_constant call
        raise ValueError(f"non-finite number {text}")
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
parse_strict_json: Callable[[str], Any] = _DECODER.decode
"""Parse stored JSON text; ``ValueError`` for bad JSON or a non-finite number."""


def _types(values: Iterable[object]) -> set[type]:
    return set(map(type, values))


def _fail(field: str, problem: str) -> StorageDataError:
    return StorageDataError(f"stored {field} {problem}")


_SMALL_TEXT = 2048  # rows of at most this many characters on average are parsed joined


def _parse_arrays(texts: Sequence[str], field: str) -> list[Any]:
    """Parse many stored JSON texts, joining small ones into one ``json.loads`` call.

    Big texts are parsed one by one (joining them would copy megabytes for nothing); small ones
    in batches of about ``_DECODE_TEXT`` characters, which saves the per-call overhead.

    Raises:
        StorageDataError: a text is not JSON or holds a non-finite number (then each text of the
            failing batch is parsed alone, so the message is about the first bad one).
    """
    decode = _DECODER.decode
    total = sum(map(len, texts))
    if total > _SMALL_TEXT * len(texts):
        try:
            return [decode(text) for text in texts]
        except ValueError as error:
            raise _fail(field, f"is not valid JSON: {error}") from None
        except RecursionError:
            raise _fail(field, f"nests deeper than {MAX_WIRE_DEPTH} levels") from None
    out: list[Any] = []
    per_call = max(1, _DECODE_TEXT * len(texts) // max(1, total))  # texts per json.loads
    for start in range(0, len(texts), per_call):
        batch = texts[start : start + per_call]
        try:
            out.extend(decode("[" + ",".join(batch) + "]"))
        except RecursionError:
            raise _fail(field, f"nests deeper than {MAX_WIRE_DEPTH} levels") from None
        except ValueError:
            for text in batch:  # name the bad text
                try:
                    decode(text)
                except ValueError as error:
                    raise _fail(field, f"is not valid JSON: {error}") from None
            raise _fail(field, "is not valid JSON") from None  # pragma: no cover - one failed
    if len(out) != len(texts):
        raise _fail(field, "is not valid JSON")  # "1],[2" smuggled an extra value in
    return out


def _column(values: Sequence[object], kind: type, field: str) -> None:
    if values and _types(values) != {kind}:
        raise _fail(field, f"must be {'an integer' if kind is int else 'text'}")


def decode_turns(rows: Sequence[Sequence[Any]], after: int, end: int | None) -> StoredItems:
    """Turn rows (:data:`TurnRow`, ascending) → the stored items with ``after < sequence <= end``.

    ``end`` None means up to the newest item. The rows must be contiguous and cover ``after + 1``.
    Every check runs over whole columns (type sets, lengths against the turns' item counts), so
    a session of many small turns costs about what one of a few big turns does.

    Raises:
        StorageDataError: a column of the wrong type, a gap or overlap between turns, an array
            whose length is not the turn's item count, a payload that is not an object, bad JSON.
    """
    if not rows:
        return StoredItems(
            first_sequence=after + 1, item_ids=(), kinds=(), payloads=(), created_at=()
        )
    firsts, lasts, stamps, ids_texts, kinds_texts, created_texts, payload_texts = zip(
        *rows, strict=True
    )
    _column(firsts, int, "first_sequence")
    _column(lasts, int, "last_sequence")
    _column(stamps, str, "created_at")
    _column(ids_texts, str, "item_ids_json")
    _column(kinds_texts, str, "kinds_json")
    _column(payload_texts, str, "payloads_json")
    if not _types(created_texts) <= _STR_OR_NONE:
        raise _fail("item_created_at_json", "must be text or NULL")
    return assemble_turns(
        TurnColumns(
            firsts=firsts,
            lasts=lasts,
            stamps=stamps,
            ids=_parse_arrays(ids_texts, "item_ids_json"),
            kinds=_parse_arrays(kinds_texts, "kinds_json"),
            created=created_texts,
            payloads=_parse_arrays(payload_texts, "payloads_json"),
        ),
        after,
        end,
    )


class TurnColumns(NamedTuple):
    """The columns of consecutive turns with their JSON arrays parsed (one entry per turn)."""

    firsts: Sequence[Any]
    lasts: Sequence[Any]
    stamps: Sequence[Any]
    ids: Sequence[Any]
    kinds: Sequence[Any]
    created: Sequence[Any]
    """Each turn's ``item_created_at_json`` text, or None (every item has the turn's stamp)."""
    payloads: Sequence[Any]


def assemble_turns(turns: TurnColumns, after: int, end: int | None) -> StoredItems:
    """Check parsed turn columns and spread them into the items ``after < sequence <= end``.

    The caller has checked the column types (integer sequences, text stamps, parsed arrays).

    Raises:
        StorageDataError: a gap or overlap between turns, an array whose length is not the turn's
            item count, an id that is not a string, a payload that is not an object.
    """
    firsts, lasts, stamps = turns.firsts, turns.lasts, turns.stamps
    if firsts[0] < 1 or firsts[0] > after + 1 or max(lasts) > MAX_SAFE_INTEGER:
        raise _fail("first_sequence", "does not continue the journal")
    counts = list(map(operator.sub, lasts, map(_PREVIOUS, firsts)))
    # Each turn follows the one before (``first == previous last + 1``) and holds an item.
    if any(map(operator.ne, islice(firsts, 1, None), map(_NEXT, lasts))) or min(counts) < 1:
        raise _fail("last_sequence", "leaves a gap or overlap between turns")
    ids = _flatten(list(turns.ids), counts, _STR_ONLY)
    if ids is None:
        raise _fail("item_ids_json", "must be an array of the turn's item ids")
    payloads = _flatten(list(turns.payloads), counts, _DICT_ONLY)
    if payloads is None:
        raise _fail("payloads_json", "must be an array of the turn's payload objects")
    all_kinds = turns.kinds
    kinds: list[Any] | None
    if _types(all_kinds) == _STR_ONLY:  # one kind per turn, the usual case
        if all_kinds.count(all_kinds[0]) == len(all_kinds):  # and the same in every turn
            kinds = [all_kinds[0]] * len(ids)
        else:
            kinds = list(chain.from_iterable(map(repeat, all_kinds, counts)))
    else:
        kinds = _flatten([_spread(k, n) for k, n in zip(all_kinds, counts, strict=True)], counts)
        if kinds is None or _types(kinds) != _STR_ONLY:
            raise _fail("kinds_json", "must be a string or an array of the turn's kinds")
    created: list[Any] | None
    created_texts = turns.created
    if created_texts.count(None) == len(created_texts):
        created = list(chain.from_iterable(map(repeat, stamps, counts)))
    else:
        spread = [
            repeat(stamp, n) if text is None else _parse_arrays([text], "item_created_at_json")[0]
            for stamp, text, n in zip(stamps, created_texts, counts, strict=True)
        ]
        created = _flatten([_spread(v, n) for v, n in zip(spread, counts, strict=True)], counts)
        if created is None or _types(created) != _STR_ONLY:
            raise _fail("item_created_at_json", "must be an array of the turn's timestamps")
    low = after - firsts[0] + 1  # the first turn may start before ``after``
    high = len(ids) if end is None else min(len(ids), end - firsts[0] + 1)
    if low or high != len(ids):
        ids, kinds, payloads, created = (
            ids[low:high],
            kinds[low:high],
            payloads[low:high],
            created[low:high],
        )
    return StoredItems(
        first_sequence=after + 1,
        item_ids=cast(list[str], ids),
        kinds=cast(list[str], kinds),
        payloads=cast(list[JsonObject], payloads),
        created_at=cast(list[str], created),
    )


def _spread(value: Any, count: int) -> Any:
    """A turn's column as a list (one string or a ``repeat`` stands for ``count`` equal values).

    Anything else is left as it is, to be checked by :func:`_flatten`.
    """
    if type(value) is str:
        return [value] * count
    return list(cast(Iterable[Any], value)) if type(value) is repeat else value


def _flatten(
    arrays: list[Any], counts: list[int], items: set[type] | None = None
) -> list[Any] | None:
    """Concatenate per-turn arrays, or None if one is not a list of its turn's length.

    With ``items``, every element must be of exactly those types.
    """
    if _types(arrays) != _LIST_ONLY or list(map(len, arrays)) != counts:
        return None
    flat = list(chain.from_iterable(arrays))
    if items is not None and flat and _types(flat) != items:
        return None
    return flat


def decode_id_rows(rows: Sequence[Sequence[Any]]) -> list[tuple[int, list[str]]]:
    """``(first_sequence, last_sequence, item_ids_json)`` rows → ``(first, ids)`` per turn.

    Raises:
        StorageDataError: a column of the wrong type or an id array of the wrong shape.
    """
    if not rows:
        return []
    firsts, lasts, texts = zip(*rows, strict=True)
    _column(firsts, int, "first_sequence")
    _column(lasts, int, "last_sequence")
    _column(texts, str, "item_ids_json")
    out: list[tuple[int, list[str]]] = []
    parsed: list[Any] = _parse_arrays(texts, "item_ids_json")
    for first, last, ids in zip(firsts, lasts, parsed, strict=True):
        if (
            type(ids) is not list
            or len(cast(list[Any], ids)) != last - first + 1
            or _types(cast(list[Any], ids)) != _STR_ONLY
        ):
            raise _fail("item_ids_json", "must be an array of the turn's item ids")
        out.append((first, cast(list[str], ids)))
    return out
