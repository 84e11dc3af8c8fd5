"""Adversarial probes of the redaction engine (review): each failed before its fix."""

from __future__ import annotations

import re
from typing import Any

import pytest

from actoviq.events import EventValidationError, RedactionPolicy, Redactor, redact_value


def test_an_integer_too_long_for_a_decimal_string_is_delivered_as_a_marker() -> None:
    # Before: str() of a 5,000-digit integer raised ValueError, redaction failed and the whole
    # event was dropped (fail-closed) instead of carrying the value as the docs promise.
    huge = 10**5000
    assert redact_value({"n": huge, "ok": 1}) == {"n": "[integer of 16610 bits]", "ok": 1}
    assert Redactor().redact([huge, -huge, 2**53]) == [
        "[integer of 16610 bits]",
        "[integer of 16610 bits]",
        "9007199254740992",
    ]


def test_one_additional_key_given_bare_is_that_key_not_its_letters() -> None:
    # Before: additional_keys="ssn" became ("s", "s", "n"): "ssn" stayed in clear while any
    # key named "s" or "n" was replaced.
    policy = RedactionPolicy(additional_keys="ssn")
    assert policy.additional_keys == ("ssn",)
    assert Redactor(policy).redact({"ssn": "123-45-6789", "s": 1, "n": 2}) == {
        "ssn": "[REDACTED]",
        "s": 1,
        "n": 2,
    }
    pattern = re.compile(r"tax_?id")
    assert RedactionPolicy(additional_keys=pattern).additional_keys == (pattern,)


@pytest.mark.parametrize(
    "options",
    [
        {"replacement": 5},  # before: AttributeError when the Redactor was built
        {"replacement": None},
        {"additional_keys": 5},
        {"scan_text": "yes"},  # before: accepted as truthy
        {"raw_argument_deltas": 1},
    ],
)
def test_a_policy_option_of_the_wrong_type_is_a_typed_error(options: dict[str, Any]) -> None:
    with pytest.raises(EventValidationError):
        Redactor(RedactionPolicy(**options))


def test_a_redactor_given_something_else_than_a_policy_is_a_typed_error() -> None:
    with pytest.raises(EventValidationError):
        Redactor("scan")  # type: ignore[arg-type]
