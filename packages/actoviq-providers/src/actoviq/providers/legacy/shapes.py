"""The legacy ModelApi shapes (Anthropic-like, spec 02 §4.1) and the usage conversions.

Legacy requests, messages and content blocks are plain JSON dicts open to extra keys, so they
are ``TypedDict`` s here: a legacy host keeps passing the dicts it already builds. Content blocks
and stream events are typed as ``Mapping[str, Any]`` (every block kind is open, and unknown kinds
are legal); the ``*Block`` TypedDicts document the kinds the bridges read and write.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal, NotRequired, Protocol, TypeAlias, TypedDict, runtime_checkable

from actoviq.core import AbortSignal, Usage
from actoviq.providers.mapping.anthropic import anthropic_usage

__all__ = [
    "ContentBlock",
    "DocumentBlock",
    "LegacyModelRequest",
    "LegacyTool",
    "LegacyToolChoice",
    "LegacyUsage",
    "Message",
    "MessageParam",
    "MessageStreamEvent",
    "ModelApi",
    "ModelStreamHandle",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "core_usage_to_legacy",
    "legacy_usage_to_core",
]

ContentBlock: TypeAlias = Mapping[str, Any]
"""One content block ``{type, ...}``; every kind is open to extra keys."""
MessageStreamEvent: TypeAlias = Mapping[str, Any]
"""One legacy stream event (``message_start``, ``content_block_delta``, ... or any other)."""


class TextBlock(TypedDict):
    """``{type: "text", text}``."""

    type: Literal["text"]
    text: str


class ThinkingBlock(TypedDict):
    """``{type: "thinking", thinking, signature?}``."""

    type: Literal["thinking"]
    thinking: str
    signature: NotRequired[str]


class ToolUseBlock(TypedDict):
    """``{type: "tool_use", id, name, input}``."""

    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


class DocumentBlock(TypedDict):
    """``{type: "document", source: {type?, media_type?, data?}}``."""

    type: Literal["document"]
    source: dict[str, Any]


class ToolResultBlock(TypedDict):
    """``{type: "tool_result", tool_use_id, content?, is_error?}``."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: NotRequired[str | list[ContentBlock]]
    is_error: NotRequired[bool]


class MessageParam(TypedDict):
    """One input message: a string or a list of content blocks."""

    role: Literal["user", "assistant"]
    content: str | Sequence[ContentBlock]


class LegacyUsage(TypedDict, total=False):
    """Legacy usage; ``input_tokens`` EXCLUDES the cache counts (Anthropic's convention)."""

    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int | None
    cache_read_input_tokens: int | None


class Message(TypedDict):
    """A legacy assistant message (the answer of ``create_message``)."""

    id: str
    type: Literal["message"]
    role: Literal["assistant"]
    model: str
    content: list[ContentBlock]
    stop_reason: str | None
    stop_sequence: NotRequired[str | None]
    usage: NotRequired[LegacyUsage]


class LegacyTool(TypedDict):
    """A legacy tool definition."""

    name: str
    input_schema: dict[str, Any]
    description: NotRequired[str]
    strict: NotRequired[bool]


class LegacyToolChoice(TypedDict):
    """``{type: "auto" | "any" | "tool" | "none", name?, disable_parallel_tool_use?}``."""

    type: str
    name: NotRequired[str]
    disable_parallel_tool_use: NotRequired[bool]


class LegacyModelRequest(TypedDict):
    """The legacy request (``model``, ``messages`` and ``max_tokens`` are required)."""

    model: str
    messages: Sequence[MessageParam]
    max_tokens: int
    system: NotRequired[str]
    temperature: NotRequired[float]
    top_p: NotRequired[float]
    tools: NotRequired[Sequence[LegacyTool]]
    tool_choice: NotRequired[LegacyToolChoice]
    metadata: NotRequired[dict[str, Any]]
    context_management: NotRequired[dict[str, Any]]
    stop_sequences: NotRequired[list[str]]
    extra_tool_schemas: NotRequired[list[dict[str, Any]]]
    effort: NotRequired[Literal["low", "medium", "high", "max"]]
    signal: NotRequired[AbortSignal]


@runtime_checkable
class ModelStreamHandle(Protocol):
    """A legacy stream: async-iterable events plus the settled final message."""

    def __aiter__(self) -> AsyncIterator[MessageStreamEvent]:
        """Iterate the stream events (once)."""
        ...

    async def final_message(self) -> Message:
        """The final message (drains the stream when nobody iterated it)."""
        ...


@runtime_checkable
class ModelApi(Protocol):
    """The legacy model API: one call and one stream."""

    async def create_message(self, request: LegacyModelRequest) -> Message:
        """Run one non-streaming call."""
        ...

    def stream_message(self, request: LegacyModelRequest) -> ModelStreamHandle:
        """Open a stream for one call."""
        ...


def legacy_usage_to_core(usage: object) -> Usage:
    """Legacy usage as canonical :class:`~actoviq.core.Usage` (input includes the cache counts).

    Example:
        >>> legacy_usage_to_core({"input_tokens": 2, "cache_read_input_tokens": 3}).input_tokens
        5
    """
    return anthropic_usage(usage)


def core_usage_to_legacy(usage: Usage) -> LegacyUsage:
    """Canonical usage as legacy usage, without counting the cache twice (02 §6.8 item 13).

    Canonical ``input_tokens`` already includes cache reads and writes; the legacy convention
    excludes them, so they are subtracted here. ``core → legacy → core`` keeps ``input_tokens``.
    Reasoning and audio counters have no legacy field and are lost.

    Example:
        >>> core_usage_to_legacy(Usage(input_tokens=10, cache_read_tokens=4))["input_tokens"]
        6
    """
    cache_read = int(usage.cache_read_tokens)
    cache_write = int(usage.cache_write_tokens)
    return {
        "input_tokens": max(0, int(usage.input_tokens) - cache_read - cache_write),
        "output_tokens": int(usage.output_tokens),
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }
