"""Bridges between the legacy ``ModelApi`` and the provider v2 contract (spec 02 §4).

- :class:`LegacyModelApiProvider` wraps an old ``ModelApi`` (``create_message`` /
  ``stream_message``) as a :class:`~actoviq.providers.ModelProvider` (id ``"legacy"``,
  :data:`~actoviq.providers.LEGACY_CAPABILITIES`: no structured output, prompt caching or hosted
  tools; preflight runs before the legacy API is called).
- :class:`ModelProviderLegacyAdapter` wraps a provider v2 as an old ``ModelApi``.

The legacy shapes (:class:`LegacyModelRequest`, :class:`MessageParam`, :class:`Message`, content
blocks, :class:`LegacyUsage`) are ``TypedDict`` s over the Anthropic-like JSON dicts; the message
mapping itself is internal to the two classes (ADR-001: no public message adapter).

Known lossy cases (02 §4.4), each pinned by a test in ``test_providers_legacy.py``:

1. Documents, audio, artifact refs, handoff items, refusals and errors sent through the legacy
   provider become JSON-in-text blocks: the model sees a serialised canonical item.
2. Legacy ``document``, ``redacted_thinking`` and server tool blocks coming into a v2 provider
   become ``raw`` items owned by the *target* provider; they pass the ownership check and that
   provider is then sent an Anthropic-shaped block it may not understand.
3. ``to_legacy_message`` drops image/audio/document outputs, non-object raws, tool results, handoff
   and error items; structured output is visible only when the output has no text.
4. Usage: legacy ``input_tokens`` excludes the cache counts, canonical ``input_tokens`` includes
   them. Fixed here (02 §6.8 item 13): core → legacy subtracts cache reads and writes, so a
   core → legacy → core round trip keeps every token count (the reference counted the cache
   twice). ``reasoning_tokens`` and the audio counters are lost going to legacy.
5. ``stop_reason`` values outside the legacy set pass through (``content_filter``,
   ``cancelled``, ``unknown``...); ``stop_sequence`` is always ``None`` going out, and legacy stop
   reasons we do not know come back as finish reason ``unknown``.
6. Streaming to legacy: ``message_start`` carries a placeholder id (``msg_stream``) and model
   (``unknown``); streamed ``tool_use`` ids can differ from the final message's ids; all text
   deltas collapse into one text block and all reasoning into one thinking block.
7. Legacy ``top_p``, ``context_management`` and ``extra_tool_schemas`` are dropped going into v2;
   ``output_schema``, ``prompt_cache_key``, reasoning summary/budget, ``provider_options`` and
   ``output_modalities`` are dropped going out to legacy.
8. Opaque reasoning from one vendor (e.g. an OpenAI reasoning item) is placed into legacy content
   verbatim as a block.

Port decisions: unmapped legacy stream events are re-emitted as ``provider.event`` only with
``emit_provider_events=True`` (D4; the reference always emits them); a canonical image becomes
an ``{type: "image", source}`` block (the reference table shows the bare source) so that it
survives the round trip through :class:`ModelProviderLegacyAdapter`.
"""

from actoviq.providers.legacy.adapter import (
    LegacyMessageStream,
    ModelProviderLegacyAdapter,
    from_legacy_request,
    legacy_stop_reason,
    to_legacy_message,
)
from actoviq.providers.legacy.provider import (
    LEGACY_FINAL_EVENT,
    LegacyModelApiProvider,
    from_legacy_message,
    normalize_legacy_effort,
    to_legacy_message_param,
    to_legacy_request,
)
from actoviq.providers.legacy.shapes import (
    ContentBlock,
    DocumentBlock,
    LegacyModelRequest,
    LegacyTool,
    LegacyToolChoice,
    LegacyUsage,
    Message,
    MessageParam,
    MessageStreamEvent,
    ModelApi,
    ModelStreamHandle,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    core_usage_to_legacy,
    legacy_usage_to_core,
)

__all__ = [
    "LEGACY_FINAL_EVENT",
    "ContentBlock",
    "DocumentBlock",
    "LegacyMessageStream",
    "LegacyModelApiProvider",
    "LegacyModelRequest",
    "LegacyTool",
    "LegacyToolChoice",
    "LegacyUsage",
    "Message",
    "MessageParam",
    "MessageStreamEvent",
    "ModelApi",
    "ModelProviderLegacyAdapter",
    "ModelStreamHandle",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "core_usage_to_legacy",
    "from_legacy_message",
    "from_legacy_request",
    "legacy_stop_reason",
    "legacy_usage_to_core",
    "normalize_legacy_effort",
    "to_legacy_message",
    "to_legacy_message_param",
    "to_legacy_request",
]
