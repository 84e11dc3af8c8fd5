"""``JsonHandOff`` and ``CheckedJsonTemplate.hand_off``: a checked object given once, uncopied."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from actoviq.core import (
    DEFAULT_CHECKED_DEPTH,
    CheckedJsonObject,
    CheckedJsonTemplate,
    JsonHandOff,
    JsonValueError,
)
from actoviq.core._json_builders import MAX_BUILDER_DEPTH


def shape() -> CheckedJsonObject:
    policy = CheckedJsonObject(
        {"id": "default", "attributes": {"tier": 1, "tags": ["a", {"b": None}]}}, max_depth=6
    )
    trace = CheckedJsonObject({"traceId": "t", "spanId": ""}, max_depth=2)
    budget = CheckedJsonObject(
        {"limits": CheckedJsonObject({"max": 5}, max_depth=2), "used": 0, "cost": 0.0},
        max_depth=4,
    )
    return CheckedJsonObject(
        {
            "runId": "",
            "trace": trace,
            "budget": budget,
            "policy": policy,
            "again": policy,  # one checked piece twice: two independent plain copies
            "roots": [],
            "key": None,
            "flag": True,
        },
        max_depth=16,
    )


HOLES: list[str | tuple[str, ...]] = ["runId", ("trace", "spanId"), ("budget", "used"), "key"]


def test_hand_off_builds_what_fill_builds_as_fresh_plain_containers() -> None:
    template = CheckedJsonTemplate(shape(), HOLES, label="meta")
    first = template.hand_off("r1", "00aa", 3, None)
    second = template.hand_off("r2", "00bb", 4, "k\u00e9")
    assert type(first) is JsonHandOff and not first.taken and first.max_depth == 16
    one: Any = first.take()
    two: Any = second.take()
    assert first.taken and second.taken
    assert one == template.fill("r1", "00aa", 3, None).to_json()
    assert list(one) == list(template.fill("r1", "00aa", 3, None).to_json())  # same key order
    assert two["runId"] == "r2" and two["trace"]["spanId"] == "00bb" and two["key"] == "k\u00e9"
    assert type(one["policy"]) is dict and type(one["roots"]) is list
    # Nothing is shared between two hand-offs, nor between two uses of one checked piece.
    for path in (
        ("policy",),
        ("policy", "attributes"),
        ("policy", "attributes", "tags"),
        ("budget", "limits"),
        ("roots",),
        ("trace",),
    ):
        a, b = one, two
        for key in path:
            a, b = a[key], b[key]
        assert a is not b, path
    assert one["policy"] is not one["again"]
    assert one["policy"]["attributes"]["tags"][1] is not one["again"]["attributes"]["tags"][1]
    one["policy"]["attributes"]["tags"][1]["b"] = "changed"
    one["budget"]["limits"]["max"] = 0
    fresh: Any = template.hand_off("r3", "00cc", 5, None).take()
    assert fresh["policy"]["attributes"]["tags"] == ["a", {"b": None}]
    assert fresh["budget"]["limits"] == {"max": 5} and fresh["again"] == fresh["policy"]
    assert json.loads(json.dumps(fresh)) == fresh


def test_a_hand_off_is_taken_once_and_read_only() -> None:
    handed = JsonHandOff({"a": [1, {"b": 2}]}, label="meta")
    plain = handed.take()
    assert plain == {"a": [1, {"b": 2}]}
    with pytest.raises(JsonValueError, match="not taken yet"):
        handed.take()
    view: Any = handed
    with pytest.raises(AttributeError):
        view._box = [{"evil": True}]
    with pytest.raises(AttributeError):
        del view._label
    assert "taken=True" in repr(handed)


def test_the_constructor_checks_and_copies_its_value() -> None:
    source: dict[str, Any] = {"list": [1, 2], "nested": CheckedJsonObject({"x": 1}, max_depth=2)}
    handed = JsonHandOff(source)
    source["list"].append(3)
    assert handed.take() == {"list": [1, 2], "nested": {"x": 1}}
    for bad in ({"n": float("nan")}, {"s": "\ud800"}, {"i": 2**53}, {1: "key"}, {"o": object()}):
        with pytest.raises(JsonValueError):
            JsonHandOff(bad)  # pyright: ignore[reportArgumentType]
    with pytest.raises(JsonValueError):
        JsonHandOff({"a": [[cast(list[Any], [])]]}, max_depth=3)
    with pytest.raises(JsonValueError, match="max_depth"):
        JsonHandOff({}, max_depth=DEFAULT_CHECKED_DEPTH + 1)


@pytest.mark.parametrize(
    ("values", "path", "reason"),
    [
        (("\ud800", "s", 1, None), "$.runId", "lone-surrogate"),
        (("r", "s", 2**53, None), "$.budget.used", "unsafe-integer"),
        (("r", "s", float("nan"), None), "$.budget.used", "non-finite"),
        (("r", "s", 1, ["a"]), "$.key", "not-json"),
        (("r", {"a": 1}, 1, None), "$.trace.spanId", "not-json"),
    ],
)
def test_hand_off_refuses_what_fill_refuses(
    values: tuple[object, ...], path: str, reason: str
) -> None:
    template = CheckedJsonTemplate(shape(), HOLES, label="meta")
    with pytest.raises(JsonValueError) as caught:
        template.hand_off(*values)
    assert caught.value.path == path and caught.value.reason == reason
    with pytest.raises(JsonValueError, match="4 values"):
        template.hand_off("r", "s", 1)


def test_deep_templates_are_copied_and_unbounded_ones_refused() -> None:
    inner: dict[str, Any] = {}
    deepest = inner
    for _ in range(MAX_BUILDER_DEPTH + 5):  # deeper than a builder is made for
        deepest["d"] = {}
        deepest = deepest["d"]
    deepest["leaf"] = [1]
    deep = CheckedJsonObject({"id": "", "tree": inner}, max_depth=MAX_BUILDER_DEPTH + 10)
    template = CheckedJsonTemplate(deep, ["id"])
    one: Any = template.hand_off("a").take()
    two: Any = template.hand_off("b").take()
    assert one == template.fill("a").to_json() and two["id"] == "b"
    a, b = one["tree"], two["tree"]
    while "d" in a:
        assert a is not b
        a, b = a["d"], b["d"]
    assert a["leaf"] == [1] and a["leaf"] is not b["leaf"]
    unbounded = CheckedJsonTemplate(CheckedJsonObject({"id": ""}, max_depth=512), ["id"])
    assert unbounded.fill("x").to_json() == {"id": "x"}
    with pytest.raises(JsonValueError, match="bounded within"):
        unbounded.hand_off("x")
