"""Every canonical item type: JSON round-trip, canonical dumps, typed errors for bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import CANONICAL_TYPES, STRATEGIES, any_item, examples

from actoviq.core import (
    ITEM_TYPES,
    CanonicalItem,
    ItemValidationError,
    JsonValue,
    JsonValueError,
    UnknownItemTypeError,
    dumps_canonical,
    item_from_json,
    item_to_json,
    items_from_json,
    items_to_json,
)


def test_every_type_of_the_union_has_a_strategy_and_an_example() -> None:
    assert len(CANONICAL_TYPES) == len(ITEM_TYPES) == 14
    assert set(STRATEGIES) == set(CANONICAL_TYPES), "add a strategy for the new item type"
    assert set(examples()) == set(CANONICAL_TYPES), "add an example for the new item type"
    assert set(ITEM_TYPES.values()) == set(CANONICAL_TYPES)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(any_item)
def test_json_round_trip_is_identity(item: CanonicalItem) -> None:
    wire = item_to_json(item)
    text = json.dumps(wire, allow_nan=False)
    assert item_from_json(json.loads(text)) == item
    assert item_to_json(item_from_json(wire)) == wire


@settings(max_examples=200)
@given(st.lists(any_item, max_size=6))
def test_transcripts_round_trip_and_dump_canonically(items: list[CanonicalItem]) -> None:
    wire: list[JsonValue] = [*items_to_json(items)]
    assert items_from_json(wire) == items
    again: list[JsonValue] = [*items_to_json(items_from_json(json.loads(json.dumps(wire))))]
    assert dumps_canonical(again) == dumps_canonical(wire)  # stable bytes


_BAD_VALUES: list[Any] = [float("nan"), float("inf"), (1, 2), {1, 2}, b"x", object(), {1: "k"}]


@settings(max_examples=300)
@given(any_item, st.sampled_from(_BAD_VALUES), st.data())
def test_corrupted_wire_data_raises_only_typed_errors(
    item: CanonicalItem, bad: Any, data: st.DataObject
) -> None:
    wire: dict[str, Any] = dict(item_to_json(item))
    key = data.draw(st.sampled_from(sorted(wire)))
    wire[key] = bad
    with pytest.raises((ItemValidationError, JsonValueError)):
        item_from_json(wire)


@given(st.text(min_size=1).filter(lambda t: t not in ITEM_TYPES))
def test_unknown_types_are_rejected_or_preserved_never_coerced(type_name: str) -> None:
    data = {"type": type_name, "text": "looks like text"}
    with pytest.raises(UnknownItemTypeError):
        item_from_json(data)
    kept = item_from_json(data, preserve_unknown=True)
    assert item_to_json(kept) == data
