"""Anthropic Messages mapping (spec 02 §3.3), pure functions over plain dicts.

Fixes over the reference (D4, 02 §6.8 item 3): a streamed tool with no argument deltas gets its
start ``input`` (``{}`` when empty), never ``{"raw": ""}``; a start input is not pre-seeded
before deltas; ``redacted_thinking`` blocks are kept verbatim (``data`` included);
``stop_sequence`` maps to ``stop``; an ``error`` stream event raises. Unsupported canonical
items are refused before the network; provider events are re-emitted only on opt-in (item 14).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from actoviq.core import (
    UNSET,
    Base64Source,
    CanonicalItem,
    DocumentItem,
    ErrorItem,
    FileSource,
    ImageItem,
    RawItem,
    ReasoningItem,
    RefusalItem,
    StructuredItem,
    TextItem,
    ToolCallItem,
    ToolResultItem,
    Unset,
    UrlSource,
    Usage,
)
from actoviq.providers.mapping._common import (
    ANTHROPIC_EFFORTS,
    BaseStreamMapper,
    MappingOptions,
    as_dict,
    as_index,
    compact,
    dumps_js,
    finish_reason,
    json_value,
    merge_provider_options,
    normalize_effort,
    raw_output,
    refusal_output,
    require_object,
    response_from,
    stream_error,
    stringify_tool_value,
    text_output,
    tool_call_output,
    unsupported,
)
from actoviq.providers.output_limits import ANTHROPIC_FALLBACK_MAX_TOKENS, anthropic_max_tokens
from actoviq.providers.types import (
    FinishReason,
    ModelRequest,
    ModelResponse,
    ModelStreamEvent,
    ReasoningDelta,
    ResolvedModel,
    ResponseCompleted,
    TextDelta,
    ToolCallDelta,
    ToolChoice,
    UsageReport,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "RESERVED_KEYS",
    "AnthropicStreamMapper",
    "anthropic_usage",
    "build_request_body",
    "build_tool_choice",
    "parse_response",
]

DEFAULT_MAX_TOKENS: Final = ANTHROPIC_FALLBACK_MAX_TOKENS
"""``max_tokens`` for a model the output-limit table does not know (see ``output_limits``)."""
RESERVED_KEYS: Final = frozenset(
    [
        "model",
        "system",
        "messages",
        "max_tokens",
        "temperature",
        "stop_sequences",
        "tools",
        "tool_choice",
        "output_config",
        "thinking",
        "metadata",
        "stream",
    ]
)


def _source(source: UrlSource | Base64Source | FileSource, default_media: str) -> dict[str, Any]:
    if isinstance(source, UrlSource):
        return {"type": "url", "url": source.url}
    if isinstance(source, FileSource):
        return {"type": "file", "file_id": source.file_id}
    return {"type": "base64", "media_type": source.media_type or default_media, "data": source.data}


def map_message(item: CanonicalItem, options: MappingOptions, model: str) -> dict[str, Any]:
    """One non-system canonical item as one Anthropic message (or a typed refusal)."""
    match item:
        case TextItem(role=role, text=text):
            return {
                "role": "assistant" if role == "assistant" else "user",
                "content": [{"type": "text", "text": text}],
            }
        case ImageItem():
            if item.role == "assistant":
                raise unsupported(item, options.provider_id, model, "Images must be user input.")
            return {
                "role": "user",
                "content": [{"type": "image", "source": _source(item.source, "image/png")}],
            }
        case DocumentItem():
            block = {"type": "document", "source": _source(item.source, "application/pdf")}
            if item.name is not None:
                block["title"] = item.name  # 02 §6.8 item 8
            return {"role": "user", "content": [block]}
        case ToolCallItem():
            block = {"type": "tool_use", "id": item.id, "name": item.name, "input": item.input}
            return {"role": "assistant", "content": [block]}
        case ToolResultItem():
            block = {
                "type": "tool_result",
                "tool_use_id": item.call_id,
                "content": stringify_tool_value(item.output),
                "is_error": item.status == "error",
            }
            return {"role": "user", "content": [block]}
        case ReasoningItem(opaque=opaque):
            if isinstance(opaque, dict):
                return {"role": "assistant", "content": [dict(opaque)]}
            thinking = "" if opaque is None else str(opaque)
            return {"role": "assistant", "content": [{"type": "thinking", "thinking": thinking}]}
        case RawItem(value=value):
            if isinstance(value, dict) and "role" in value:
                return dict(value)
            return {"role": "assistant", "content": [value]}
        case StructuredItem(value=value):
            return {"role": "assistant", "content": [{"type": "text", "text": dumps_js(value)}]}
        case RefusalItem(message=message):
            return {"role": "assistant", "content": [{"type": "text", "text": message}]}
        case ErrorItem(code=code, message=message):
            text = f"[{code or 'ERROR'}] {message}"
            return {"role": "user", "content": [{"type": "text", "text": text}]}
        case _:
            raise unsupported(item, options.provider_id, model)


def build_tool_choice(request: ModelRequest) -> dict[str, Any] | None:
    """The Messages ``tool_choice`` (also the legacy one), or None when the request sets none."""
    policy, parallel = request.tool_policy, request.parallel_tool_calls
    if policy is None and parallel is None:
        return None
    disable = None if parallel is None else not parallel
    if isinstance(policy, ToolChoice):
        return compact(type="tool", name=policy.name, disable_parallel_tool_use=disable)
    kind = {"none": "none", "required": "any"}.get(policy or "auto", "auto")
    return compact(type=kind, disable_parallel_tool_use=disable)


def _metadata(request: ModelRequest) -> dict[str, Any] | None:
    """Only a string ``metadata.user_id``: the one key Anthropic accepts (02 §6.8 item 6).

    Other keys are not forwarded; use ``provider_options`` for anything else the API adds.
    """
    user_id = (request.metadata or {}).get("user_id")
    return {"user_id": user_id} if isinstance(user_id, str) else None


def build_request_body(
    request: ModelRequest,
    model_id: str,
    options: MappingOptions,
    *,
    stream: bool = False,
    output_token_limits: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The ``POST /v1/messages`` body for ``request`` (raises before any network call).

    The API requires ``max_tokens``: the request's ``max_output_tokens`` when set, else the
    model's maximum from :func:`~actoviq.providers.output_limits.anthropic_max_tokens` (with
    ``output_token_limits`` over the built-in table). ``tool_choice`` goes only with tools.
    """
    system_texts = [
        item.text for item in request.input if isinstance(item, TextItem) and item.role == "system"
    ]
    messages = [
        map_message(item, options, model_id)
        for item in request.input
        if not (isinstance(item, TextItem) and item.role == "system")
        # A non-object opaque would become an unsigned thinking block, which the API rejects:
        # such reasoning is dropped (02 §6.8 item 10).
        and not (isinstance(item, ReasoningItem) and not isinstance(item.opaque, dict))
    ]
    system: Any = "\n\n".join(system_texts) if system_texts else None
    if request.prompt_cache_key:
        if system is not None:
            system = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        elif messages:
            last = messages[-1]
            content = last.get("content")
            if isinstance(content, list) and content and isinstance(content[-1], dict):
                blocks = list(cast(list[Any], content))
                blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
                messages[-1] = {**last, "content": blocks}
    tools = None
    if request.tools:
        tools = [
            {
                **(tool.provider_options or {}),
                **compact(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.input_schema,
                    strict=tool.strict,
                ),
            }
            for tool in request.tools
        ]
    reasoning = request.reasoning
    schema = request.output_schema
    output_config = None
    effort = reasoning.effort if reasoning is not None else None
    if schema is not None or effort is not None:
        output_config = compact(
            effort=normalize_effort(effort, ANTHROPIC_EFFORTS) if effort is not None else None,
            format={"type": "json_schema", "schema": schema.schema} if schema else None,
        )
    thinking = None
    budget = reasoning.budget_tokens if reasoning is not None else None
    if budget is not None:
        thinking = {"type": "enabled", "budget_tokens": budget}
    max_tokens = request.max_output_tokens
    if max_tokens is None:
        max_tokens = anthropic_max_tokens(model_id, output_token_limits, budget_tokens=budget)
    body = compact(
        model=model_id,
        system=system,
        messages=messages,
        max_tokens=max_tokens,
        temperature=request.temperature,
        top_p=request.top_p,
        stop_sequences=list(request.stop_sequences) if request.stop_sequences is not None else None,
        tools=tools,
        tool_choice=build_tool_choice(request) if tools else None,
        output_config=output_config,
        thinking=thinking,
        metadata=_metadata(request),
    )
    body["stream"] = stream
    return merge_provider_options(request, options.provider_id, RESERVED_KEYS, body)


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return 0
    return int(value)


def anthropic_usage(raw: object) -> Usage:
    """Anthropic usage; ``input_tokens`` includes cache reads and writes (02 §3.3.7)."""
    data = as_dict(raw) or {}
    cache_read = _int(data, "cache_read_input_tokens")
    cache_write = _int(data, "cache_creation_input_tokens")
    tokens_in = _int(data, "input_tokens") + cache_read + cache_write
    tokens_out = _int(data, "output_tokens")
    return Usage(
        requests=1,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        total_tokens=tokens_in + tokens_out,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def _map_block(entry: object, options: MappingOptions) -> list[CanonicalItem]:
    block = as_dict(entry)
    keep = options.preserve_provider_items
    if block is None:
        return [raw_output(options.provider_id, entry)] if keep else []
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return [text_output(block["text"])]
    if kind == "tool_use":
        item_input = block.get("input")
        return [
            tool_call_output(
                str(block.get("id") or ""), str(block.get("name") or ""), item_input or {}
            )
        ]
    if kind in ("thinking", "redacted_thinking"):
        thinking = block.get("thinking")
        return [
            ReasoningItem(
                provider=options.provider_id,
                opaque=json_value(block),
                summary=thinking if isinstance(thinking, str) and thinking else None,
            )
        ]
    if kind == "refusal":
        message = block.get("explanation") or block.get("text") or "Refused."
        return [refusal_output(str(message), block)]
    return [raw_output(options.provider_id, block)] if keep else []


def parse_response(
    raw: object, model: ResolvedModel, request: ModelRequest, options: MappingOptions
) -> ModelResponse:
    """An Anthropic ``message`` object as a :class:`ModelResponse`."""
    data = require_object(
        raw, options.provider_id, "Anthropic transport returned a non-object response."
    )
    output: list[CanonicalItem] = []
    for entry in cast(list[Any], data.get("content") or []):
        output.extend(_map_block(entry, options))
    if data.get("stop_reason") == "refusal" and not any(
        isinstance(item, RefusalItem) for item in output
    ):
        output.append(refusal_output("The provider refused the request.", data.get("stop_details")))
    return response_from(
        data,
        fallback_id="msg_unknown",
        model=model,
        request=request,
        output=output,
        finish=finish_reason(data.get("stop_reason")),
        usage=anthropic_usage(data["usage"]) if as_dict(data.get("usage")) is not None else UNSET,
        options=options,
    )


class AnthropicStreamMapper(BaseStreamMapper):
    """Maps Messages stream events; assembles content blocks by index.

    ``message_stop`` (or a ``message_delta`` carrying the ``stop_reason``, or a whole ``message``)
    ends a stream; one that ends before it raises
    :class:`~actoviq.providers.errors.ProviderStreamError` (decision D10).
    """

    def __init__(self, model: ResolvedModel, request: ModelRequest, options: MappingOptions):
        super().__init__(model, request, options)
        self._id: str | None = None
        self._usage: Usage | Unset = UNSET
        self._raw_usage: dict[str, int] = {}
        self._finish: FinishReason | None = None
        self._blocks: dict[int, dict[str, Any]] = {}

    def _map_event(self, event: Any) -> list[ModelStreamEvent]:
        """Events for one provider event."""
        data = as_dict(event)
        if data is None:
            return []
        kind = data.get("type")
        out: list[ModelStreamEvent] = []
        index = as_index(data.get("index"))
        if kind == "error":
            raise stream_error(self._options.provider_id, data)
        if kind == "message_start":
            message = as_dict(data.get("message")) or {}
            if isinstance(message.get("id"), str):
                self._id = message["id"]
            if as_dict(message.get("usage")) is not None:
                self._merge_usage(message["usage"])
        elif kind == "content_block_start" and index is not None:
            block = as_dict(data.get("content_block"))
            if block is not None:
                self._blocks[index] = {"block": dict(block), "text": "", "args": ""}
        elif kind == "content_block_delta" and index is not None:
            delta = as_dict(data.get("delta")) or {}
            out.extend(self._delta(index, delta))
        elif kind == "message_delta":
            delta = as_dict(data.get("delta")) or {}
            if "stop_reason" in delta and delta["stop_reason"] is not None:
                self._finish = finish_reason(delta["stop_reason"])
                self._terminal = True
            if as_dict(data.get("usage")) is not None:
                usage = self._merge_usage(data["usage"])
                out.append(UsageReport(usage=usage))
        elif kind == "message_stop":
            self._terminal = True
        elif kind in ("message", "message_completed"):
            self._terminal = True
            message = as_dict(data.get("message")) or data
            out.append(
                ResponseCompleted(
                    response=parse_response(message, self._model, self._request, self._options)
                )
            )
        out.extend(self._provider_events(data))
        return out

    def _merge_usage(self, raw: dict[str, Any]) -> Usage:
        """message_delta usage is cumulative: each counter it reports replaces the earlier one.

        Not a field-wise maximum (the reference's rule): after server-side compaction the final
        counts are lower than ``message_start``'s and equal the non-streamed ``usage``.
        """
        for key, value in raw.items():
            if isinstance(value, int) and not isinstance(value, bool):
                self._raw_usage[key] = value
        usage = self._usage = anthropic_usage(self._raw_usage)
        return usage

    def _delta(self, index: int, delta: Mapping[str, Any]) -> list[ModelStreamEvent]:
        kind = delta.get("type")
        state = self._blocks.setdefault(index, {"block": {}, "text": "", "args": ""})
        block_type = state["block"].get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            if block_type != "text":
                state = self._blocks[index] = {"block": {"type": "text"}, "text": "", "args": ""}
            state["text"] += delta["text"]
            return [TextDelta(delta=delta["text"], output_index=index)]
        if kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            if block_type != "thinking":
                state = self._blocks[index] = {
                    "block": {"type": "thinking"},
                    "text": "",
                    "args": "",
                }
            state["text"] += delta["thinking"]
            return [ReasoningDelta(delta=delta["thinking"], output_index=index)]
        if kind == "signature_delta" and block_type == "thinking":
            state["block"]["signature"] = delta.get("signature")
            return []
        if kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            # Only client tool_use blocks are tool calls; server/MCP tool blocks stay raw items,
            # but their argument deltas are collected too, so the raw block carries the same
            # input as the non-streamed mapping (issue 11 §6). An empty fragment is still a
            # delta (golden vectors).
            partial = delta["partial_json"]
            is_tool = block_type == "tool_use"
            state["args"] += partial
            block = state["block"]
            return [
                ToolCallDelta(
                    call_id=str(block.get("id")) if is_tool else f"tool_{index}",
                    name=str(block.get("name")) if is_tool else None,
                    arguments_delta=partial,
                    output_index=index,
                )
            ]
        return []

    def finalize(self) -> ModelResponse:
        """The response assembled from the content blocks.

        Raises:
            ProviderStreamError: the stream ended before ``message_stop`` / the stop reason.
        """
        if not self._terminal:
            raise self._incomplete("Anthropic Messages", "message_stop")
        output: list[CanonicalItem] = []
        for index in sorted(self._blocks):
            state = self._blocks[index]
            block: dict[str, Any] = state["block"]
            kind = block.get("type")
            if kind == "text":
                output.append(text_output(str(block.get("text") or "") + state["text"]))
            elif kind == "thinking":
                thinking = str(block.get("thinking") or "") + state["text"]
                opaque = {**block, "thinking": thinking}
                if opaque.get("signature") is None:
                    opaque.pop("signature", None)
                output.append(
                    ReasoningItem(
                        provider=self._options.provider_id,
                        opaque=json_value(opaque),
                        summary=thinking or None,
                    )
                )
            elif kind == "redacted_thinking":
                output.append(
                    ReasoningItem(provider=self._options.provider_id, opaque=json_value(block))
                )
            elif kind == "tool_use":
                arguments: object = state["args"] if state["args"] else block.get("input") or {}
                output.append(
                    tool_call_output(
                        str(block.get("id") or ""), str(block.get("name") or ""), arguments
                    )
                )
            elif self._options.preserve_provider_items:
                value = dict(block)
                if state["args"] and "input" in block:  # server/MCP tool blocks (issue 11 §6)
                    value["input"] = json_value(tool_call_output("", "", state["args"]).input)
                if state["text"]:
                    value["text"] = str(block.get("text") or "") + state["text"]
                output.append(raw_output(self._options.provider_id, value))
        return self._streamed_response(
            output, response_id=self._id or "msg_stream", finish=self._finish, usage=self._usage
        )
