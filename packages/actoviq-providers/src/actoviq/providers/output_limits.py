"""Output-token limits for the API that requires one on every request (Anthropic Messages).

A request carries an output-token limit only when the caller sets ``max_output_tokens``. The
Anthropic Messages API refuses a request without ``max_tokens``, so for it the adapter sends a
per-model default: the model's maximum output from :data:`ANTHROPIC_MAX_OUTPUT_TOKENS` (so a
request without a limit is cut only where the model itself stops, as on the OpenAI APIs), and
:data:`ANTHROPIC_FALLBACK_MAX_TOKENS` (4,096, the smallest maximum of any Claude model, so every
model accepts it) for a model the table does not know. Add or correct entries with
``AnthropicProvider(output_token_limits={...})``.

Keys are model-name prefixes, matched at a ``-``/``@`` boundary, the longest key winning
(``claude-opus-4`` covers ``claude-opus-4-1-20250805``, ``claude-opus-4-5`` overrides it for 4.5);
Bedrock and Vertex spellings (``us.anthropic.claude-…-v1:0``, ``claude-…@20241022``) match too.
The key ``"*"`` in a caller's table replaces the fallback.

Example:
    >>> anthropic_max_tokens("claude-3-5-haiku-latest")
    8192
    >>> anthropic_max_tokens("claude-unknown-model")
    4096
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = [
    "ANTHROPIC_FALLBACK_MAX_TOKENS",
    "ANTHROPIC_MAX_OUTPUT_TOKENS",
    "anthropic_max_tokens",
    "model_output_limit",
]

ANTHROPIC_FALLBACK_MAX_TOKENS: Final = 4_096
"""``max_tokens`` for a model the table does not know (every Claude model accepts it)."""

ANTHROPIC_MAX_OUTPUT_TOKENS: Final[Mapping[str, int]] = MappingProxyType(
    {
        "claude-3-haiku": 4_096,
        "claude-3-sonnet": 4_096,
        "claude-3-opus": 4_096,
        "claude-3-5-haiku": 8_192,
        "claude-3-5-sonnet": 8_192,
        "claude-3-7-sonnet": 64_000,
        "claude-sonnet-4": 64_000,
        "claude-sonnet-4-5": 64_000,
        "claude-sonnet-4-6": 128_000,
        "claude-haiku-4-5": 64_000,
        "claude-opus-4": 32_000,
        "claude-opus-4-1": 32_000,
        "claude-opus-4-5": 64_000,
        "claude-opus-4-6": 128_000,
        "claude-opus-4-7": 128_000,
        "claude-opus-4-8": 128_000,
    }
)
"""The maximum output tokens of each Claude model family (Anthropic's model overview)."""


def _base_name(model_id: str) -> str:
    """``model_id`` without a Bedrock ``[region.]anthropic.`` prefix."""
    marker = "anthropic."
    at = model_id.find(marker)
    return model_id[at + len(marker) :] if at >= 0 else model_id


def model_output_limit(model_id: str, table: Mapping[str, int]) -> int | None:
    """The entry of ``table`` for ``model_id`` (longest matching prefix), or None."""
    name = _base_name(model_id)
    best: tuple[int, int] | None = None
    for key, limit in table.items():
        if key == "*" or not name.startswith(key):
            continue
        if len(name) > len(key) and name[len(key)] not in "-@:":
            continue
        if best is None or len(key) > best[0]:
            best = (len(key), limit)
    return None if best is None else best[1]


def anthropic_max_tokens(
    model_id: str,
    overrides: Mapping[str, int] | None = None,
    *,
    budget_tokens: int | None = None,
) -> int:
    """The ``max_tokens`` to send for ``model_id`` when the request sets no limit.

    Args:
        model_id: the Anthropic model name.
        overrides: entries over :data:`ANTHROPIC_MAX_OUTPUT_TOKENS` (``"*"`` replaces the
            fallback).
        budget_tokens: a thinking budget; ``max_tokens`` must exceed it, so a fallback at or
            below the budget is raised to ``budget + 4096`` (never above a known maximum).
    """
    table: Mapping[str, int] = (
        ANTHROPIC_MAX_OUTPUT_TOKENS
        if not overrides
        else {**ANTHROPIC_MAX_OUTPUT_TOKENS, **overrides}
    )
    maximum = model_output_limit(model_id, table)
    fallback = (overrides or {}).get("*", ANTHROPIC_FALLBACK_MAX_TOKENS)
    limit = maximum if maximum is not None else fallback
    if budget_tokens is not None and limit <= budget_tokens:
        raised = budget_tokens + ANTHROPIC_FALLBACK_MAX_TOKENS
        limit = raised if maximum is None else min(raised, maximum)
    return limit
