"""The fast valid-input check of tool schemas never accepts what jsonschema rejects."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from actoviq.runtime.tools.schema import (
    ToolInputInvalidError,
    _fast_object_check,  # pyright: ignore[reportPrivateUsage]
    compile_json_schema,
)

SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "additionalProperties": False,
        "required": ["city"],
    },
    {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number", "description": "x"},
            "flag": {"type": "boolean"},
            "nothing": {"type": "null"},
        },
        "required": ["n"],
    },
]

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=4,
)
objects = st.dictionaries(st.sampled_from(["city", "n", "x", "flag", "nothing", "other"]), values)


@pytest.mark.parametrize("schema", SCHEMAS)
@settings(max_examples=300)
@given(value=objects | values)
def test_fast_check_only_accepts_valid_values(schema: dict[str, Any], value: object) -> None:
    fast = _fast_object_check(schema)
    assert fast is not None
    valid = Draft202012Validator(schema).is_valid(cast(Any, value))  # pyright: ignore[reportUnknownMemberType]
    if fast(value):
        assert valid
    validate = compile_json_schema(schema)
    if valid:
        validate(value)
    else:
        with pytest.raises(ToolInputInvalidError):  # the full validator still reports errors
            validate(value)


def test_fast_check_accepts_typical_input_and_rejects_missing_required() -> None:
    fast = _fast_object_check(SCHEMAS[0])
    assert fast is not None
    assert fast({"city": "Paris"})
    assert not fast({})
    assert not fast({"city": "Paris", "extra": 1})
    assert not fast({"city": 3})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}},
        {"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
        {"type": "object", "properties": {"a": {"type": "array"}}},
        {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        {"type": "array"},
    ],
)
def test_other_schemas_use_the_full_validator_only(schema: dict[str, Any]) -> None:
    assert _fast_object_check(schema) is None
