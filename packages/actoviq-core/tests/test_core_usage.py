from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest

from actoviq.core import (
    Usage,
    UsageAccumulator,
    UsageValueError,
    empty_usage,
    from_json,
    normalize_usage_delta,
    to_json,
)

Golden = Callable[[str], Any]
_NUMBERS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def test_golden_normalize_usage_delta(golden: Golden) -> None:
    cases = golden("usage.json")["normalize_usage_delta"]
    assert len(cases) >= 20
    for case in cases:
        delta = dict(case["input"])
        # JSON cannot hold NaN/Infinity: the vectors spell them as strings.
        for key, value in list(delta.items()):
            if value in _NUMBERS and "numeric string" not in case["description"]:
                delta[key] = _NUMBERS[value]
        if "error" in case:
            with pytest.raises(UsageValueError) as caught:
                normalize_usage_delta(delta)
            assert isinstance(caught.value, ValueError)  # the reference RangeError
            assert str(caught.value) == case["error"]["message"], case["name"]
        else:
            assert normalize_usage_delta(delta).to_json() == case["output"], case["name"]


def test_golden_accumulator_sequences_are_atomic(golden: Golden) -> None:
    sequences = golden("usage.json")["accumulator"]
    stepped = [sequence for sequence in sequences if "steps" in sequence]
    assert len(stepped) >= 4
    for sequence in stepped:
        acc = UsageAccumulator()
        for step in sequence["steps"]:
            before = acc.snapshot()
            if step["op"] == "reset":
                acc.reset()
            elif "error" in step:
                delta = {
                    k: _NUMBERS.get(v, v) if isinstance(v, str) else v
                    for k, v in step["delta"].items()
                }
                with pytest.raises(UsageValueError):
                    acc.add(delta)
                assert acc.snapshot() == before
            else:
                acc.add(step["delta"])
            assert acc.snapshot().to_json() == step["snapshot"], sequence.get("name")


def test_golden_initialisation_forms(golden: Golden) -> None:
    sequences = golden("usage.json")["accumulator"]
    initialised = [sequence for sequence in sequences if "initial" in sequence]
    assert initialised
    for sequence in initialised:
        acc = UsageAccumulator(sequence["initial"])
        expected = sequence.get("snapshot_after_init", sequence.get("snapshot"))
        first = acc.snapshot()
        assert first.to_json() == expected
        if "then_add" in sequence:
            acc.add(sequence["then_add"])
            assert first.to_json() == sequence["first_snapshot_after_add"]


def test_field_wise_sum_matches_upstream() -> None:
    acc = UsageAccumulator()
    acc.add(
        {
            "requests": 1,
            "inputTokens": 100,
            "outputTokens": 30,
            "cacheReadTokens": 40,
            "cacheWriteTokens": 10,
            "reasoningTokens": 12,
            "audioInputTokens": 3,
            "audioOutputTokens": 2,
            "costUsd": 0.0125,
        }
    )
    acc.add(
        {
            "requests": 1,
            "inputTokens": 70,
            "outputTokens": 20,
            "totalTokens": 95,
            "cacheReadTokens": 20,
            "cacheWriteTokens": 5,
            "reasoningTokens": 8,
            "audioInputTokens": 1,
            "audioOutputTokens": 4,
            "costUsd": 0.0075,
        }
    )
    assert acc.snapshot() == Usage(
        requests=2,
        input_tokens=170,
        output_tokens=50,
        total_tokens=225,
        cache_read_tokens=60,
        cache_write_tokens=15,
        reasoning_tokens=20,
        audio_input_tokens=4,
        audio_output_tokens=6,
        cost_usd=0.02,
    )


def test_iterable_initial_snapshot_is_frozen_and_reset_empties() -> None:
    acc = UsageAccumulator([{"inputTokens": 5, "outputTokens": 2}, {"totalTokens": 10}])
    first = acc.snapshot()
    assert first.total_tokens == 17
    acc.add({"outputTokens": 1})
    assert first.total_tokens == 17
    assert acc.snapshot().total_tokens == 18
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        first.total_tokens = 0  # type: ignore[misc]
    acc.reset()
    assert acc.snapshot() == empty_usage()


def test_mapping_initial_is_one_delta_not_an_iterable_of_keys() -> None:
    assert UsageAccumulator({"inputTokens": 4, "outputTokens": 6}).snapshot().total_tokens == 10


@pytest.mark.parametrize(
    "delta",
    [
        {"inputTokens": -1},
        {"costUsd": float("nan")},
        {"outputTokens": 1.5},
        {"inputTokens": True},
        {"requests": None},
        {"inputTokens": "5"},
    ],
)
def test_add_rejects_bad_deltas_atomically(delta: dict[str, Any]) -> None:
    acc = UsageAccumulator({"inputTokens": 1})
    before = acc.snapshot()
    with pytest.raises(UsageValueError) as caught:
        acc.add({"outputTokens": 3, **delta})
    assert caught.value.field in delta
    assert acc.snapshot() == before


def test_usage_wire_form_round_trips() -> None:
    usage = Usage(requests=1, input_tokens=3, output_tokens=4, total_tokens=7, cost_usd=0.5)
    assert from_json(Usage, to_json(usage)) == usage
    assert to_json(usage)["inputTokens"] == 3


def test_integral_float_counters_are_accepted_as_ints() -> None:
    usage = normalize_usage_delta({"inputTokens": 3.0})
    assert usage.input_tokens == 3 and type(usage.input_tokens) is int


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"input_tokens": -1}, "inputTokens"),
        ({"cost_usd": float("nan")}, "costUsd"),
        ({"requests": True}, "requests"),
        ({"output_tokens": 1.5}, "outputTokens"),
        ({"total_tokens": 2**53}, "totalTokens"),
    ],
)
def test_usage_values_are_validated_when_built(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(UsageValueError) as caught:
        Usage(**kwargs)
    assert caught.value.field == field


def test_adding_usages_past_the_safe_integer_range_is_refused() -> None:
    big = Usage(input_tokens=2**53 - 1)
    with pytest.raises(UsageValueError, match="inputTokens"):
        UsageAccumulator(big).add(Usage(input_tokens=1))


def test_a_built_usage_is_its_own_normal_form() -> None:
    usage = Usage(input_tokens=3, output_tokens=4, total_tokens=7)
    assert normalize_usage_delta(usage) is usage
    assert Usage(input_tokens=3.0).input_tokens == 3  # type: ignore[arg-type]
