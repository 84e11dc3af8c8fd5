"""The key-decision cache, the flat-dict fast path and the text-scan prefilter of ``Redactor``.

Each optimisation is checked against a slower reference that cannot take the shortcut.
"""

from __future__ import annotations

import copy
import math
import re
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actoviq.core import UNSET
from actoviq.events import (
    DEFAULT_REPLACEMENT,
    EventValidationError,
    RedactionError,
    RedactionPolicy,
    Redactor,
)
from actoviq.events.redaction import DEFAULT_KEY_CACHE_LIMIT, SensitiveKeyMatcher
from actoviq.events.redaction_text import text_rules

POLICIES = (
    RedactionPolicy(),
    RedactionPolicy(additional_keys=("ssn", "Customer-ID", re.compile(r"x_.*_private"))),
    RedactionPolicy(default_keys=False, additional_keys=("password",)),
)

# Keys built from pieces of sensitive and ordinary names, in every casing and separator style.
KEY_PIECES = (
    "api", "Api", "API", "key", "Key", "token", "Tokens", "secret", "Secret", "password",
    "auth", "Authorization", "cookie", "set", "x", "X", "ssn", "SSN", "customer", "ID", "id",
    "input", "max", "name", "private", "credential", "s", "stack", "trace", "opaque", "_", "-",
    " ", ".", "0", "é",
)  # fmt: skip
keys = st.one_of(
    st.lists(st.sampled_from(KEY_PIECES), max_size=5).map("".join),
    st.text(max_size=12),
)


def test_key_cache_is_bounded_and_agrees_with_the_matcher() -> None:
    policy = POLICIES[1]
    redactor = Redactor(policy, key_cache_limit=8)
    matcher = SensitiveKeyMatcher(policy)
    names = [f"field{index}" for index in range(50)] + ["apiKey", "SSN", "x_a_private"] * 3
    for name in names:
        assert redactor.is_sensitive_key(name) == matcher.matches(name)
        assert redactor.key_cache_size <= 8
    assert redactor.key_cache_size > 0
    assert redactor.is_sensitive_key("apiKey") is True  # served from the cache this time
    assert Redactor().key_cache_size == 0
    assert DEFAULT_KEY_CACHE_LIMIT > 0


def test_key_cache_can_be_disabled_and_rejects_bad_limits() -> None:
    redactor = Redactor(key_cache_limit=0)
    assert redactor.is_sensitive_key("password") is True
    assert redactor.is_sensitive_key("name") is False
    assert redactor.key_cache_size == 0
    with pytest.raises(EventValidationError, match="key_cache_limit"):
        Redactor(key_cache_limit=-1)
    with pytest.raises(EventValidationError, match="key_cache_limit"):
        Redactor(key_cache_limit=1.5)  # type: ignore[arg-type]


@settings(max_examples=120, deadline=None)
@given(names=st.lists(keys, min_size=1, max_size=40), policy_index=st.integers(0, 2))
def test_cached_decisions_equal_uncached_decisions(names: list[str], policy_index: int) -> None:
    policy = POLICIES[policy_index]
    matcher = SensitiveKeyMatcher(policy)
    cached = Redactor(policy, key_cache_limit=4)  # small: the cache fills and refills
    uncached = Redactor(policy, key_cache_limit=0)
    for name in names + names:  # the second pass hits the cache
        expected = matcher.matches(name)
        assert cached.is_sensitive_key(name) == expected
        assert uncached.is_sensitive_key(name) == expected
        assert cached.key_cache_size <= 4


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["Bearer abc.def", "sk-test-CANARY123456", "https://u:p@host/x", "plain"]),
)
flat_keys = st.one_of(keys, st.sampled_from(["apiKey", "token", "name", "delta", "headers"]))
odd_values = st.one_of(st.just(UNSET), st.lists(scalars, max_size=3), st.tuples(st.integers()))
values = st.recursive(
    st.one_of(scalars, odd_values),
    lambda children: st.dictionaries(flat_keys, children, max_size=5),
    max_leaves=12,
)
payloads = st.dictionaries(st.one_of(flat_keys, st.integers(0, 3)), values, max_size=6)


def _outcome(redactor: Redactor, value: object) -> object:
    try:
        return ("ok", redactor.redact(value))
    except RedactionError as error:
        return ("error", error.message)


@settings(max_examples=120, deadline=None)
@given(
    payload=payloads,
    scan=st.booleans(),
    max_depth=st.sampled_from([1, 2, 3, 64]),
)
def test_fast_path_equals_the_general_walk(
    payload: dict[Any, Any], scan: bool, max_depth: int
) -> None:
    redactor = Redactor(RedactionPolicy(scan_text=scan, max_depth=max_depth))
    before = repr(copy.deepcopy(payload))
    fast = _outcome(redactor, payload)
    # A read-only mapping proxy is not a dict, so it always takes the general walk.
    general = _outcome(redactor, MappingProxyType(payload))
    assert fast == general  # (NaN and infinities become None, so == is exact here)
    assert repr(payload) == before


def test_fast_path_output_shares_no_containers_with_the_input() -> None:
    inner = {"delta": "hi", "Authorization": "Bearer abc"}
    payload: dict[str, Any] = {"headers": inner, "n": 1.5, "inf": math.inf, "apiKey": "k"}
    redacted = Redactor().redact(payload)
    assert redacted == {
        "headers": {"delta": "hi", "Authorization": DEFAULT_REPLACEMENT},
        "n": 1.5,
        "inf": None,
        "apiKey": DEFAULT_REPLACEMENT,
    }
    assert isinstance(redacted, dict)
    assert redacted is not payload and redacted["headers"] is not inner
    inner["delta"] = "changed"
    assert redacted["headers"] == {"delta": "hi", "Authorization": DEFAULT_REPLACEMENT}


FRAGMENTS = (
    "hello ", "Bearer ", "abc.def-ghi ", "basic ", "api_key=", "API-KEY: ", "x-api-key=", "'",
    '"', "secret", "token:", " ", "sk-", "sk-proj-", "ghp_", "AKIA", "ABCDEFGHIJKLMNOP", "AIza",
    "0123456789abcdefghijXYZ", "https://", "user:pw@", "host/p?", "key=", "&sig=", "zzz", "é",
    "\n", ",", "password = ", "hunter2", "glpat-", "xoxb-", "hf_", "1234",
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.sampled_from(FRAGMENTS), max_size=10))
def test_text_prefilter_never_changes_the_result(parts: list[str]) -> None:
    text = "".join(parts)
    redactor = Redactor()
    expected = text
    for pattern, substitute in text_rules(DEFAULT_REPLACEMENT):
        expected = pattern.sub(substitute, expected)
    assert redactor.redact_text(text) == expected
