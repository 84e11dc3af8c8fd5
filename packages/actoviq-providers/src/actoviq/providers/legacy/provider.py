"""``LegacyModelApiProvider``: an old ``ModelApi`` seen as a provider v2 (spec 02 §4.2)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Final, cast

from actoviq.core import (
    Base64Source,
    CanonicalItem,
    FileSource,
    ImageItem,
    ProviderResponseError,
    RawItem,
    ReasoningItem,
    StructuredItem,
    TextItem,
    ToolCallItem,
    ToolResultItem,
    UrlSource,
    item_to_json,
)
from actoviq.providers._sdk_adapter import run_abortable
from actoviq.providers.base import BaseModelProvider, PreparedCall
from actoviq.providers.capabilities import (
    LEGACY_CAPABILITIES,
    CapabilitiesSource,
    CapabilityResolver,
)
from actoviq.providers.legacy.shapes import (
    ContentBlock,
    LegacyModelRequest,
    LegacyTool,
    LegacyToolChoice,
    Message,
    MessageParam,
    ModelApi,
    legacy_usage_to_core,
)
from actoviq.providers.mapping._common import (
    ANTHROPIC_EFFORTS,
    BaseStreamMapper,
    MappingOptions,
    as_dict,
    as_index,
    dumps_js,
    finish_reason,
    json_value,
    normalize_effort,
    raw_output,
    refusal_output,
    require_object,
    response_from,
    stringify_tool_value,
    text_output,
    tool_call_output,
)
from actoviq.providers.mapping.anthropic import build_tool_choice
from actoviq.providers.stream import StreamMapper
from actoviq.providers.types import (
    ModelCallContext,
    ModelRequest,
    ModelResponse,
    ModelStreamEvent,
    ProviderEvent,
    ReasoningDelta,
    ResolvedModel,
    ResponseCompleted,
    TextDelta,
    ToolCallDelta,
    UsageReport,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "LEGACY_FINAL_EVENT",
    "LegacyModelApiProvider",
    "LegacyStreamMapper",
    "from_legacy_message",
    "normalize_legacy_effort",
    "to_legacy_message_param",
    "to_legacy_request",
]

DEFAULT_MAX_TOKENS: Final = 4096
LEGACY_FINAL_EVENT: Final = "__legacy_final"
"""The synthetic event carrying ``final_message()`` after the legacy iterator ends."""


def normalize_legacy_effort(effort: str) -> str:
    """``none``/``minimal`` → ``low``, ``xhigh`` → ``high``; ``low``..``max`` pass through.

    The same rule as every adapter (:func:`~actoviq.providers.mapping._common.normalize_effort`)
    over the legacy (Anthropic) effort set.
    """
    return normalize_effort(effort, ANTHROPIC_EFFORTS)


def _image_source(item: ImageItem) -> dict[str, Any]:
    source = item.source
    if isinstance(source, UrlSource):
        return {"type": "url", "url": source.url}
    if isinstance(source, FileSource):
        return {"type": "file", "file_id": source.file_id}
    assert isinstance(source, Base64Source)
    return {"type": "base64", "media_type": source.media_type, "data": source.data}


def _legacy_block(item: CanonicalItem) -> ContentBlock:
    match item:
        case TextItem(text=text):
            return {"type": "text", "text": text}
        case ImageItem():
            # The reference table lists the bare source; we wrap it in an image block so that
            # ModelProviderLegacyAdapter (and Anthropic-shaped ModelApis) read it back as an image.
            return {"type": "image", "source": _image_source(item)}
        case ToolCallItem(id=call_id, name=name, input=tool_input):
            return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}
        case ToolResultItem():
            return {
                "type": "tool_result",
                "tool_use_id": item.call_id,
                "content": stringify_tool_value(item.output),
                "is_error": item.status == "error",
            }
        case ReasoningItem(opaque=opaque, summary=summary):
            if isinstance(opaque, dict):
                return dict(opaque)  # lossy case 8: another vendor's opaque goes in verbatim
            thinking = summary if summary is not None else opaque
            return {"type": "thinking", "thinking": "" if thinking is None else str(thinking)}
        case StructuredItem(value=value):
            return {"type": "text", "text": dumps_js(value)}
        case RawItem(value=value):
            if isinstance(value, dict):
                return dict(value)
            return {"type": "text", "text": value if isinstance(value, str) else dumps_js(value)}
        case _:
            # Lossy case 1: documents, audio, artifact refs, handoffs, refusals and errors.
            return {"type": "text", "text": dumps_js(item_to_json(item))}


def to_legacy_message_param(item: CanonicalItem) -> MessageParam:
    """One non-system canonical item as one legacy message with one block."""
    assistant = getattr(item, "role", None) == "assistant" or isinstance(
        item, ToolCallItem | ReasoningItem
    )
    return {"role": "assistant" if assistant else "user", "content": [_legacy_block(item)]}


def to_legacy_request(
    request: ModelRequest, model_id: str, context: ModelCallContext | None = None
) -> LegacyModelRequest:
    """The legacy request for ``request`` (drops what legacy cannot say; lossy case 7)."""
    system = [i.text for i in request.input if isinstance(i, TextItem) and i.role == "system"]
    legacy: LegacyModelRequest = {
        "model": model_id,
        "messages": [
            to_legacy_message_param(item)
            for item in request.input
            if not (isinstance(item, TextItem) and item.role == "system")
        ],
        "max_tokens": request.max_output_tokens or DEFAULT_MAX_TOKENS,
    }
    if system:
        legacy["system"] = "\n\n".join(system)
    if request.temperature is not None:
        legacy["temperature"] = request.temperature
    if request.tools is not None:
        tools: list[LegacyTool] = []
        for tool in request.tools:
            entry: LegacyTool = {"name": tool.name, "input_schema": dict(tool.input_schema)}
            if tool.description is not None:
                entry["description"] = tool.description
            if tool.strict is not None:
                entry["strict"] = tool.strict
            tools.append(entry)
        legacy["tools"] = tools
    choice = build_tool_choice(request)  # the legacy shape is the Messages one
    if choice is not None:
        legacy["tool_choice"] = cast(LegacyToolChoice, choice)
    if request.metadata is not None:
        legacy["metadata"] = dict(request.metadata)
    if request.stop_sequences is not None:
        legacy["stop_sequences"] = list(request.stop_sequences)
    effort = request.reasoning.effort if request.reasoning is not None else None
    if effort is not None:
        legacy["effort"] = cast(Any, normalize_legacy_effort(effort))
    if context is not None and context.signal is not None:
        legacy["signal"] = context.signal
    return legacy


def _from_legacy_block(block_entry: object, provider_id: str) -> CanonicalItem:
    block = as_dict(block_entry)
    if block is None:
        return raw_output(provider_id, block_entry)
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return text_output(block["text"])
    if kind == "tool_use":
        return tool_call_output(
            str(block.get("id") or ""), str(block.get("name") or ""), block.get("input") or {}
        )
    if kind == "thinking":
        thinking = block.get("thinking")
        return ReasoningItem(
            provider=provider_id,
            opaque=json_value(block),
            summary=thinking if isinstance(thinking, str) else None,
        )
    if kind == "refusal":
        return refusal_output(str(block.get("explanation") or "Refused."), block)
    # redacted_thinking, server tool blocks, citations...: always kept (preserve is ignored).
    return raw_output(provider_id, block)


def from_legacy_message(
    message: Mapping[str, Any],
    model: ResolvedModel,
    request: ModelRequest,
    options: MappingOptions,
) -> ModelResponse:
    """A legacy message as a :class:`ModelResponse`."""
    data = require_object(
        message, options.provider_id, "Legacy ModelApi returned a non-object message."
    )
    output: list[CanonicalItem] = [
        _from_legacy_block(block, options.provider_id)
        for block in cast(list[Any], data.get("content") or [])
    ]
    return response_from(
        data,
        fallback_id="msg_legacy",
        model=model,
        request=request,
        output=output,
        finish=finish_reason(data.get("stop_reason")),
        usage=legacy_usage_to_core(data.get("usage")),
        options=options,
    )


class LegacyStreamMapper(BaseStreamMapper):
    """Maps legacy stream events (plus the synthetic final event) to stream events."""

    def map(self, event: Any) -> list[ModelStreamEvent]:
        """Events for one legacy stream event."""
        data = as_dict(event)
        if data is None:
            return []
        kind = data.get("type")
        if kind == LEGACY_FINAL_EVENT:
            message = cast(Mapping[str, Any], data.get("message"))
            return [
                ResponseCompleted(
                    response=from_legacy_message(message, self._model, self._request, self._options)
                )
            ]
        output_index = as_index(data.get("index"))
        delta = as_dict(data.get("delta")) or {}
        delta_type = delta.get("type")
        if kind == "content_block_delta":
            if delta_type == "text_delta" and isinstance(delta.get("text"), str):
                return [TextDelta(delta=delta["text"], output_index=output_index)]
            if delta_type == "thinking_delta":
                thinking = delta.get("thinking")
                return [
                    ReasoningDelta(
                        delta=thinking if isinstance(thinking, str) else None,
                        output_index=output_index,
                    )
                ]
            if delta_type == "input_json_delta" and isinstance(delta.get("partial_json"), str):
                return [
                    ToolCallDelta(
                        call_id=f"legacy_tool_{output_index or 0}",
                        arguments_delta=delta["partial_json"],
                        output_index=output_index,
                    )
                ]
        if kind == "message_delta" and as_dict(data.get("usage")) is not None:
            return [UsageReport(usage=legacy_usage_to_core(data["usage"]))]
        if self._options.emit_provider_events:
            return [ProviderEvent(provider=self._options.provider_id, event=json_value(data))]
        return []

    def finalize(self) -> ModelResponse:
        """Legacy streams always end with the final message; reaching here is an error."""
        raise ProviderResponseError(
            "Legacy ModelApi stream ended without a final message.",
            provider_id=self._options.provider_id,
        )


class LegacyModelApiProvider(BaseModelProvider):
    """An old ``ModelApi`` (``create_message`` / ``stream_message``) as a provider v2.

    Preflight runs before the legacy API is called (e.g. an ``output_schema`` raises
    ``CAPABILITY_ERROR``: the legacy capabilities have no structured output, prompt caching or
    hosted tools).

    Args:
        model_api: the legacy API.
        id: provider instance id (default ``"legacy"``).
        capabilities: declared capabilities (default :data:`LEGACY_CAPABILITIES`).
        capability_resolver: applied last.
        include_raw_response: keep the legacy message on ``raw_response``.
        emit_provider_events: re-emit unmapped legacy stream events as ``provider.event``
            (D4: opt-in; the reference always emits them).

    Example:
        >>> provider = LegacyModelApiProvider(model_api=my_legacy_api)  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        model_api: ModelApi,
        id: str = "legacy",
        capabilities: CapabilitiesSource | None = None,
        capability_resolver: CapabilityResolver | None = None,
        include_raw_response: bool = False,
        emit_provider_events: bool = False,
    ) -> None:
        super().__init__(
            id=id,
            default_capabilities=LEGACY_CAPABILITIES,
            capabilities=capabilities,
            capability_resolver=capability_resolver,
        )
        self._model_api = model_api
        self._options = MappingOptions(
            provider_id=id,
            include_raw_response=include_raw_response,
            emit_provider_events=emit_provider_events,
        )

    @property
    def model_api(self) -> ModelApi:
        """The wrapped legacy API."""
        return self._model_api

    async def _generate(self, prepared: PreparedCall, context: ModelCallContext) -> ModelResponse:
        legacy = to_legacy_request(prepared.request, prepared.model.model_id, context)
        message = await run_abortable(self._model_api.create_message(legacy), context.signal)
        return from_legacy_message(
            cast(Mapping[str, Any], message), prepared.model, prepared.request, self._options
        )

    def _stream_mapper(self, prepared: PreparedCall) -> StreamMapper:
        return LegacyStreamMapper(prepared.model, prepared.request, self._options)

    async def _open_stream(
        self, prepared: PreparedCall, context: ModelCallContext
    ) -> AsyncIterator[Any]:
        legacy = to_legacy_request(prepared.request, prepared.model.model_id, context)
        return _with_final(self._model_api.stream_message(legacy))


async def _with_final(handle: Any) -> AsyncIterator[Any]:
    iterator = handle.__aiter__()
    try:
        async for event in iterator:
            yield event
        message: Message = await handle.final_message()
        yield {"type": LEGACY_FINAL_EVENT, "message": message}
    finally:
        closer = getattr(iterator, "aclose", None)
        if closer is not None:
            await closer()
