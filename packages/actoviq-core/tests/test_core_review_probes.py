"""Adversarial probes of core's public JSON API (review): each failed before its fix."""

from __future__ import annotations

import pytest

from actoviq.core import JsonValueError, TextItem, loads, loads_strict


@pytest.mark.parametrize("literal", ["9" * 5000, "-" + "9" * 4301, "1" + "0" * 10_000])
def test_an_integer_literal_past_the_digit_limit_is_a_typed_unsafe_integer(literal: str) -> None:
    # Before: Python's int conversion limit (4,300 digits) escaped as a bare ValueError.
    with pytest.raises(JsonValueError) as caught:
        loads_strict(f'{{"a": [{literal}]}}')
    assert caught.value.code == "INVALID_JSON_VALUE"
    assert caught.value.reason == "unsafe-integer"
    with pytest.raises(JsonValueError):
        loads(TextItem, f'{{"role": "user", "text": "x", "metadata": {{"n": {literal}}}}}')


def test_text_that_is_not_json_is_still_a_decode_error() -> None:
    import json

    with pytest.raises(json.JSONDecodeError):
        loads_strict("[1] trailing")
