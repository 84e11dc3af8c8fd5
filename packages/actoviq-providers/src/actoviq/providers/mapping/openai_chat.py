"""OpenAI Chat Completions mapping (spec 02 §3.2), pure functions over plain dicts.

Also used for any OpenAI-compatible server. Fixes over the reference (D4, 02 §6.8): consecutive
tool calls (and the assistant text right before them) become ONE assistant message with N
``tool_calls`` (item 1); streams use the chunk id, do not double a resent tool name, surface
``delta.refusal`` and skip empty tool deltas (item 4); unsupported canonical items (documents,
file images, audio, artifacts, handoffs) are refused before the network; provider events are
re-emitted only on opt-in (item 14).
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
    stringify_tool_value,
    text_output,
    tool_call_output,
    unsupported,
    usage_from_paths,
)
from actoviq.providers.mapping.chat_compat import OFFICIAL, OpenAICompat
from actoviq.providers.mapping.openai_responses import validate_metadata
from actoviq.providers.types import (
    FinishReason,
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
    UsageReport,
)

__all__ = ["RESERVED_KEYS", "ChatStreamMapper", "build_request_body", "parse_response"]

RESERVED_KEYS: Final = frozenset(
    [
        "model",
        "messages",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "reasoning_effort",
        "max_completion_tokens",
        "temperature",
        "stop",
        "metadata",
        "stream",
        "stream_options",
    ]
)


def _file_part(item: DocumentItem, options: MappingOptions, model: str) -> dict[str, Any]:
    """A document as a Chat ``file`` part (02 §6.8 item 8); Chat has no file URLs."""
    if item.role == "assistant":
        raise unsupported(item, options.provider_id, model, "Documents must be user input.")
    source = item.source
    if isinstance(source, FileSource):
        file: dict[str, Any] = {"file_id": source.file_id}
    elif isinstance(source, Base64Source):
        media = source.media_type or item.media_type or "application/pdf"
        file = {"file_data": f"data:{media};base64,{source.data}"}
    else:
        raise unsupported(item, options.provider_id, model, "Chat has no document URL input.")
    if item.name is not None or "file_data" in file:
        file["filename"] = item.name or "document"
    return {"type": "file", "file": file}


def build_messages(
    items: tuple[CanonicalItem, ...],
    options: MappingOptions,
    model: str,
    compat: OpenAICompat = OFFICIAL,
) -> list[dict[str, Any]]:
    """Canonical items as Chat messages, grouping tool calls of one assistant turn.

    An assistant message that carries only tool calls (or reasoning) gets ``compat``'s content
    (``null`` for the official API, ``""`` for servers that refuse ``null``).
    """
    empty_content = compat.tool_call_content
    messages: list[dict[str, Any]] = []
    previous: CanonicalItem | None = None
    for item in items:
        match item:
            case TextItem(role=role, text=text):
                messages.append({"role": role, "content": text})
            case ImageItem():
                if item.role == "assistant":
                    raise unsupported(
                        item, options.provider_id, model, "Images must be user input."
                    )
                source = item.source
                if isinstance(source, UrlSource):
                    url = source.url
                elif isinstance(source, Base64Source):
                    url = f"data:{source.media_type or 'image/png'};base64,{source.data}"
                else:
                    raise unsupported(
                        item, options.provider_id, model, "Chat has no file-id image input."
                    )
                part = {"type": "image_url", "image_url": compact(url=url, detail=item.detail)}
                messages.append({"role": "user", "content": [part]})
            case DocumentItem():
                messages.append({"role": "user", "content": [_file_part(item, options, model)]})
            case ToolCallItem():
                call = {
                    "id": item.id,
                    "type": "function",
                    "function": {"name": item.name, "arguments": dumps_js(item.input)},
                }
                last = messages[-1] if messages else None
                if (
                    last is not None
                    and last.get("role") == "assistant"
                    and (
                        isinstance(previous, ToolCallItem)
                        or (isinstance(previous, TextItem) and previous.role == "assistant")
                    )
                ):
                    last.setdefault("tool_calls", []).append(call)
                else:
                    messages.append(
                        {"role": "assistant", "content": empty_content, "tool_calls": [call]}
                    )
            case ToolResultItem():
                output = item.output if item.status == "success" else {"error": item.output}
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": item.call_id,
                        "content": stringify_tool_value(output),
                    }
                )
            case ReasoningItem(opaque=opaque):
                messages.append(
                    {"role": "assistant", "content": empty_content, "reasoning_content": opaque}
                )
            case RawItem(value=value):
                if not isinstance(value, dict):
                    raise unsupported(
                        item, options.provider_id, model, "Raw value must be a message."
                    )
                messages.append(dict(value))
            case StructuredItem(value=value):
                messages.append({"role": "assistant", "content": dumps_js(value)})
            case RefusalItem(message=message):
                messages.append({"role": "assistant", "content": message})
            case ErrorItem(code=code, message=message):
                messages.append({"role": "user", "content": f"[{code or 'ERROR'}] {message}"})
            case _:
                raise unsupported(item, options.provider_id, model)
        previous = item
    return messages


def build_request_body(
    request: ModelRequest,
    model_id: str,
    options: MappingOptions,
    *,
    stream: bool = False,
    compat: OpenAICompat = OFFICIAL,
) -> dict[str, Any]:
    """The ``POST /chat/completions`` body for ``request`` (raises before any network call).

    Only what the request sets is sent: no output-token limit unless ``max_output_tokens`` is set
    (in ``compat.max_tokens_field``), and ``tool_choice`` / ``parallel_tool_calls`` only with
    tools (the API refuses them without). Streamed calls ask for the usage chunk when
    ``compat.stream_usage``.
    """
    validate_metadata(request.metadata, options.provider_id)
    tools = None
    if request.tools:
        tools = [
            {
                "type": "function",
                "function": compact(
                    name=tool.name,
                    description=tool.description,
                    parameters=tool.input_schema,
                    strict=tool.strict,
                ),
            }
            for tool in request.tools
        ]
    policy = request.tool_policy if tools else None
    tool_choice: Any = (
        {"type": "function", "function": {"name": policy.name}}
        if isinstance(policy, ToolChoice)
        else policy
    )
    schema = request.output_schema
    response_format = None
    if schema is not None:
        response_format = {
            "type": "json_schema",
            "json_schema": compact(
                name=schema.name,
                description=schema.description,
                schema=schema.schema,
                strict=True if schema.strict is None else schema.strict,
            ),
        }
    effort = request.reasoning.effort if request.reasoning is not None else None
    body = compact(
        model=model_id,
        messages=build_messages(request.input, options, model_id, compat),
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=request.parallel_tool_calls if tools else None,
        response_format=response_format,
        reasoning_effort=normalize_effort(effort, OPENAI_EFFORTS) if effort is not None else None,
        temperature=request.temperature,
        top_p=request.top_p,
        seed=request.seed,
        stop=list(request.stop_sequences) if request.stop_sequences is not None else None,
        metadata=request.metadata,
    )
    if request.max_output_tokens is not None:
        body[compat.max_tokens_field] = request.max_output_tokens
    body["stream"] = stream
    if stream and compat.stream_usage:
        body["stream_options"] = {"include_usage": True}
    return merge_provider_options(request, options.provider_id, RESERVED_KEYS, body)


def chat_usage(raw: object) -> Usage | Unset:
    """Chat usage, audio tokens included (02 §6.8 item 13); UNSET when none was reported."""
    return usage_from_paths(
        raw,
        input=["prompt_tokens"],
        output=["completion_tokens"],
        total=["total_tokens"],
        cache_read=["prompt_tokens_details.cached_tokens"],
        reasoning=["completion_tokens_details.reasoning_tokens"],
        audio_input=["prompt_tokens_details.audio_tokens"],
        audio_output=["completion_tokens_details.audio_tokens"],
    )


def parse_response(
    raw: object, model: ResolvedModel, request: ModelRequest, options: MappingOptions
) -> ModelResponse:
    """A ``chat.completion`` object as a :class:`ModelResponse` (first choice only)."""
    data = require_object(
        raw, options.provider_id, "OpenAI Chat transport returned a non-object response."
    )
    choices = cast(list[Any], data.get("choices") or [])
    choice = as_dict(choices[0]) if choices else None
    choice = choice or {}
    message = as_dict(choice.get("message")) or {}
    keep = options.preserve_provider_items
    output: list[CanonicalItem] = []
    content = message.get("content")
    if isinstance(content, str) and content:
        output.append(text_output(content))
    elif isinstance(content, list):
        for part_entry in cast(list[Any], content):
            part = as_dict(part_entry)
            kind = part.get("type") if part else None
            if (
                part is not None
                and kind in ("text", "output_text")
                and isinstance(part.get("text"), str)
            ):
                output.append(text_output(part["text"]))
            elif part is not None and kind == "refusal":
                output.append(
                    refusal_output(str(part.get("refusal") or part.get("text") or "Refused."), part)
                )
            elif keep:
                output.append(raw_output(options.provider_id, part_entry))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        output.append(refusal_output(refusal))
    for call_entry in cast(list[Any], message.get("tool_calls") or []):
        call = as_dict(call_entry)
        if call is None:
            continue
        function = as_dict(call.get("function")) or {}
        output.append(
            tool_call_output(
                str(call.get("id") or ""),
                str(function.get("name") or ""),
                function.get("arguments") or "",
            )
        )
    reasoning = message.get("reasoning_content")
    if reasoning is None:
        reasoning = message.get("reasoning")
    if reasoning is None:
        reasoning = message.get("reasoning_details")
    if reasoning is not None:
        output.insert(
            0,
            ReasoningItem(
                provider=options.provider_id,
                opaque=json_value(reasoning),
                summary=reasoning if isinstance(reasoning, str) else None,
            ),
        )
    return response_from(
        data,
        fallback_id="chatcmpl_unknown",
        model=model,
        request=request,
        output=output,
        finish=finish_reason(choice.get("finish_reason")),
        usage=chat_usage(data.get("usage")),
        options=options,
    )


class ChatStreamMapper(BaseStreamMapper):
    """Maps ``chat.completion.chunk`` events; assembles the final response from the deltas."""

    def __init__(self, model: ResolvedModel, request: ModelRequest, options: MappingOptions):
        super().__init__(model, request, options)
        self._id: str | None = None
        self._text = ""
        self._reasoning = ""
        self._refusal = ""
        self._calls: dict[int, dict[str, str]] = {}
        self._finish: FinishReason | None = None
        self._usage: Usage | Unset = UNSET

    def _map_event(self, event: Any) -> list[ModelStreamEvent]:
        """Events for one chunk; a choice's ``finish_reason`` is the terminal event."""
        data = as_dict(event)
        if data is None:
            return []
        out: list[ModelStreamEvent] = []
        if data.get("object") == "chat.completion":
            self._terminal = True
            out.append(
                ResponseCompleted(
                    response=parse_response(data, self._model, self._request, self._options)
                )
            )
        else:
            if isinstance(data.get("id"), str) and data["id"] and self._id is None:
                self._id = data["id"]
            for choice_entry in cast(list[Any], data.get("choices") or []):
                choice = as_dict(choice_entry)
                if choice is not None:
                    out.extend(self._choice(choice))
            usage = chat_usage(data.get("usage"))
            if isinstance(usage, Usage):
                self._usage = usage
                out.append(UsageReport(usage=usage))
        out.extend(self._provider_events(data))
        return out

    def _choice(self, choice: Mapping[str, Any]) -> list[ModelStreamEvent]:
        out: list[ModelStreamEvent] = []
        delta = as_dict(choice.get("delta")) or {}
        index = as_index(choice.get("index"))
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._text += content
            out.append(TextDelta(delta=content, output_index=index))
        reasoning = delta.get("reasoning_content")
        if reasoning is None:
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._reasoning += reasoning
            out.append(ReasoningDelta(delta=reasoning, output_index=index))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self._refusal += refusal
            out.append(RefusalDelta(delta=refusal, output_index=index))
        for call_entry in cast(list[Any], delta.get("tool_calls") or []):
            call = as_dict(call_entry)
            if call is None:
                continue
            tool_index = as_index(call.get("index"))
            if tool_index is None:
                tool_index = len(self._calls)
            entry = self._calls.setdefault(tool_index, {"id": "", "name": "", "arguments": ""})
            new_data = False
            if isinstance(call.get("id"), str) and call["id"] and call["id"] != entry["id"]:
                entry["id"] = call["id"]
                new_data = True
            function = as_dict(call.get("function")) or {}
            name = function.get("name")
            if isinstance(name, str) and name and name != entry["name"]:
                entry["name"] += name
                new_data = True
            arguments = function.get("arguments")
            arguments = arguments if isinstance(arguments, str) else ""
            entry["arguments"] += arguments
            if arguments or new_data:
                out.append(
                    ToolCallDelta(
                        call_id=entry["id"] or f"call_{tool_index}",
                        name=entry["name"] or None,
                        arguments_delta=arguments,
                        output_index=tool_index,
                    )
                )
        if choice.get("finish_reason") is not None:
            self._finish = finish_reason(choice["finish_reason"])
            self._terminal = True
        return out

    def finalize(self) -> ModelResponse:
        """The response assembled from the chunks (usage UNSET when no usage chunk came).

        Raises:
            ProviderStreamError: no chunk carried a ``finish_reason`` (the stream was cut).
        """
        if not self._terminal:
            raise self._incomplete("OpenAI Chat", "a chunk with finish_reason")
        output: list[CanonicalItem] = []
        if self._reasoning:
            output.append(
                ReasoningItem(
                    provider=self._options.provider_id,
                    opaque=self._reasoning,
                    summary=self._reasoning,
                )
            )
        if self._text:
            output.append(text_output(self._text))
        if self._refusal:
            output.append(refusal_output(self._refusal))
        for index in sorted(self._calls):
            entry = self._calls[index]
            if not (entry["id"] or entry["name"] or entry["arguments"]):
                continue  # a tool-call fragment that carried no data is not a call (item 4)
            output.append(
                tool_call_output(entry["id"] or f"call_{index}", entry["name"], entry["arguments"])
            )
        return self._streamed_response(
            output,
            response_id=self._id or "chatcmpl_stream",
            finish=self._finish,
            usage=self._usage,
        )
