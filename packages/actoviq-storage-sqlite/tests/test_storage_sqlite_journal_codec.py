"""The journal's turn codecs equal the shared strict rules (hypothesis property tests)."""

from __future__ import annotations

import collections
import enum
import json
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actoviq.core import MAX_SAFE_INTEGER, MAX_WIRE_DEPTH, JsonObject, find_json_violation
from actoviq.runtime import StorageDataError
from actoviq.runtime.stores import NewSessionItem, StoredSessionItem
from actoviq.runtime.stores.rules import check_append_items
from actoviq.runtime.stores.validation import dump_json, require_json_object
from actoviq.storage.sqlite._journal import (
    decode_id_rows,
    decode_turns,
    dump_json_object,
    prepare_turn,
)


class Text(str):
    """A ``str`` subclass: the C encoder writes it, strict JSON refuses it."""


class Number(enum.IntEnum):
    ONE = 1


class Real(float):
    """A ``float`` subclass."""


class Items(list[Any]):
    """A ``list`` subclass."""


_valid_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([2.0, -0.0, float(MAX_SAFE_INTEGER), 2.0**53, 1e16])  # integral floats
    | st.text(max_size=8)
)
_invalid_scalars = st.sampled_from(
    [
        float("nan"),
        float("inf"),
        -float("inf"),
        b"bytes",
        Text("sub"),
        Number.ONE,
        Real(1.5),
        {1, 2},
        object(),
        MAX_SAFE_INTEGER + 1,
        -(2**64),
        "lone \ud800",
        "\udfff",
    ]
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.text(max_size=4)
    bad_keys = st.sampled_from([1, 2.5, None, True, Text("k"), "k\udc00"])
    return (
        st.lists(children, max_size=4)
        | st.dictionaries(keys, children, max_size=4)
        | st.lists(children, max_size=3).map(tuple)
        | st.lists(children, max_size=3).map(Items)
        | st.dictionaries(keys, children, max_size=3).map(collections.OrderedDict)
        | st.dictionaries(bad_keys, children, min_size=1, max_size=2)
    )


def _valid_containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=4) | st.dictionaries(
        st.text(max_size=4), children, max_size=4
    )


valid = st.recursive(_valid_scalars, _valid_containers, max_leaves=12)
anything = st.recursive(_valid_scalars | _invalid_scalars, _containers, max_leaves=12)
objects = st.dictionaries(st.text(max_size=4), anything, max_size=5)


def _reference(value: object) -> tuple[str, str]:
    """What "validate strictly, then dump" gives: ("ok", text) or ("error", message)."""
    if not _strict_object(value):
        with pytest.raises(StorageDataError) as caught:
            require_json_object(value, "payload")
        return "error", str(caught.value)
    return "ok", dump_json(require_json_object(value, "payload"))


_DICT: type = dict  # identity checks without narrowing ``object`` to ``dict[Unknown, ...]``
_LIST: type = list


def _strict_object(value: object) -> bool:
    return type(value) is _DICT and find_json_violation(value, max_depth=MAX_WIRE_DEPTH) is None


def _fast(value: object) -> tuple[str, str]:
    try:
        return "ok", dump_json_object(value, "payload")
    except StorageDataError as error:
        return "error", str(error)


@settings(max_examples=400, deadline=None)
@given(objects | anything)
def test_one_pass_dump_equals_validate_then_dump(value: object) -> None:
    assert _fast(value) == _reference(value)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=4), valid, max_size=5))
def test_valid_objects_dump_to_the_shared_text(value: dict[str, Any]) -> None:
    text = dump_json_object(value, "payload")
    assert text == dump_json(value)
    assert json.loads(text) == value


@settings(max_examples=100, deadline=None)
@given(objects, st.integers(min_value=0, max_value=20))
def test_cycles_are_refused_with_the_shared_message(value: dict[str, Any], pick: int) -> None:
    containers: list[Any] = []
    pending: list[Any] = [value]
    while pending:
        node: object = pending.pop()
        if type(node) is _DICT:
            containers.append(node)
            pending.extend(cast(dict[str, Any], node).values())
        elif type(node) is _LIST:
            containers.append(node)
            pending.extend(cast(list[Any], node))
    target = containers[pick % len(containers)]
    if type(target) is dict:
        target["cycle"] = value
    else:
        target.append(value)
    kind, message = _fast(value)
    assert (kind, message) == _reference(value)
    assert kind == "error"  # StorageDataError: a cycle (or an earlier violation on the path)


def test_shared_sub_objects_are_not_cycles() -> None:
    shared: JsonObject = {"x": [1, 2]}
    value: JsonObject = {"a": shared, "b": [shared, shared]}
    assert dump_json_object(value, "payload") == dump_json(value)


def test_non_objects_are_refused() -> None:
    values: list[object] = [[1], "text", None, collections.OrderedDict(a=1)]
    for value in values:
        with pytest.raises(StorageDataError, match="payload must be a JSON object"):
            dump_json_object(value, "payload")


STAMP = "2026-01-01T00:00:00.000Z"


def _reference_turn(items: list[NewSessionItem]) -> tuple[str, object]:
    """The shared rules item by item: ("ok", (ids, kinds, payload texts, created)) or an error."""
    try:
        prepared = check_append_items(items, STAMP, require_json_object)
    except StorageDataError as error:
        return "error", str(error)
    return "ok", (
        [item[0] for item in prepared],
        [item[1] for item in prepared],
        [dump_json(item[2]) for item in prepared],
        [item[3] or STAMP for item in prepared],
    )


def _fast_turn(items: list[NewSessionItem]) -> tuple[str, object]:
    try:
        turn = prepare_turn(items, STAMP)
    except StorageDataError as error:
        return "error", str(error)
    texts = [dump_json(payload) for payload in json.loads(turn.payloads_json)]
    return "ok", (turn.ids, turn.kinds, texts, turn.created)


_ids = st.sampled_from(["a", "b", "c", "", "d", "e\ud800", "é"])
_new_items = st.lists(
    st.builds(
        NewSessionItem,
        item_id=_ids,
        kind=st.sampled_from(["text", "tool_call", "", "k\udfff"]),
        payload=objects | valid,
        created_at=st.none() | st.sampled_from(["2026-02-02T00:00:00.000Z", "", "\ud800"]),
    ),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(_new_items)
def test_a_turn_is_prepared_exactly_as_the_shared_rules_check_it(
    items: list[NewSessionItem],
) -> None:
    assert _fast_turn(items) == _reference_turn(items)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.dictionaries(st.text(max_size=4), valid, max_size=4), st.booleans()),
        min_size=1,
        max_size=6,
    )
)
def test_prepared_turns_decode_to_the_same_items(rows: list[tuple[dict[str, Any], bool]]) -> None:
    items = [
        NewSessionItem(
            item_id=f"i{n}",
            kind="text" if n % 2 else "tool_call",
            payload=payload,
            created_at="2026-03-03T00:00:00.000Z" if own_stamp else None,
        )
        for n, (payload, own_stamp) in enumerate(rows)
    ]
    turn = prepare_turn(items, STAMP)
    first = 5
    row = (
        first,
        first + len(items) - 1,
        STAMP,
        turn.ids_json,
        turn.kinds_json,
        turn.created_json,
        turn.payloads_json,
    )
    decoded = decode_turns([row], first - 1, None)
    assert decoded == tuple(
        StoredSessionItem(
            sequence=first + n,
            item_id=item.item_id,
            kind=item.kind,
            payload=item.payload,
            created_at=item.created_at or STAMP,
        )
        for n, item in enumerate(items)
    )
    # A window inside the turn: only the items after ``after`` and up to ``end``.
    window = decode_turns([row], first, first + 1)
    assert [item.sequence for item in window] == [
        s for s in (first + 1,) if s <= first + len(items) - 1
    ]
    assert decode_id_rows([(row[0], row[1], row[3])]) == [(first, [i.item_id for i in items])]


def _turn(first: int, ids: list[str], payloads: str | None = None) -> tuple[Any, ...]:
    body = payloads if payloads is not None else "[" + ",".join("{}" for _ in ids) + "]"
    return (first, first + len(ids) - 1, STAMP, json.dumps(ids), '"text"', None, body)


def test_records_are_immutable_tuples() -> None:
    [item] = decode_turns([_turn(1, ["a"])], 0, None)
    assert item == StoredSessionItem(
        sequence=1, item_id="a", kind="text", payload={}, created_at=STAMP
    )
    with pytest.raises(AttributeError):
        item.kind = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([(1, 1, None, '["a"]', '"text"', None, "[{}]")], "stored created_at must be text"),
        ([(True, 1, STAMP, '["a"]', '"text"', None, "[{}]")], "first_sequence must be an integer"),
        ([(1, 1, STAMP, b'["a"]', '"text"', None, "[{}]")], "item_ids_json must be text"),
        ([_turn(2, ["a"])], "does not continue the journal"),
        ([_turn(1, ["a"]), _turn(3, ["b"])], "gap or overlap"),
        ([_turn(1, ["a", "b"]), _turn(2, ["c"])], "gap or overlap"),
        ([_turn(1, ["a"], "[{},{}]")], "the turn's payload objects"),
        ([_turn(1, ["a"], "[[1]]")], "the turn's payload objects"),
        ([_turn(1, ["a"], '[{"a":NaN}]')], "not valid JSON"),
        ([_turn(1, ["a"], '[{"a":1e400}]')], "non-finite number"),
        ([_turn(1, ["a"], "[{}],[{}]")], "not valid JSON"),  # would add a value to a bulk parse
        ([(1, 1, STAMP, '["a","b"]', '"text"', None, "[{}]")], "the turn's item ids"),
        ([(1, 1, STAMP, "[1]", '"text"', None, "[{}]")], "the turn's item ids"),
        ([(1, 1, STAMP, '["a"]', "7", None, "[{}]")], "the turn's kinds"),
        ([(1, 1, STAMP, '["a"]', '"text"', '["x","y"]', "[{}]")], "the turn's timestamps"),
    ],
)
def test_corrupt_turns_fail_closed(rows: list[tuple[Any, ...]], message: str) -> None:
    # StorageDataError (STORAGE_DATA_INVALID): a corrupt row is never read as a shorter journal.
    with pytest.raises(StorageDataError, match=message):
        decode_turns(rows, 0, None)


def test_turns_of_both_shapes_decode_together_and_windows_cut_across_them() -> None:
    rows = [
        (1, 2, STAMP, '["a","b"]', '"text"', None, '[{"n":1},{"n":2}]'),
        (3, 4, "T2", '["c","d"]', '["tool_call","text"]', '["T3","T4"]', '[{"n":3},{"n":4}]'),
        (5, 5, "T5", '["e"]', '"text"', None, '[{"n":5}]'),
    ]
    every = decode_turns(rows, 0, None)
    assert [(i.sequence, i.item_id, i.kind, i.payload["n"], i.created_at) for i in every] == [
        (1, "a", "text", 1, STAMP),
        (2, "b", "text", 2, STAMP),
        (3, "c", "tool_call", 3, "T3"),
        (4, "d", "text", 4, "T4"),
        (5, "e", "text", 5, "T5"),
    ]
    window = decode_turns(rows, 1, 3)
    assert [(i.sequence, i.item_id, i.kind, i.created_at) for i in window] == [
        (2, "b", "text", STAMP),
        (3, "c", "tool_call", "T3"),
    ]
    assert window.sequences == range(2, 4)


class _Kind(str):
    """A ``str`` subclass equal to a plain kind: strict rules refuse it anyway."""


def test_a_kind_that_only_compares_equal_is_refused_like_the_shared_rules_do() -> None:
    items = [
        NewSessionItem(item_id="a", kind="text", payload={}),
        NewSessionItem(item_id="b", kind=_Kind("text"), payload={}),
    ]
    assert _fast_turn(items) == _reference_turn(items)
    # StorageDataError: the shared message for a kind that is not exactly a non-empty str.
    with pytest.raises(StorageDataError, match="kind must be a non-empty string"):
        prepare_turn(items, STAMP)
