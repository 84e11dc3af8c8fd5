"""Which keys are sensitive: the default patterns, key normalisation and the matcher.

The :class:`~actoviq.events.redaction.Redactor` caches the matcher's answers; everything here
is uncached and policy-driven.
"""

from __future__ import annotations

import re
from typing import Any, Final, Protocol, cast


class _KeyPolicy(Protocol):
    """The part of a ``RedactionPolicy`` the matcher reads."""

    @property
    def default_keys(self) -> bool: ...

    @property
    def additional_keys(self) -> Any: ...  # a tuple of str | re.Pattern (an attrs converter field)


__all__ = ["DEFAULT_SENSITIVE_KEY_PATTERNS", "SensitiveKeyMatcher", "normalize_key"]

DEFAULT_SENSITIVE_KEY_PATTERNS: Final[tuple[str, ...]] = (
    r"(.*_)?authorization",
    r"(.*_)?((api|access|refresh|auth|id|session|bearer|csrf|xsrf)_?)?token",
    r"(.*_)?(api|private|priv|secret|access|signing|encryption|master|ssh)_?key(_base)?",
    r"(.*_)?((client|shared|app|api)_?)?secret",
    r"(.*_)?(password|passwd|passphrase|passcode|pwd)\d*",
    r"(.*_)?(jwt|bearer)",
    r"dsn|(.*_)?(connection_?string|database_?url|db_?url)",
    r"(set_)?cookie",
    r"(.*_)?credentials?",
    r"(.*_)?signature",
    r"encrypted_?content",
    r"opaque(_?reasoning)?",
    r"stack(_?trace)?|traceback",
)
"""Whole-key patterns, matched case-insensitively against :func:`normalize_key` of each key.

They cover the runtime list of spec 03 §5.5 and the stricter surface list of §6.2, e.g.
``authorization``, ``proxy-authorization``, ``token``, ``apiToken``, ``x-api-key``, ``api_key``,
``openai_api_key``, ``aws_secret_access_key``, ``secret``, ``clientSecret``, ``password``,
``passwd``, ``pwd``, ``db_pwd``, ``password2``, ``ssh_key``, ``privkey``, ``jwt``, ``dsn``,
``database_url``, ``connection_string`` (they usually carry a password), ``cookie``,
``set-cookie``, ``credentials``, ``signature``, ``encrypted_content``.
Counters such as ``inputTokens`` or ``maxTokens`` do not match.
"""

_CAMEL_1 = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL_2 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_SEPARATORS = re.compile(r"[-\s.]+")


def normalize_key(key: str) -> str:
    """``"X-API-Key"`` → ``"x_api_key"``, ``"clientSecret"`` → ``"client_secret"``."""
    spaced = _CAMEL_2.sub(r"\1_\2", _CAMEL_1.sub(r"\1_\2", key))
    return _SEPARATORS.sub("_", spaced).lower()


class SensitiveKeyMatcher:
    """Decides whether a key is sensitive under a policy, without caching (the reference).

    :class:`Redactor` answers the same question through a bounded cache in front of this matcher.

    Example:
        >>> SensitiveKeyMatcher(RedactionPolicy()).matches("X-API-Key")
        True
    """

    __slots__ = ("_extra_exact", "_extra_patterns", "_key_re")

    def __init__(self, policy: _KeyPolicy) -> None:
        patterns = list(DEFAULT_SENSITIVE_KEY_PATTERNS) if policy.default_keys else []
        extra = cast(tuple[str | re.Pattern[str], ...], policy.additional_keys)
        self._key_re = (
            re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE) if patterns else None
        )
        self._extra_exact = frozenset(
            key.lower() for key in extra if isinstance(key, str)
        ) | frozenset(normalize_key(key) for key in extra if isinstance(key, str))
        self._extra_patterns = tuple(key for key in extra if isinstance(key, re.Pattern))

    def matches(self, key: str) -> bool:
        """True when a value stored under ``key`` must be replaced."""
        normalized = normalize_key(key)
        return (
            (self._key_re is not None and self._key_re.fullmatch(normalized) is not None)
            or key.lower() in self._extra_exact
            or normalized in self._extra_exact
            or any(
                pattern.fullmatch(key) is not None or pattern.fullmatch(normalized) is not None
                for pattern in self._extra_patterns
            )
        )
