"""Surface redaction: the one engine of ``actoviq.events`` in its surface mode (spec 03 §6.2, D6).

There is no second engine here: :func:`surface_redactor` builds an ``actoviq.events.Redactor``
over ``RedactionPolicy.surface(...)`` (sensitive keys, text scanning for bearer tokens and key
formats, stack traces removed). Only the replacement and extra keys can be chosen, so a host
cannot weaken what its renderers see.

Example:
    >>> redact_surface_value({"note": "call with Bearer abc.def", "apiKey": "k"})
    {'note': 'call with Bearer [REDACTED]', 'apiKey': '[REDACTED]'}
"""

from __future__ import annotations

import re
from typing import Final

import attrs

from actoviq.core import JsonValue
from actoviq.events import DEFAULT_REPLACEMENT, RedactionPolicy, Redactor

__all__ = [
    "SurfaceRedaction",
    "redact_surface_text",
    "redact_surface_value",
    "surface_redactor",
]


def _keys(value: object) -> tuple[str | re.Pattern[str], ...]:
    return tuple(value)  # type: ignore[arg-type]


@attrs.frozen(kw_only=True, slots=True)
class SurfaceRedaction:
    """What a host may choose about surface redaction.

    Attributes:
        replacement: the text that replaces a secret.
        additional_sensitive_keys: extra keys (strings compared case-insensitively, or compiled
            patterns that must match the whole key).
    """

    replacement: str = DEFAULT_REPLACEMENT
    additional_sensitive_keys: tuple[str | re.Pattern[str], ...] = attrs.field(
        default=(), converter=_keys
    )

    def policy(self) -> RedactionPolicy:
        """The events-engine policy in surface mode."""
        return RedactionPolicy.surface(
            replacement=self.replacement, additional_keys=self.additional_sensitive_keys
        )


_DEFAULT: Final = Redactor(RedactionPolicy.surface())


def surface_redactor(options: SurfaceRedaction | None = None) -> Redactor:
    """A :class:`~actoviq.events.Redactor` in surface mode (the default one is shared)."""
    return (
        _DEFAULT if options is None or options == SurfaceRedaction() else Redactor(options.policy())
    )


def redact_surface_value(value: object, options: SurfaceRedaction | None = None) -> JsonValue:
    """A redacted strict-JSON clone of ``value`` (the source is never mutated).

    Raises:
        RedactionError: the value nests too deep or cannot be read (fail-closed).
    """
    return surface_redactor(options).redact(value)


def redact_surface_text(text: str, options: SurfaceRedaction | None = None) -> str:
    """``text`` with bearer tokens, key formats, secret assignments and stack frames removed."""
    return surface_redactor(options).redact_text(text)
