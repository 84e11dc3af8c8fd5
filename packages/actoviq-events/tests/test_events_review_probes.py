"""Adversarial probes of the redaction engine (review): each failed before its fix."""

from __future__ import annotations

from actoviq.events import Redactor, redact_value


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
