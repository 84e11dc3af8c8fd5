"""Token and cost accounting (spec 02 §1.7).

Cache and reasoning counters are subsets of input and output tokens, so they are never added to
``total_tokens`` again. ``input_tokens`` means all prompt tokens, cached ones included.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Final, TypeAlias

import attrs

from actoviq.core._json_rules import MAX_SAFE_INTEGER
from actoviq.core.errors import UsageValueError

__all__ = [
    "USAGE_FIELDS",
    "Usage",
    "UsageAccumulator",
    "UsageDelta",
    "empty_usage",
    "normalize_usage_delta",
]


# Wire names in declaration order: validation reports the first invalid one in this order.
USAGE_FIELDS: Final = (
    "requests",
    "inputTokens",
    "outputTokens",
    "totalTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
    "reasoningTokens",
    "audioInputTokens",
    "audioOutputTokens",
    "costUsd",
)
"""Wire names of the usage counters in declaration order.

Validation reports the first invalid counter in this order.
"""
_ATTRS: Final = {
    "requests": "requests",
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "totalTokens": "total_tokens",
    "cacheReadTokens": "cache_read_tokens",
    "cacheWriteTokens": "cache_write_tokens",
    "reasoningTokens": "reasoning_tokens",
    "audioInputTokens": "audio_input_tokens",
    "audioOutputTokens": "audio_output_tokens",
    "costUsd": "cost_usd",
}


_INT_ONLY: Final = {int}


@attrs.frozen(kw_only=True, slots=True)
class Usage:
    """Totals of one model call or of a whole run. Every field is >= 0.

    Example:
        >>> Usage(input_tokens=3, output_tokens=4, total_tokens=7).total_tokens
        7
    """

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    audio_input_tokens: int = 0
    audio_output_tokens: int = 0
    cost_usd: float = 0

    def __attrs_post_init__(self) -> None:
        # Same rules as normalize_usage_delta: a Usage is always valid once built.
        counters = (
            self.requests,
            self.input_tokens,
            self.output_tokens,
            self.total_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
            self.reasoning_tokens,
            self.audio_input_tokens,
            self.audio_output_tokens,
        )
        cost = self.cost_usd
        if (
            set(map(type, counters)) == _INT_ONLY
            and min(counters) >= 0
            and max(counters) <= MAX_SAFE_INTEGER
            and (cost.__class__ is int or cost.__class__ is float)
            and 0 <= cost < math.inf
        ):
            return  # every counter a safe int, the cost finite and >= 0: nothing to normalise
        for wire, attr in _ATTRS.items():
            value = getattr(self, attr)
            checked = _check(wire, value)
            if checked is not value:
                object.__setattr__(self, attr, checked)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            audio_input_tokens=self.audio_input_tokens + other.audio_input_tokens,
            audio_output_tokens=self.audio_output_tokens + other.audio_output_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
        )

    def to_json(self) -> dict[str, int | float]:
        """The wire form: every field, camelCase."""
        return {wire: getattr(self, attr) for wire, attr in _ATTRS.items()}


UsageDelta: TypeAlias = "Mapping[str, object] | Usage"
"""A partial usage report: a mapping with camelCase keys (absent keys mean "not reported")."""


def empty_usage() -> Usage:
    """Usage with every counter at zero."""
    return _EMPTY


def _check(name: str, value: object) -> int | float:
    if type(value) not in (int, float):  # bool, None, str… are present but invalid
        raise UsageValueError(
            f'Usage field "{name}" must be a finite, non-negative number.', field=name
        )
    number: int | float = value  # type: ignore[assignment]
    if not math.isfinite(number) or number < 0:
        raise UsageValueError(
            f'Usage field "{name}" must be a finite, non-negative number.', field=name
        )
    if name == "costUsd":
        return number
    if type(number) is float:
        if not number.is_integer():
            raise UsageValueError(
                f'Usage field "{name}" must be a non-negative safe integer.', field=name
            )
        number = int(number)
    if number > MAX_SAFE_INTEGER:
        raise UsageValueError(
            f'Usage field "{name}" must be a non-negative safe integer.', field=name
        )
    return number


_EMPTY: Final = Usage()


def normalize_usage_delta(delta: Mapping[str, object] | Usage) -> Usage:
    """Validate a partial report and fill in the rest.

    Missing counters become 0; an absent ``totalTokens`` becomes ``inputTokens + outputTokens``,
    an explicit one is kept as given.

    Raises:
        UsageValueError: a present field is negative, non-finite, fractional (for counters),
            above 2**53-1, or not a number (``True`` and ``None`` included).
    """
    if isinstance(delta, Usage):
        return delta  # validated when it was built
    mapping = delta
    values: dict[str, int | float] = {}
    for name in USAGE_FIELDS:
        if name in mapping:
            values[_ATTRS[name]] = _check(name, mapping[name])
    if "total_tokens" not in values:
        values["total_tokens"] = values.get("input_tokens", 0) + values.get("output_tokens", 0)
        if values["total_tokens"] > MAX_SAFE_INTEGER:
            raise UsageValueError(
                'Usage field "totalTokens" must be a non-negative safe integer.',
                field="totalTokens",
            )
    return Usage(**values)  # type: ignore[arg-type]


class UsageAccumulator:
    """Adds usage deltas field by field; :meth:`add` is atomic (a rejected delta changes nothing).

    Example:
        >>> acc = UsageAccumulator({"inputTokens": 1, "outputTokens": 2})
        >>> acc.add({"inputTokens": 4}).snapshot().total_tokens
        7
    """

    __slots__ = ("_total",)

    def __init__(
        self,
        initial: Mapping[str, object]
        | Usage
        | Iterable[Mapping[str, object] | Usage]
        | None = None,
    ) -> None:
        self._total = _EMPTY
        if initial is None:
            return
        # A Mapping is iterable too: test it first.
        if isinstance(initial, Mapping | Usage):
            self.add(initial)  # type: ignore[arg-type]
        else:
            self.add_all(initial)

    def add(self, delta: Mapping[str, object] | Usage) -> UsageAccumulator:
        """Validate and add one delta; returns self."""
        usage = normalize_usage_delta(delta)
        # Zero plus a (validated, frozen) Usage is that Usage: the first call of a run adds to
        # the empty total, so it is shared instead of rebuilt.
        self._total = usage if self._total is _EMPTY else self._total + usage
        return self

    def add_all(self, deltas: Iterable[Mapping[str, object] | Usage]) -> UsageAccumulator:
        """Add several deltas in order."""
        for delta in deltas:
            self.add(delta)
        return self

    def snapshot(self) -> Usage:
        """The current totals, as an immutable value."""
        return self._total

    def reset(self) -> None:
        """Back to :func:`empty_usage`."""
        self._total = _EMPTY
