"""The default text rules catch the common secret shapes and leave ordinary prose alone.

Each secret below is a canary (``CANARY…``); the redacted text must not contain any part of
it, whole or streamed in pieces split at every position.
"""

from __future__ import annotations

import pytest

from actoviq.events import (
    RedactionPolicy,
    Redactor,
    TextStreamRedactor,
    redact_text,
    redact_value,
)

SECRET = "CANARYs3cr3tVALUE42"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJDQU5BUlkifQ.CANARYsigPart_x-1"

SHAPES = [
    # Authorization headers keep their scheme and lose the credentials.
    (f"Authorization: Bearer {SECRET}", "Authorization: Bearer [REDACTED]"),
    (f"authorization: bearer {SECRET}", "authorization: bearer [REDACTED]"),
    (f"Authorization: Token {SECRET}", "Authorization: Token [REDACTED]"),
    (f"Authorization: {SECRET}", "Authorization: [REDACTED]"),
    (f'Authorization: Digest username="u", response="{SECRET}"', None),
    (f"Proxy-Authorization: Basic {SECRET}", "Proxy-Authorization: Basic [REDACTED]"),
    (f"curl -H 'Authorization: Bearer {SECRET}' https://x", None),
    (f'{{"Authorization": "Bearer {SECRET}"}}', '{"Authorization": "Bearer [REDACTED]"}'),
    (f"authorization=Bearer%20{SECRET}", "authorization=[REDACTED]"),
    # Bare bearer tokens and JWTs.
    (f"use Bearer {SECRET} to call", "use Bearer [REDACTED] to call"),
    (f"the header is bearer {SECRET}", "the header is bearer [REDACTED]"),
    (f"token {JWT} expires", "token [REDACTED] expires"),
    (JWT, "[REDACTED]"),
    # key=value / key: value pairs, prefixed and upper-case keys, quoted values with spaces.
    (f"password={SECRET}", "password=[REDACTED]"),
    (f"passwd={SECRET}", "passwd=[REDACTED]"),
    (f"pwd={SECRET}", "pwd=[REDACTED]"),
    (f"PWD: {SECRET}", "PWD: [REDACTED]"),
    (f"DB_PASSWORD={SECRET}", "DB_PASSWORD=[REDACTED]"),
    (f"mysql_root_pwd = {SECRET}", "mysql_root_pwd = [REDACTED]"),
    (f"AWS_SECRET_ACCESS_KEY={SECRET}", "AWS_SECRET_ACCESS_KEY=[REDACTED]"),
    (f"github-token: {SECRET}", "github-token: [REDACTED]"),
    (f"session_token={SECRET}", "session_token=[REDACTED]"),
    (f"password2={SECRET}", "password2=[REDACTED]"),
    (f'"passwd": "{SECRET} with spaces"', '"passwd": "[REDACTED]"'),
    (f"{{'password': '{SECRET} x'}}", "{'password': '[REDACTED]'}"),
    (f'password="{SECRET}', "password=[REDACTED]"),
    (f"https://host/login?user=a&pwd={SECRET}", "https://host/login?user=a&pwd=[REDACTED]"),
    # Well-known formats and PEM private keys.
    (f"sk_live_{SECRET}", "[REDACTED]"),
    (f"npm_{SECRET}", "[REDACTED]"),
    (
        f"key:\n-----BEGIN RSA PRIVATE KEY-----\nMII{SECRET}\n-----END RSA PRIVATE KEY-----\nok",
        "key:\n[REDACTED]\nok",
    ),
    (f"-----BEGIN PRIVATE KEY-----\nMII{SECRET}", "[REDACTED]"),
]


@pytest.mark.parametrize(("text", "expected"), SHAPES)
def test_default_text_rules_catch_common_secret_shapes(text: str, expected: str | None) -> None:
    redacted = redact_text(text)
    assert "CANARY" not in redacted
    assert "s3cr3t" not in redacted
    if expected is not None:
        assert redacted == expected


PROSE = [
    "The bearer of bad news arrived.",
    "I use basic math and basic tools.",
    "Basic Steps: find a safe crossing point.",
    "The password is stored hashed; never log it.",
    "Tokens are counted: input_tokens and max_tokens.",
    "Authorization is required for admin endpoints.",
    "See the credentials section of the guide.",
    "Pass the ball, then pass again.",
    "The well-known author wrote a secretary's memoir.",
]


@pytest.mark.parametrize("text", PROSE)
def test_ordinary_prose_is_not_redacted(text: str) -> None:
    assert redact_text(text) == text


@pytest.mark.parametrize(
    "key",
    [
        *("passwd", "pwd", "PWD", "db_pwd", "userPwd", "passcode", "mysqlRootPassword"),
        *("password2", "passwd1", "ssh_key", "privkey", "privKey", "secret_key_base", "jwt"),
        *("bearer", "dsn", "DATABASE_URL", "connectionString", "db_url"),
    ],
)
def test_password_shaped_keys_are_sensitive_by_default(key: str) -> None:
    assert redact_value({key: SECRET, "ok": 1}) == {key: "[REDACTED]", "ok": 1}


@pytest.mark.parametrize(
    "key",
    ["pass_count", "passed", "compass", "password_policy_url", "keyboard", "url", "database"],
)
def test_keys_that_only_contain_pass_are_kept(key: str) -> None:
    # Whole-key patterns: a key is sensitive when it *is* a password key, not when it contains one.
    assert redact_value({key: 3}) == {key: 3}


@pytest.mark.parametrize(
    "text",
    [
        f"connect with DB_PASSWORD={SECRET} now",
        f"send Authorization: Token {SECRET} now",
        f"send Authorization: Bearer {SECRET} now",
        f"the jwt {JWT} now",
        f"mysql_root_pwd: '{SECRET}' now",
    ],
)
def test_new_shapes_split_at_every_position_never_leak(text: str) -> None:
    for cut in range(1, len(text)):
        stream = TextStreamRedactor(Redactor(RedactionPolicy(scan_text=True)))
        shown = stream.feed(text[:cut]) + stream.feed(text[cut:]) + stream.flush()
        assert "CANARY" not in shown, (cut, shown)
        assert shown.endswith(" now")


def test_scan_text_policy_applies_the_same_rules_to_values() -> None:
    scanned = Redactor(RedactionPolicy(scan_text=True)).redact(
        {"note": f"Authorization: Bearer {SECRET}", "cmd": f"export DB_PWD={SECRET}"}
    )
    assert scanned == {
        "note": "Authorization: Bearer [REDACTED]",
        "cmd": "export DB_PWD=[REDACTED]",
    }
