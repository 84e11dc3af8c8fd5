"""The journal's one-pass codecs equal the shared strict rules (hypothesis property tests)."""

from __future__ import annotations

import collections
import enum
import json
from typing import Any, cast

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actoviq.core import JsonObject, find_json_violation
from actoviq.runtime import StorageDataError
from actoviq.runtime.stores import StoredSessionItem
from actoviq.runtime.stores.validation import dump_json, require_json_object
from actoviq.storage.sqlite._journal import (
    dump_json_object,
    stored_items,
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
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
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
    ]
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.text(max_size=4)
    bad_keys = st.sampled_from([1, 2.5, None, True, Text("k")])
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
    return type(value) is _DICT and find_json_violation(value) is None


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


def test_stored_items_equal_the_constructed_records() -> None:
    rows = [
        (1, "a", "text", '{"type":"text","text":"a"}', "2026-01-01T00:00:00.000Z"),
        (2, "b", "tool_call", '{"args":[1,2.5,null,true]}', "2026-01-01T00:00:01.000Z"),
    ]
    items = stored_items(rows, 0)
    expected = (
        StoredSessionItem(
            sequence=1,
            item_id="a",
            kind="text",
            payload={"type": "text", "text": "a"},
            created_at="2026-01-01T00:00:00.000Z",
        ),
        StoredSessionItem(
            sequence=2,
            item_id="b",
            kind="tool_call",
            payload={"args": [1, 2.5, None, True]},
            created_at="2026-01-01T00:00:01.000Z",
        ),
    )
    assert items == expected
    assert [repr(item) for item in items] == [repr(item) for item in expected]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        items[0].kind = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ((1, "a", "text", "{}", None), "stored created_at must be text"),
        ((True, "a", "text", "{}", "t"), "stored sequence must be an integer"),
        ((1, 7, "text", "{}", "t"), "stored item_id must be text"),
        ((0, "a", "text", "{}", "t"), "non-negative safe integer"),
        ((1, "a", "text", b"{}", "t"), "payload_json must be stored as text"),
    ],
)
def test_corrupt_columns_fail_closed(row: tuple[Any, ...], message: str) -> None:
    good = (2, "b", "text", "{}", "t")
    with pytest.raises(StorageDataError, match=message):
        stored_items([row, good] if row[0] != 0 else [row], 0)
