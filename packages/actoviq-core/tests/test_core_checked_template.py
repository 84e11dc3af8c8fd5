"""``CheckedJsonTemplate``: a checked shape filled per use, only the scalar holes checked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actoviq.core import CheckedJsonObject, CheckedJsonTemplate, JsonValueError


def base() -> CheckedJsonObject:
    policy = CheckedJsonObject({"id": "default", "attributes": {"tier": 1}}, max_depth=4)
    trace = CheckedJsonObject({"traceId": "t", "spanId": ""}, max_depth=2)
    budget = CheckedJsonObject(
        {"limits": CheckedJsonObject({"max": 5}, max_depth=2), "used": 0, "cost": 0},
        max_depth=4,
    )
    return CheckedJsonObject(
        {"runId": "", "trace": trace, "budget": budget, "policy": policy, "key": None, "n": 1},
        max_depth=16,
    )


HOLES: list[str | tuple[str, ...]] = [
    "runId",
    ("trace", "spanId"),
    ("budget", "used"),
    ("budget", "cost"),
    "key",
]


def test_fill_sets_the_holes_and_shares_only_the_untouched_checked_pieces() -> None:
    shape = base()
    template = CheckedJsonTemplate(shape, HOLES, label="meta")
    assert template.holes == (
        ("runId",),
        ("trace", "spanId"),
        ("budget", "used"),
        ("budget", "cost"),
        ("key",),
    )
    first: Any = template.fill("r1", "00aa", 3, 0.5, None)
    second: Any = template.fill("r2", "00bb", 4, 1.5, "k\u00e9")
    view: Any = shape
    assert type(first) is CheckedJsonObject and first.max_depth == shape.max_depth
    assert first.to_json() == {
        "runId": "r1",
        "trace": {"traceId": "t", "spanId": "00aa"},
        "budget": {"limits": {"max": 5}, "used": 3, "cost": 0.5},
        "policy": {"id": "default", "attributes": {"tier": 1}},
        "key": None,
        "n": 1,
    }
    assert second["runId"] == "r2" and second["key"] == "k\u00e9"
    assert second["trace"]["spanId"] == "00bb"
    # The base is unchanged; the pieces on the way to a hole are fresh, the others shared.
    assert shape.to_json()["runId"] == "" and view["trace"]["spanId"] == ""
    assert first["trace"] is not second["trace"] and first["trace"] is not view["trace"]
    assert first["policy"] is view["policy"]
    assert first["budget"]["limits"] is view["budget"]["limits"]
    # Read-only like any checked object, and each plain copy is the caller's own.
    with pytest.raises(AttributeError):
        first.anything = {}
    plain: Any = first.to_json()
    plain["budget"]["limits"]["max"] = 0
    plain["trace"]["spanId"] = "x"
    assert first.to_json()["budget"] == {"limits": {"max": 5}, "used": 3, "cost": 0.5}
    assert json.loads(json.dumps(second.to_json())) == second.to_json()
    # A filled object nests like any checked object.
    outer = CheckedJsonObject({"orchestration": first})
    assert outer.to_json()["orchestration"] == first.to_json()


@pytest.mark.parametrize(
    ("values", "path", "reason"),
    [
        (("\ud800", "s", 1, 1.0, None), "$.runId", "lone-surrogate"),
        (("r", "s", 2**53, 1.0, None), "$.budget.used", "unsafe-integer"),
        (("r", "s", 1, float("nan"), None), "$.budget.cost", "non-finite"),
        (("r", "s", 1, float("inf"), None), "$.budget.cost", "non-finite"),
        (("r", "s", 1, 1.0, ["a"]), "$.key", "not-json"),
        (("r", {"a": 1}, 1, 1.0, None), "$.trace.spanId", "not-json"),
        (("r", "s", 1, 1.0, object()), "$.key", "not-json"),
    ],
)
def test_fill_refuses_values_that_are_not_strict_json_scalars(
    values: tuple[object, ...], path: str, reason: str
) -> None:
    template = CheckedJsonTemplate(base(), HOLES, label="meta")
    with pytest.raises(JsonValueError) as caught:
        template.fill(*values)
    assert caught.value.path == path and caught.value.reason == reason
    assert caught.value.code == "INVALID_JSON_VALUE"


def test_fill_needs_one_value_per_hole() -> None:
    template = CheckedJsonTemplate(base(), HOLES)
    with pytest.raises(JsonValueError, match="5 values"):
        template.fill("r", "s", 1, 1.0)
    filled: Any = template.fill("r", "s", True, -(2**53 - 1), None)
    assert filled["budget"]["used"] is True and filled["budget"]["cost"] == -(2**53 - 1)


@pytest.mark.parametrize(
    "holes",
    [
        ["missing"],
        ["policy"],  # a nested checked object, not a scalar field
        [("policy", "attributes", "tier")],  # through a plain object
        [("runId", "x")],  # through a scalar
        [("trace", "missing")],
        ["runId", "runId"],
        [()],
        [(1,)],
    ],
)
def test_holes_must_be_distinct_scalar_fields_reached_through_checked_objects(
    holes: list[Any],
) -> None:
    with pytest.raises(JsonValueError):
        CheckedJsonTemplate(base(), holes)
    plain_object: Any = {"a": 1}
    with pytest.raises(JsonValueError):
        CheckedJsonTemplate(plain_object, ["a"])
