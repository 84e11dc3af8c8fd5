"""``CheckedJsonObject``: checked and copied once, read-only, nested without a second walk."""

from __future__ import annotations

from typing import Any, cast

import pytest

from actoviq.core import (
    DEFAULT_CHECKED_DEPTH,
    MAX_JSON_DEPTH,
    CheckedJsonObject,
    JsonValueError,
)


def nest(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def test_a_checked_object_is_a_copy_and_hands_out_copies() -> None:
    source: dict[str, Any] = {"a": [1, {"b": 2.5}], "s": "x", "n": None, "t": True}
    checked = CheckedJsonObject(source)
    source["a"][1]["b"] = "changed"
    source["s"] = "changed"
    assert checked.to_json() == {"a": [1, {"b": 2.5}], "s": "x", "n": None, "t": True}
    plain = checked.to_json()
    cast(list[Any], plain["a"]).append(3)
    cast(list[Any], checked["a"]).append(4)
    assert checked["a"] == [1, {"b": 2.5}]
    assert dict(checked) == {"a": [1, {"b": 2.5}], "s": "x", "n": None, "t": True}
    assert len(checked) == 4 and "s" in checked and "zz" not in checked


def test_a_checked_object_is_read_only() -> None:
    checked = CheckedJsonObject({"a": 1})
    with pytest.raises(AttributeError):
        setattr(checked, "_data", {"a": float("nan")})  # noqa: B010
    with pytest.raises(AttributeError):
        delattr(checked, "_data")
    with pytest.raises(TypeError):
        cast(Any, checked)["a"] = 2
    assert checked.to_json() == {"a": 1}


@pytest.mark.parametrize(
    ("value", "path", "reason"),
    [
        ({"n": float("nan")}, "$.n", "non-finite"),
        ({"n": 2**53}, "$.n", "unsafe-integer"),
        ({"s": "\ud800"}, "$.s", "lone-surrogate"),
        ({"\udfff": 1}, None, "lone-surrogate"),
        ({"deep": {"x": [1, (2, 3)]}}, "$.deep.x[1]", "not-json"),
        ({1: "key"}, None, "non-string-key"),
        ({"deep": nest(MAX_JSON_DEPTH)}, None, "too-deep"),
    ],
)
def test_a_value_that_is_not_strict_json_is_refused_typed(
    value: dict[Any, Any], path: str | None, reason: str
) -> None:
    with pytest.raises(JsonValueError) as caught:
        CheckedJsonObject(value, label="run metadata")
    assert caught.value.reason == reason
    assert caught.value.label == "run metadata"
    if path is not None:
        assert caught.value.path == path


def test_a_nested_checked_object_needs_a_smaller_depth_bound() -> None:
    inner = CheckedJsonObject({"x": 1}, max_depth=3)
    assert CheckedJsonObject({"inner": inner}, max_depth=4).to_json() == {"inner": {"x": 1}}
    with pytest.raises(JsonValueError) as caught:
        CheckedJsonObject({"inner": inner}, max_depth=3)
    assert (caught.value.path, caught.value.reason) == ("$.inner", "too-deep")
    # the bound is enforced on the object's own plain values too
    with pytest.raises(JsonValueError):
        CheckedJsonObject({"x": nest(3)}, max_depth=3)
    assert CheckedJsonObject({"x": nest(2)}, max_depth=3).to_json() == {"x": [[1]]}
    with pytest.raises(JsonValueError):
        CheckedJsonObject({}, max_depth=0)
    assert DEFAULT_CHECKED_DEPTH == MAX_JSON_DEPTH - 1


def test_updated_checks_only_the_changes_and_leaves_the_original_alone() -> None:
    trace = CheckedJsonObject({"traceId": "t", "spanId": ""}, max_depth=1)
    base = CheckedJsonObject({"runId": "", "trace": trace, "list": [1]})
    child = base.updated({"runId": "r1", "trace": trace.updated({"spanId": "s1"}), "extra": 2})
    assert child.to_json() == {
        "runId": "r1",
        "trace": {"traceId": "t", "spanId": "s1"},
        "list": [1],
        "extra": 2,
    }
    assert base.to_json() == {"runId": "", "trace": {"traceId": "t", "spanId": ""}, "list": [1]}
    replaced = base.updated({"list": None, "trace": None})
    assert replaced.to_json() == {"runId": "", "trace": None, "list": None}
    with pytest.raises(JsonValueError) as caught:
        base.updated({"runId": "\ud800"}, label="orchestration metadata")
    assert (caught.value.path, caught.value.reason) == ("$.runId", "lone-surrogate")
    with pytest.raises(JsonValueError):
        trace.updated({"nested": {"too": "deep"}})  # max_depth=1 holds scalars only


def test_deep_values_copy_without_recursion() -> None:
    deep = nest(MAX_JSON_DEPTH - 2)
    checked = CheckedJsonObject({"deep": deep})
    assert checked.to_json() == {"deep": deep}
    assert checked["deep"] == deep
    assert repr(CheckedJsonObject({"a": 1})) == "CheckedJsonObject({'a': 1})"


def test_empty_nested_containers_are_fresh_in_every_copy() -> None:
    piece = CheckedJsonObject({"attributes": {}, "roots": []}, max_depth=4)
    checked = CheckedJsonObject({"piece": piece, "list": [], "object": {}})
    first, second = checked.to_json(), checked.to_json()
    cast(list[Any], first["list"]).append(1)
    cast(dict[str, Any], first["object"])["k"] = 1
    cast(dict[str, Any], cast(dict[str, Any], first["piece"])["attributes"])["k"] = 1
    cast(list[Any], cast(dict[str, Any], first["piece"])["roots"]).append(1)
    assert (
        second
        == checked.to_json()
        == {
            "piece": {"attributes": {}, "roots": []},
            "list": [],
            "object": {},
        }
    )
    flat = CheckedJsonObject({"a": 1})
    assert flat.to_json() is not flat.to_json()


def test_updated_takes_any_mapping_of_changes_and_refuses_other_values() -> None:
    from types import MappingProxyType

    base = CheckedJsonObject({"a": 1, "b": [1]})
    assert base.updated(MappingProxyType({"a": 2})).to_json() == {"a": 2, "b": [1]}
    assert base.updated({"b": 3}).to_json() == {"a": 1, "b": 3}
    with pytest.raises(JsonValueError):
        base.updated(cast(Any, [("a", 2)]))


def test_updated_of_known_keys_still_checks_every_value() -> None:
    piece = CheckedJsonObject({"id": "p", "roots": ["/a"]}, max_depth=4)
    base = CheckedJsonObject(
        {"s": "", "n": 0, "f": 0.0, "b": False, "z": None, "piece": piece, "list": [1]},
        max_depth=8,
    )
    for key, bad in (
        ("s", "x\udfff"),
        ("n", 2**53),
        ("n", -(2**53)),
        ("f", float("nan")),
        ("f", float("inf")),
        ("piece", CheckedJsonObject({"a": 1}, max_depth=8)),  # not bounded below 8
    ):
        with pytest.raises(JsonValueError) as caught:
            base.updated({key: bad})
        assert caught.value.path == f"$.{key}"
    changed = base.updated(
        {
            "s": "é",
            "n": 2**53 - 1,
            "f": -1.5,
            "b": True,
            "z": "now text",
            "piece": piece.updated({"id": "q"}),
            "list": 7,  # a container replaced by a scalar
        }
    )
    plain = changed.to_json()
    assert plain == {
        "s": "é",
        "n": 2**53 - 1,
        "f": -1.5,
        "b": True,
        "z": "now text",
        "piece": {"id": "q", "roots": ["/a"]},
        "list": 7,
    }
    cast(list[Any], cast(dict[str, Any], plain["piece"])["roots"]).append("/b")
    assert changed["piece"]["roots"] == ["/a"]  # the nested piece is still copied out
    back = changed.updated({"list": [2], "s": 3})  # a scalar replaced by a container
    list_copy = back.to_json()["list"]
    assert list_copy == [2] and list_copy is not back.to_json()["list"]
    assert base.to_json()["list"] == [1]


def test_copies_made_by_updated_are_checked_objects_as_read_only_as_the_first() -> None:
    base = CheckedJsonObject(
        {"a": 1, "piece": CheckedJsonObject({"b": 2}, max_depth=2)}, max_depth=4
    )
    copies = [base.updated({"a": 2}), base.updated({"new": "key"}), base.updated({"a": [1]})]
    for copy in copies:
        assert type(copy) is CheckedJsonObject
        assert isinstance(copy, CheckedJsonObject) and copy.max_depth == base.max_depth
        with pytest.raises(AttributeError):
            setattr(copy, "_data", {"a": float("nan")})  # noqa: B010
        with pytest.raises(AttributeError):
            delattr(copy, "_nested")
        assert CheckedJsonObject({"nested": copy})["nested"] is copy  # taken as checked
    assert [copy.to_json() for copy in copies] == [
        {"a": 2, "piece": {"b": 2}},
        {"a": 1, "piece": {"b": 2}, "new": "key"},
        {"a": [1], "piece": {"b": 2}},
    ]
