from __future__ import annotations

import datetime
import decimal
import json
import types
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actoviq.core import (
    MAX_JSON_DEPTH,
    MAX_SAFE_INTEGER,
    UNSET,
    JsonValueError,
    assert_json_object,
    assert_json_value,
    clone_json_value,
    dumps_canonical,
    find_json_violation,
    is_json_value,
    loads_strict,
)

Golden = Callable[[str], Any]


def _cyclic_dict() -> Any:
    d: dict[str, Any] = {"a": 1}
    d["self"] = d
    return d


def _cyclic_list() -> Any:
    items: list[Any] = [1]
    items.append(items)
    return items


def _indirect_cycle() -> Any:
    o: dict[str, Any] = {"child": {}}
    o["child"]["parent"] = o
    return o


class _Custom:
    x = 1


# Python analogues of the reference's invalid values, by golden description.
ANALOGUES: dict[str, Callable[[], Any]] = {
    "number NaN": lambda: float("nan"),
    "number +Infinity": lambda: float("inf"),
    "number -Infinity": lambda: float("-inf"),
    "NaN nested inside an object": lambda: {"a": {"b": [1, float("nan")]}},
    "undefined (absent value)": lambda: UNSET,
    "object property whose value is undefined": lambda: {"a": 1, "b": UNSET},
    "function": lambda: lambda: 1,
    "bigint": lambda: decimal.Decimal(1),
    "self-referencing object (cycle)": _cyclic_dict,
    "self-referencing array (cycle)": _cyclic_list,
    "indirect cycle through a child": _indirect_cycle,
    "cycle with a custom label": _cyclic_dict,
    "Date instance (non-plain prototype)": lambda: datetime.datetime(1970, 1, 1),
    "Map instance": lambda: types.MappingProxyType[str, int]({}),
    "Set instance": lambda: {1},
    "class instance": _Custom,
    "Uint8Array (binary)": lambda: b"\x00\x00",
    "object with a symbol key": lambda: {1: "x"},
    "tool_call item whose input contains NaN": lambda: {
        "type": "tool_call",
        "id": "c",
        "name": "n",
        "input": {"x": float("nan")},
    },
    "tool_result item whose output is undefined (absent output)": lambda: {
        "type": "tool_result",
        "callId": "c",
        "status": "success",
        "output": UNSET,
    },
}
# JS-only shapes with no Python counterpart (sparse arrays, accessors, boxed strings...).
JS_ONLY = {
    "symbol",
    "boxed String object",
    "sparse array (hole)",
    "array with length set but no elements",
    "array with an extra own property",
    "object with an accessor (getter) property",
    "object with a non-enumerable property",
}


def test_every_golden_invalid_value_has_a_python_analogue_or_is_js_only(golden: Golden) -> None:
    for case in golden("items.json")["invalid"]:
        assert case["description"] in ANALOGUES or case["description"] in JS_ONLY


@pytest.mark.parametrize("description", sorted(ANALOGUES))
def test_golden_invalid_values_are_rejected_with_the_reference_message(
    description: str, golden: Golden
) -> None:
    case = next(c for c in golden("items.json")["invalid"] if c["description"] == description)
    value = ANALOGUES[description]()
    assert is_json_value(value) is False
    label = "checkpoint" if "custom label" in description else "value"
    # JsonValueError is a TypeError, like the reference.
    with pytest.raises(TypeError) as caught:
        assert_json_value(value, label)
    assert isinstance(caught.value, JsonValueError)
    assert str(caught.value) == case["assertJsonValue_error"]["message"]


@pytest.mark.parametrize(
    "value",
    [
        (1, 2),
        {1, 2},
        frozenset({1}),
        b"x",
        bytearray(b"x"),
        datetime.date(2020, 1, 1),
        {1: "a"},
        decimal.Decimal("1.5"),
        object(),
    ],
)
def test_python_only_invalid_values_are_rejected(value: object) -> None:
    assert not is_json_value(value)
    with pytest.raises(JsonValueError, match="must be a finite, acyclic JSON value"):
        assert_json_value(value)


def test_bool_is_a_json_boolean() -> None:
    assert is_json_value(True)
    assert is_json_value([True, False, None])


def test_accepted_edge_cases(golden: Golden) -> None:
    # decision_override (D2/D10): the reference accepts integers beyond 2^53, lone surrogates and
    # any depth; we refuse them (test_core_json_strict.py). A value at the depth limit passes.
    shared = {"k": 1}
    deep: Any = "leaf"
    for _ in range(MAX_JSON_DEPTH):
        deep = [deep]
    for value in [
        -0.0,
        9007199254740991,
        -9007199254740991,
        1.7976931348623157e308,
        5e-324,
        {},
        [],
        "",
        {"": 1},
        {"a": shared, "b": [shared, shared]},
        deep,
        [True, False, None],
    ]:
        assert is_json_value(value), value
    assert find_json_violation(deep) is None
    for case in golden("items.json")["json_value_accepted_edge_cases"]:
        if "value" in case:
            assert is_json_value(case["value"]), case["description"]


def test_violation_path_names_the_location() -> None:
    assert find_json_violation({"a": {"b": [1, float("nan")]}}) == "$.a.b[1]"
    with pytest.raises(JsonValueError) as caught:
        assert_json_value({"x": [b"no"]}, "metadata")
    assert caught.value.path == "$.x[0]"
    assert caught.value.label == "metadata"
    assert caught.value.code == "INVALID_JSON_VALUE"


def test_dag_is_not_a_cycle_but_a_cycle_deep_down_is() -> None:
    shared: dict[str, Any] = {"k": [1]}
    assert is_json_value({"a": shared, "b": shared})
    inner: list[Any] = []
    outer = {"x": {"y": inner}}
    inner.append(outer)
    assert not is_json_value(outer)


def test_clone_json_value_deep_copies() -> None:
    original: Any = {"a": [1, {"b": None}], "c": "é"}
    copy: Any = clone_json_value(original)
    assert copy == original
    assert copy is not original
    original["a"][1]["b"] = 2
    assert copy["a"][1]["b"] is None


def test_assert_json_object_requires_a_dict() -> None:
    assert assert_json_object({"a": 1}) == {"a": 1}
    with pytest.raises(JsonValueError, match="input must be a JSON object"):
        assert_json_object([1], "input")


def test_loads_strict_refuses_non_finite_numbers() -> None:
    assert loads_strict('{"a": 1.5}') == {"a": 1.5}
    for text in ("NaN", '{"a": Infinity}', "[-Infinity]"):
        with pytest.raises(JsonValueError, match="finite numbers"):
            loads_strict(text)
    with pytest.raises(json.JSONDecodeError):
        loads_strict("{not json")


def test_golden_items_dump_canonically_byte_for_byte(golden: Golden) -> None:
    for vector in golden("items.json")["valid"]:
        assert dumps_canonical(vector["value"]) == vector["serialized_sorted_keys"], vector["name"]


def test_dumps_canonical_rejects_invalid_values() -> None:
    with pytest.raises(JsonValueError):
        dumps_canonical({"a": float("inf")})


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@given(json_values)
def test_property_valid_values_clone_and_dump_stably(value: Any) -> None:
    assert is_json_value(value)
    copy = clone_json_value(value)
    assert copy == value  # integral floats come back as equal ints
    assert dumps_canonical(copy) == dumps_canonical(value)
    assert loads_strict(dumps_canonical(value)) == copy


_POISON = [float("nan"), float("inf"), (1,), {1}, b"", object(), 2**53, -(2**53), "\ud800"]


@given(json_values, st.sampled_from(_POISON))
def test_property_one_bad_leaf_poisons_the_value(value: Any, bad: object) -> None:
    assert not is_json_value({"ok": value, "bad": [bad]})
