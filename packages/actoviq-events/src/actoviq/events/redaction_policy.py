"""What to redact: :class:`RedactionPolicy` and the replacement text (decision D6).

The engine that applies a policy is :class:`~actoviq.events.redaction.Redactor`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

import attrs

from actoviq.core import MAX_WIRE_DEPTH
from actoviq.events.errors import EventValidationError

__all__ = ["DEFAULT_REPLACEMENT", "RedactionPolicy"]

DEFAULT_REPLACEMENT: Final = "[REDACTED]"
"""The text that replaces a redacted value."""


def _check_depth(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not int or value < 1:
        raise EventValidationError(
            f"RedactionPolicy.max_depth must be a positive int, got {value!r}."
        )


def _check_replacement(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str):
        raise EventValidationError(
            f"RedactionPolicy.replacement must be a str, got {type(value).__name__}."
        )


def _check_bool(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not bool:
        raise EventValidationError(
            f"RedactionPolicy.{attribute.name} must be a bool, got {type(value).__name__}."
        )


def _key_tuple(
    value: str | re.Pattern[str] | Iterable[str | re.Pattern[str]],
) -> tuple[str | re.Pattern[str], ...]:
    # One key given bare ("ssn") is one key, not its letters ("s", "s", "n").
    if isinstance(value, str | re.Pattern):
        return (value,)
    try:
        return tuple(value)
    except TypeError:
        raise EventValidationError(
            f"RedactionPolicy.additional_keys must be keys or patterns, got {value!r:.60}."
        ) from None


def _check_keys(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    for key in value:  # type: ignore[attr-defined]
        if isinstance(key, str):
            if not key.strip():
                raise EventValidationError("Additional sensitive keys must not be empty.")
        elif not isinstance(key, re.Pattern):
            raise EventValidationError(
                f"Additional sensitive keys must be strings or compiled patterns, got {key!r}."
            )


@attrs.frozen(kw_only=True, slots=True)
class RedactionPolicy:
    """How to redact.

    Attributes:
        replacement: the text that replaces a secret.
        additional_keys: extra sensitive keys: strings compared case-insensitively to the key
            (raw or normalised) or compiled regexes that must fully match it.
        scan_text: also scan every string value for secret shapes (opt-in).
        strip_stack_traces: the stricter *surface mode* (spec 03 §6.2): text scanning also
            removes stack-trace frames together with the file paths they carry. Takes effect
            in :meth:`Redactor.redact_text` and, with ``scan_text``, in every string value. Use
            :meth:`RedactionPolicy.surface` for the whole surface policy.
        max_depth: containers nested deeper than this make redaction fail (fail-closed). The
            default, ``MAX_WIRE_DEPTH`` (576), delivers every strict-JSON document: event data
            carrying an item whose values sit at ``MAX_JSON_DEPTH``.
        default_keys: apply :data:`DEFAULT_SENSITIVE_KEY_PATTERNS` (turn off only to replace
            them entirely with ``additional_keys``).
        raw_argument_deltas: deliver streamed tool-call argument fragments as they came
            (``model.tool_call.delta``'s ``argumentsDelta``, raw provider argument pieces).
            Off by default: a fragment is JSON text a key-based engine cannot redact, so it is
            withheld (``argumentsLength`` instead; the whole arguments, parsed and redacted, on
            the event that completes them). Whole argument JSON is redacted by key either way.
    """

    replacement: str = attrs.field(default=DEFAULT_REPLACEMENT, validator=_check_replacement)
    additional_keys: tuple[str | re.Pattern[str], ...] = attrs.field(
        default=(), converter=_key_tuple, validator=_check_keys
    )
    scan_text: bool = attrs.field(default=False, validator=_check_bool)
    max_depth: int = attrs.field(default=MAX_WIRE_DEPTH, validator=_check_depth)
    default_keys: bool = attrs.field(default=True, validator=_check_bool)
    strip_stack_traces: bool = attrs.field(default=False, validator=_check_bool)
    raw_argument_deltas: bool = attrs.field(default=False, validator=_check_bool)

    @classmethod
    def surface(
        cls,
        *,
        replacement: str = DEFAULT_REPLACEMENT,
        additional_keys: tuple[str | re.Pattern[str], ...] = (),
    ) -> RedactionPolicy:
        """The stricter policy for what hosts render (spec 03 §6.2): keys, text, stack traces.

        Key-based redaction with the default keys (they include the surface list: ``token``,
        ``x-api-key``, ``signature``, ``stack``, ``opaque``, ``encrypted_content``…), text
        scanning on (bearer/basic credentials, ``key=value`` assignments, secret URL query
        parameters, well-known key formats, cloud keys, URL user-info) and stack-trace removal.
        Only the replacement and extra keys can be chosen: the surface mode cannot be weakened.

        Example:
            >>> from actoviq.events import Redactor
            >>> Redactor(RedactionPolicy.surface()).redact({"note": "Bearer abc.def"})
            {'note': 'Bearer [REDACTED]'}
        """
        return cls(
            replacement=replacement,
            additional_keys=additional_keys,
            scan_text=True,
            strip_stack_traces=True,
            max_depth=64,  # what a host renders needs no deeper values (fails closed beyond)
        )
