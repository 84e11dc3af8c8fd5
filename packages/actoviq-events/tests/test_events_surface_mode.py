"""The stricter surface mode of the one redaction engine (spec 03 §6.2)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actoviq.events import DEFAULT_REPLACEMENT, RedactionPolicy, Redactor
from actoviq.events.redaction import may_hold_secret

R = DEFAULT_REPLACEMENT

PYTHON_TRACE = (
    "boom\nTraceback (most recent call last):\n"
    '  File "/home/alice/project/app.py", line 12, in main\n'
    "    run(api_key)\n"
    '  File "C:\\Users\\alice\\lib\\x.py", line 3, in run\n'
    "    raise ValueError('bad')\n"
    "ValueError: bad"
)
NODE_TRACE = (
    "Error: request failed\n"
    "    at fetchThing (C:\\Users\\dev\\secret-project\\src\\client.js:42:13)\n"
    "    at async Promise.all (index 0)\n"
    "    at /srv/app/node_modules/x/index.js:7:1\n"
    "    at com.acme.Billing.charge(Billing.java:88)"
)


def test_surface_policy_is_scanning_and_stack_stripping() -> None:
    policy = RedactionPolicy.surface(replacement="***", additional_keys=("ssn",))
    assert policy.scan_text and policy.strip_stack_traces and policy.default_keys
    assert Redactor(policy).redact({"SSN": "1", "note": "Bearer abc"}) == {
        "SSN": "***",
        "note": "Bearer ***",
    }


def test_python_frames_and_their_paths_are_removed() -> None:
    text = Redactor(RedactionPolicy.surface()).redact_text(PYTHON_TRACE)
    assert "alice" not in text
    assert "app.py" not in text
    assert "run(api_key)" not in text
    assert text.startswith("boom\n")
    assert text.endswith("ValueError: bad")


def test_javascript_and_java_frames_are_removed() -> None:
    text = Redactor(RedactionPolicy.surface()).redact_text(NODE_TRACE)
    assert "C:\\Users" not in text
    assert "/srv/app" not in text
    assert "Billing.java" not in text
    assert text.startswith("Error: request failed")


def test_frames_inside_nested_values_are_removed() -> None:
    redacted = Redactor(RedactionPolicy.surface()).redact(
        {"error": {"message": NODE_TRACE}, "items": [PYTHON_TRACE]}
    )
    assert not re.search(r"Users|alice|/srv/", str(redacted))


def test_stack_keys_are_replaced_whole() -> None:
    redacted = Redactor(RedactionPolicy.surface()).redact(
        {"error": {"message": "x", "stack": NODE_TRACE, "stackTrace": PYTHON_TRACE}}
    )
    assert redacted == {"error": {"message": "x", "stack": R, "stackTrace": R}}


@pytest.mark.parametrize(
    "text",
    [
        "edit /etc/nginx/nginx.conf then reload",
        "open C:\\Program Files\\App\\app.exe",
        "we met at noon (see notes)",
        "look at the file",
    ],
)
def test_prose_paths_stay(text: str) -> None:
    assert Redactor(RedactionPolicy.surface()).redact_text(text) == text


def test_stack_stripping_is_off_by_default() -> None:
    assert Redactor(RedactionPolicy(scan_text=True)).redact_text(NODE_TRACE) == NODE_TRACE


FRAGMENTS = [
    "Bearer ",
    "basic ",
    "api_key",
    "x-api-key",
    "token",
    "pass",
    "secret",
    "auth",
    "sig",
    "=",
    ":",
    " ",
    '"',
    "'",
    "?",
    "&",
    ";",
    "sk-",
    "sk-proj-",
    "ghp_",
    "github_pat_",
    "xoxb-",
    "glpat-",
    "hf_",
    "AKIA",
    "ASIA",
    "AIza",
    "ABCDEFGHIJKLMNOP",
    "abcd1234",
    "0123456789",
    "https://",
    "user",
    "@",
    "host",
    "/",
    "\\",
    "C:",
    "at ",
    "fn (",
    ")",
    'File "',
    '", line 3',
    "\n    ",
    "Traceback (most recent call last):",
    "\n",
    "-",
    "_",
    ".",
]


@given(st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join))
@settings(max_examples=400, deadline=None)
def test_the_prefilter_never_skips_a_text_some_rule_matches(text: str) -> None:
    for policy in (RedactionPolicy(scan_text=True), RedactionPolicy.surface()):
        redactor = Redactor(policy)
        matched = any(pattern.search(text) for pattern, _ in redactor._rules)  # pyright: ignore[reportPrivateUsage]
        assert may_hold_secret(text) or not matched, text
