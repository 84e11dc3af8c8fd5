"""OpenAI Responses API mapping (spec 02 §3.1), pure functions over plain dicts.

Fixes over the reference (D4, 02 §6.8): stream tool-call deltas carry the final ``call_id`` and
name (from ``response.output_item.added``) and fallback finalisation never duplicates a call
(item 2); ``response.refusal.delta`` becomes a ``refusal.delta`` event; an ``error`` stream event
raises; ``stop`` is never sent (item 11); unsupported canonical items are refused before the
network; provider events are re-emitted only on opt-in (item 14).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from actoviq.core import (
    Base64Source,
    CanonicalItem,
    CapabilityError,
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
    UrlSource,
)
from actoviq.providers.errors import InvalidModelRequestError
from actoviq.providers.mapping._common import (
    OPENAI_EFFORTS,
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
    usage_from_paths,
)
from actoviq.providers.types import (
    ModelRequest,
    ModelResponse,
    ModelStreamEvent,
    ReasoningDelta,
    RefusalDelta,
    ResolvedModel,
    ResponseCompleted,
    TextDelta,
    ToolCallDelta,
    ToolChoice,
)

__all__ = ["RESERVED_KEYS", "ResponsesStreamMapper", "build_request_body", "parse_response"]

RESERVED_KEYS: Final = frozenset(
    [
        "model",
        "input",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "text",
        "reasoning",
        "max_output_tokens",
        "temperature",
        "stop",
        "prompt_cache_key",
        "metadata",
        "stream",
    ]
)


ENCRYPTED_REASONING: Final = "reasoning.encrypted_content"


def _message(role: str, part: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "content": [part]}


def map_input_item(item: CanonicalItem, options: MappingOptions, model: str) -> dict[str, Any]:
    """One canonical item as one Responses input item (or a typed refusal)."""
    match item:
        case TextItem(role=role, text=text):
            kind = "output_text" if role == "assistant" else "input_text"
            return _message(role, {"type": kind, "text": text})
        case ImageItem():
            if item.role == "assistant":
                raise unsupported(item, options.provider_id, model, "Images must be user input.")
            source = item.source
            part = compact(type="input_image", detail=item.detail)
            if isinstance(source, UrlSource):
                part["image_url"] = source.url
            elif isinstance(source, Base64Source):
                part["image_url"] = f"data:{source.media_type or 'image/png'};base64,{source.data}"
            else:
                part["file_id"] = source.file_id
            return _message("user", part)
        case DocumentItem():
            source = item.source
            part: dict[str, Any] = {"type": "input_file"}
            if isinstance(source, FileSource):
                part["file_id"] = source.file_id
            elif isinstance(source, UrlSource):
                part["file_url"] = source.url
            else:
                media = source.media_type or item.media_type or "application/pdf"
                part["file_data"] = f"data:{media};base64,{source.data}"
                part["filename"] = item.name or "document"
            if item.name is not None:
                part["filename"] = item.name
            return _message("user", part)
        case ToolCallItem():
            return {
                "type": "function_call",
                "call_id": item.id,
                "name": item.name,
                "arguments": dumps_js(item.input),
            }
        case ToolResultItem():
            output = item.output if item.status == "success" else {"error": item.output}
            return {
                "type": "function_call_output",
                "call_id": item.call_id,
                "output": stringify_tool_value(output),
            }
        case ReasoningItem(opaque=opaque):
            if isinstance(opaque, dict):
                return dict(opaque)
            return {"type": "reasoning", "content": opaque}
        case RawItem(value=value):
            if not isinstance(value, dict):
                raise unsupported(item, options.provider_id, model, "Raw value must be an object.")
            return dict(value)
        case StructuredItem(value=value):
            return _message("assistant", {"type": "output_text", "text": dumps_js(value)})
        case RefusalItem(message=message):
            return _message("assistant", {"type": "output_text", "text": message})
        case ErrorItem(code=code, message=message):
            return _message(
                "user", {"type": "input_text", "text": f"[{code or 'ERROR'}] {message}"}
            )
        case _:
            raise unsupported(item, options.provider_id, model)


def _tools(request: ModelRequest) -> list[dict[str, Any]] | None:
    if not request.tools:
        return None
    tools: list[dict[str, Any]] = []
    for tool in request.tools:
        if tool.hosted:
            hosted: dict[str, Any] = dict(tool.provider_options or {})
            if hosted.get("type") in ("function", "custom"):
                hosted["name"] = tool.name
            tools.append(hosted)
        else:
            tools.append(
                compact(
                    type="function",
                    name=tool.name,
                    description=tool.description,
                    parameters=tool.input_schema,
                    strict=tool.strict,
                )
            )
    return tools


def _tool_choice(request: ModelRequest) -> Any:
    policy = request.tool_policy
    if isinstance(policy, ToolChoice):
        return {"type": "function", "name": policy.name}
    return policy


def validate_metadata(metadata: Mapping[str, Any] | None, provider_id: str) -> None:
    """OpenAI metadata is at most 16 string→string pairs (02 §6.8 item 6)."""
    if metadata is None:
        return
    if len(metadata) > 16 or not all(isinstance(v, str) for v in metadata.values()):
        raise InvalidModelRequestError(
            f"Provider {provider_id} accepts metadata as at most 16 string values."
        )


def build_request_body(
    request: ModelRequest, model_id: str, options: MappingOptions, *, stream: bool = False
) -> dict[str, Any]:
    """The ``POST /responses`` body for ``request`` (raises before any network call)."""
    if request.stop_sequences:
        raise CapabilityError(
            f"Provider {options.provider_id} (OpenAI Responses) has no stop sequences.",
            provider_id=options.provider_id,
            model=model_id,
            capability="stopSequences",
        )
    validate_metadata(request.metadata, options.provider_id)
    schema = request.output_schema
    text = None
    if schema is not None:
        text = {
            "format": compact(
                type="json_schema",
                name=schema.name,
                description=schema.description,
                schema=schema.schema,
                strict=True if schema.strict is None else schema.strict,
            )
        }
    reasoning = None
    if request.reasoning is not None:
        effort = request.reasoning.effort
        summary = request.reasoning.summary
        reasoning = compact(
            effort=normalize_effort(effort, OPENAI_EFFORTS) if effort is not None else None,
            summary=None if summary == "none" else summary,
        )
    tools = _tools(request)
    body = compact(
        model=model_id,
        input=[map_input_item(item, options, model_id) for item in request.input],
        tools=tools,
        # tool_choice and parallel_tool_calls only with tools (the API refuses them without).
        tool_choice=_tool_choice(request) if tools else None,
        parallel_tool_calls=request.parallel_tool_calls if tools else None,
        text=text,
        reasoning=reasoning,
        max_output_tokens=request.max_output_tokens,
        temperature=request.temperature,
        top_p=request.top_p,
        prompt_cache_key=request.prompt_cache_key,
        metadata=request.metadata,
    )
    body["stream"] = stream
    merged = merge_provider_options(request, options.provider_id, RESERVED_KEYS, body)
    if merged.get("store") is False:
        # Without server-side storage, reasoning can only round-trip as encrypted content
        # (02 §6.8 item 10); keep any include entries the caller set.
        include = merged.get("include")
        entries = list(cast(list[Any], include)) if isinstance(include, list) else []
        if ENCRYPTED_REASONING not in entries:
            entries.append(ENCRYPTED_REASONING)
        merged["include"] = entries
    return merged


def _map_output_item(entry: object, options: MappingOptions) -> list[CanonicalItem]:
    item = as_dict(entry)
    keep = options.preserve_provider_items
    if item is None:
        return [raw_output(options.provider_id, entry)] if keep else []
    kind = item.get("type")
    if kind == "message":
        out: list[CanonicalItem] = []
        for part_entry in cast(list[Any], item.get("content") or []):
            part = as_dict(part_entry)
            if (
                part is not None
                and part.get("type") == "output_text"
                and isinstance(part.get("text"), str)
            ):
                out.append(text_output(part["text"]))
            elif part is not None and part.get("type") == "refusal":
                message = part.get("refusal") or part.get("text") or "Refused."
                out.append(refusal_output(str(message), part))
            elif keep:
                out.append(raw_output(options.provider_id, part_entry))
        return out
    if kind == "function_call":
        arguments = item.get("arguments")
        return [
            tool_call_output(
                str(item.get("call_id") or item.get("id") or ""),
                str(item.get("name") or ""),
                {} if arguments is None else arguments,
                empty_is_object=False,  # golden: "" → {"raw": ""} (absent → {})
            )
        ]
    if kind == "reasoning":
        summary = "".join(
            str(part.get("text")) if isinstance(part.get("text"), str) else ""
            for part in (as_dict(p) or {} for p in cast(list[Any], item.get("summary") or []))
        )
        return [
            ReasoningItem(
                provider=options.provider_id, opaque=json_value(item), summary=summary or None
            )
        ]
    return [raw_output(options.provider_id, item)] if keep else []


def parse_response(
    raw: object, model: ResolvedModel, request: ModelRequest, options: MappingOptions
) -> ModelResponse:
    """A Responses API response object as a :class:`ModelResponse`."""
    data = require_object(
        raw, options.provider_id, "OpenAI Responses transport returned a non-object response."
    )
    output: list[CanonicalItem] = []
    for entry in cast(list[Any], data.get("output") or []):
        output.extend(_map_output_item(entry, options))
    incomplete = as_dict(data.get("incomplete_details"))
    if any(isinstance(item, ToolCallItem) for item in output):
        reason = "tool_calls"
    else:
        reason = finish_reason(incomplete.get("reason") if incomplete else data.get("status"))
    return response_from(
        data,
        fallback_id="resp_unknown",
        model=model,
        request=request,
        output=output,
        finish=reason,
        usage=usage_from_paths(
            data.get("usage"),
            input=["input_tokens"],
            output=["output_tokens"],
            total=["total_tokens"],
            cache_read=["input_tokens_details.cached_tokens"],
            reasoning=["output_tokens_details.reasoning_tokens"],
        ),
        options=options,
    )


def _index(event: Mapping[str, Any]) -> int | None:
    return as_index(event.get("output_index"))


class ResponsesStreamMapper(BaseStreamMapper):
    """Maps Responses stream events; the final response comes from the terminal event.

    ``response.completed``, ``response.failed`` and ``response.incomplete`` (or a whole response
    object) end a stream; one that ends without any of them raises
    :class:`~actoviq.providers.errors.ProviderStreamError` (decision D10) instead of assembling
    a response from the deltas.
    """

    def __init__(self, model: ResolvedModel, request: ModelRequest, options: MappingOptions):
        super().__init__(model, request, options)
        self._item_to_call: dict[str, tuple[str, str]] = {}  # item_id -> (call_id, name)

    def _call_key(self, event: Mapping[str, Any]) -> tuple[str, str | None]:
        item_id = event.get("item_id")
        if isinstance(item_id, str) and item_id in self._item_to_call:
            call_id, name = self._item_to_call[item_id]
            return call_id, name or None
        call_id = event.get("call_id") or item_id or event.get("output_index") or "call_stream"
        name = event.get("name")
        return str(call_id), name if isinstance(name, str) else None

    def _map_event(self, event: Any) -> list[ModelStreamEvent]:
        """Events for one provider stream event."""
        data = as_dict(event)
        if data is None:
            return []
        kind = data.get("type")
        out: list[ModelStreamEvent] = []
        delta = data.get("delta")
        if kind == "error":
            raise stream_error(self._options.provider_id, data)
        if kind == "response.output_text.delta" and isinstance(delta, str):
            out.append(TextDelta(delta=delta, output_index=_index(data)))
        elif kind == "response.refusal.delta" and isinstance(delta, str):
            out.append(RefusalDelta(delta=delta, output_index=_index(data)))
        elif kind == "response.function_call_arguments.delta" and isinstance(delta, str):
            call_id, name = self._call_key(data)
            out.append(
                ToolCallDelta(
                    call_id=call_id, name=name, arguments_delta=delta, output_index=_index(data)
                )
            )
        elif kind in (
            "response.reasoning_summary_text.delta",
            "response.reasoning_text.delta",
        ) and isinstance(delta, str):
            out.append(ReasoningDelta(delta=delta, output_index=_index(data)))
        elif kind == "response.output_item.added":
            item = as_dict(data.get("item")) or {}
            if item.get("type") == "function_call" and isinstance(item.get("id"), str):
                self._item_to_call[item["id"]] = (
                    str(item.get("call_id") or item["id"]),
                    str(item.get("name") or ""),
                )
        elif kind in ("response.completed", "response.failed", "response.incomplete") and (
            as_dict(data.get("response")) is not None
        ):
            self._terminal = True
            out.append(ResponseCompleted(response=self._parse(data["response"])))
        elif data.get("object") == "response":
            self._terminal = True
            out.append(ResponseCompleted(response=self._parse(data)))
        out.extend(self._provider_events(data))
        return out

    def _parse(self, raw: object) -> ModelResponse:
        return parse_response(raw, self._model, self._request, self._options)

    def finalize(self) -> ModelResponse:
        """Only reached when no terminal event arrived.

        Raises:
            ProviderStreamError: always (the stream was cut before ``response.completed``).
        """
        raise self._incomplete(
            "OpenAI Responses", "response.completed, response.failed or response.incomplete"
        )
