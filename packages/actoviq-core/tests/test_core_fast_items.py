"""The fast item decoders accept exactly what the generic converter accepts, and build equal items.

``item_from_json`` and ``items_from_json`` try the hand-written decoders of ``_fast_items`` first
(one item, or a whole transcript column by column) and fall back to the cattrs structure hooks.
These properties compare both paths on mappings generated to sit on every rule's edge: each
field's valid values, wrong types, ``str`` subclasses, lone surrogates, unsafe integers, too-deep
JSON, missing and unknown keys.
"""

from __future__ import annotations

from typing import Any, cast

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actoviq.core import (
    ITEM_TYPES,
    MAX_JSON_DEPTH,
    MAX_SAFE_INTEGER,
    ItemValidationError,
    TextItem,
    ToolCallItem,
    ToolResultItem,
    UnknownItemTypeError,
    converter,
    item_from_json,
    item_to_json,
    items_from_json,
)
from actoviq.core import _fast_items as fast


class Tagged(str):
    """A str subclass: never a JSON string for the validators."""


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


strings = st.sampled_from(["", "a", "héllo", "x\ud800", "\udfffy", "😀", "line\nbreak"]) | st.text(
    max_size=5
)
_ODD: list[Any] = [None, 1, 1.5, True, [], {}, Tagged("user"), 2**53, -(2**53), float("nan"), b"x"]
odd: st.SearchStrategy[Any] = st.sampled_from(_ODD)
_deep_values = [_deep(MAX_JSON_DEPTH), _deep(MAX_JSON_DEPTH + 1), {"k": _deep(MAX_JSON_DEPTH)}]
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER - 2, max_value=MAX_SAFE_INTEGER + 2)
    | st.floats(allow_nan=True, allow_infinity=True)
    | strings,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(strings, children, max_size=3)
    ),
    max_leaves=6,
) | st.sampled_from(_deep_values)
objects = st.dictionaries(strings, json_values, max_size=3) | json_values
literal = st.sampled_from(["system", "user", "assistant", "success", "error", "other", "User"])
text_ish: st.SearchStrategy[Any] = strings | odd

FIELDS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "text": {"role": literal | odd, "text": text_ish, "id": text_ish, "metadata": objects},
    "tool_call": {"id": text_ish, "name": text_ish, "input": objects, "metadata": objects},
    "tool_result": {
        "callId": text_ish,
        "status": literal | odd,
        "output": json_values,
        "name": text_ish,
        "id": text_ish,
        "metadata": objects,
    },
}


@st.composite
def mappings(draw: st.DrawFn, kind: str | None = None) -> dict[str, Any]:
    """A wire mapping of ``kind`` (or any type), each field present or not, valid or not."""
    kind = kind or draw(st.sampled_from([*FIELDS, "reasoning"]))
    data: dict[str, Any] = {"type": kind}
    for key, values in FIELDS.get(kind, {}).items():
        if draw(st.booleans()) or draw(st.booleans()):
            data[key] = draw(values)
    if draw(st.integers(0, 9)) == 0:
        data[draw(st.sampled_from(["extra", "callId", "role", "input", "call_id"]))] = "x"
    return data


def _slow(data: Any) -> Any:
    """The generic path: the cattrs structure hook (the validators decide)."""
    cls = ITEM_TYPES[data["type"]]
    return converter.structure(data, cls)


def _outcome(call: Any, data: Any) -> tuple[str, Any]:
    try:
        return "ok", call(data)
    except (ItemValidationError, UnknownItemTypeError) as error:
        return "error", (type(error), str(error))


def _same(a: Any, b: Any) -> bool:
    """Equal items with the same field types (``1`` and ``True`` are equal but not the same)."""
    if a != b or type(a) is not type(b):
        return False
    cls = cast(type[Any], type(a))
    return all(
        type(getattr(a, field.name)) is type(getattr(b, field.name)) for field in attrs.fields(cls)
    )


@settings(max_examples=600, deadline=None)
@given(mappings())
def test_fast_item_accepts_exactly_what_the_converter_accepts(data: dict[str, Any]) -> None:
    fast_result = fast.fast_item(data)
    slow_kind, slow_value = _outcome(_slow, data)
    if fast_result is not None:
        assert slow_kind == "ok", f"fast path accepted what the converter refuses: {data!r}"
        assert _same(fast_result, slow_value)
    # whatever the path, item_from_json behaves like the converter (same item or same error)
    kind, value = _outcome(item_from_json, data)
    assert kind == slow_kind
    if kind == "ok":
        assert _same(value, slow_value)
    else:
        assert value == slow_value


@settings(max_examples=300, deadline=None)
@given(st.lists(mappings(), max_size=8) | st.lists(mappings("text"), min_size=1, max_size=8))
def test_fast_items_is_item_by_item_or_nothing(batch: list[dict[str, Any]]) -> None:
    per_item = [_outcome(item_from_json, data) for data in batch]
    bulk = fast.fast_items(batch)
    if bulk is not None:
        assert all(kind == "ok" for kind, _ in per_item), "bulk accepted a refused item"
        assert len(bulk) == len(batch)
        assert all(_same(a, b) for a, (_, b) in zip(bulk, per_item, strict=True))
    kind, value = _outcome(items_from_json, batch)
    first_error = next((value for kind, value in per_item if kind == "error"), None)
    if first_error is None:
        assert kind == "ok"
        assert all(_same(a, b) for a, (_, b) in zip(value, per_item, strict=True))
    else:
        assert (kind, value) == ("error", first_error)


def test_a_transcript_of_every_common_type_decodes_in_bulk_in_order() -> None:
    items = [
        TextItem(role="user", text="weather?", metadata={"k": [1, 2.5]}),
        ToolCallItem(id="c1", name="weather", input={"city": "Paris"}),
        ToolResultItem(call_id="c1", status="success", output=None, name="weather"),
        TextItem(role="assistant", text="sunny 😀", id="m1"),
        ToolResultItem(call_id="c2", status="error", output={"e": "x"}),
    ]
    payloads = [item_to_json(item) for item in items]
    bulk = fast.fast_items(payloads)
    assert bulk == items
    assert items_from_json(payloads) == items
    assert items_from_json(tuple(payloads)) == items


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "text", "role": "user", "text": "x\ud800"},
        {"type": "text", "role": "user", "text": "ok", "metadata": {"n": 2**53}},
        {"type": "text", "role": "user", "text": "ok", "metadata": {"k\udfff": 1}},
        {"type": "text", "role": Tagged("user"), "text": "ok"},
        {"type": "text", "role": "user", "text": "ok", "extra": 1},
        {"type": "tool_call", "id": "c", "name": "n", "input": {"n": 2**53 + 1}},
        {"type": "tool_call", "id": "c", "name": "n", "input": [1]},
        {"type": "tool_call", "id": "c", "name": "n", "input": {"d": _deep(MAX_JSON_DEPTH)}},
        {"type": "tool_result", "callId": "c", "status": "success"},
        {"type": "tool_result", "callId": "c", "status": "done", "output": 1},
        {"type": "tool_result", "callId": "c", "status": "success", "output": float("inf")},
    ],
)
def test_refused_payloads_fail_typed_alone_and_in_a_transcript(payload: dict[str, Any]) -> None:
    assert fast.fast_item(payload) is None
    with pytest.raises(ItemValidationError) as alone:
        item_from_json(payload)
    good = {"type": "text", "role": "user", "text": "fine"}
    assert fast.fast_items([good, payload, good]) is None
    with pytest.raises(ItemValidationError) as within:
        items_from_json([good, payload, good])
    assert str(within.value) == str(alone.value)


def test_unhashable_or_missing_types_take_the_generic_path() -> None:
    assert fast.fast_items([{"type": ["text"], "role": "user", "text": "x"}]) is None
    assert fast.fast_items([{"role": "user", "text": "x"}]) is None
    assert fast.fast_items([]) is None
    assert fast.fast_items(["not a mapping"]) is None
    with pytest.raises(UnknownItemTypeError):
        items_from_json([{"type": ["text"], "role": "user", "text": "x"}])


def test_a_class_whose_fields_changed_switches_its_fast_path_off() -> None:
    assert fast.slot_setters(TextItem, ("role", "text", "id", "metadata")) is not None
    # a field list that is not the class's own (a field added upstream): no fast path
    assert fast.slot_setters(TextItem, ("role", "text", "id")) is None
    assert fast.slot_setters(TextItem, ("role", "text", "metadata", "id")) is None


def test_decoded_items_are_frozen_like_constructed_ones() -> None:
    item = fast.fast_item({"type": "text", "role": "user", "text": "x"})
    assert isinstance(item, TextItem)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        item.text = "y"  # type: ignore[misc]
    assert hash(item) == hash(TextItem(role="user", text="x"))


def test_optional_fields_missing_from_every_entry_are_none_and_checked_where_present() -> None:
    # A bulk decode skips the column of an optional field no entry has; where one entry has it,
    # the whole column is read and checked.
    texts: list[dict[str, Any]] = [
        {"type": "text", "role": "user", "text": "a"},
        {"type": "text", "role": "assistant", "text": "b"},
    ]
    assert fast.fast_items(texts) == [
        TextItem(role="user", text="a"),
        TextItem(role="assistant", text="b"),
    ]
    tagged: list[dict[str, Any]] = [
        *texts,
        {"type": "text", "role": "user", "text": "c", "id": "m3", "metadata": {}},
    ]
    decoded = fast.fast_items(tagged)
    assert decoded is not None
    assert [(i.id, i.metadata) for i in cast(list[TextItem], decoded)] == [
        (None, None),
        (None, None),
        ("m3", {}),
    ]
    assert fast.fast_items([*texts, {"type": "text", "role": "user", "text": "c", "id": 5}]) is None
    results: list[dict[str, Any]] = [
        {"type": "tool_result", "callId": "c1", "status": "success", "output": 1},
        {"type": "tool_result", "callId": "c2", "status": "error", "output": None, "name": "n"},
    ]
    assert fast.fast_items(results) == [
        ToolResultItem(call_id="c1", status="success", output=1),
        ToolResultItem(call_id="c2", status="error", output=None, name="n"),
    ]
    bad_name = [results[0], {**results[1], "name": ["n"]}]
    assert fast.fast_items(bad_name) is None
    calls: list[dict[str, Any]] = [{"type": "tool_call", "id": "c", "name": "n", "input": {}}]
    assert fast.fast_items(calls) == [ToolCallItem(id="c", name="n", input={})]
    assert fast.fast_items([{**calls[0], "metadata": {"n": 2**53}}]) is None
