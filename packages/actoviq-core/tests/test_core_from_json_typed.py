"""``from_json`` fails typed on data it cannot structure (never a bare converter error, never
defaults for data that is not an object), while the canonical types keep their own errors."""

from __future__ import annotations

from typing import Any

import pytest

from actoviq.core import (
    ActoviqError,
    AgentSpec,
    ItemValidationError,
    JsonValueError,
    RunLimits,
    TextItem,
    from_json,
    to_json,
)

SECRET = "sk-live-0123456789abcdef"


@pytest.mark.parametrize("data", ["garbage", 7, ["max_turns", 5], None])
def test_data_that_is_not_an_object_is_refused_not_defaulted(data: object) -> None:
    # Before: RunLimits() with every default came back for a string, a number or a list.
    with pytest.raises(JsonValueError) as caught:
        from_json(RunLimits, data)
    assert caught.value.code == "INVALID_JSON_VALUE"
    assert "RunLimits" in str(caught.value)


def test_a_field_of_the_wrong_type_is_typed_and_keeps_the_value_out_of_the_message() -> None:
    # Before: the converter's bare ValueError, quoting the value (int('sk-live-...')).
    with pytest.raises(JsonValueError) as caught:
        from_json(RunLimits, {"max_turns": SECRET})
    assert isinstance(caught.value, ActoviqError)
    assert SECRET not in str(caught.value)
    assert caught.value.__cause__ is None


def test_a_class_the_converter_cannot_resolve_is_typed() -> None:
    # Before: NameError from an annotation that only resolves at runtime.
    with pytest.raises(JsonValueError, match="AgentSpec"):
        from_json(AgentSpec, {"id": "a", "name": "A", "model": "x:y"})


def test_canonical_types_keep_their_own_errors_and_valid_data_still_structures() -> None:
    with pytest.raises(ItemValidationError):
        from_json(TextItem, {"type": "text"})
    with pytest.raises(ItemValidationError):
        from_json(TextItem, "text")
    limits = RunLimits(max_turns=4)
    data: Any = to_json(limits)
    assert from_json(RunLimits, data) == limits
    item = TextItem(role="user", text="hi")
    assert from_json(TextItem, to_json(item)) == item
