"""``ModelProviderLegacyAdapter``: a provider v2 seen as an old ``ModelApi`` (spec 02 §4.3)."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from actoviq.core import (
    Base64Source,
    CanonicalItem,
    FileSource,
    ImageItem,
    ImageSource,
    ModelRefParts,
    RawItem,
    ReasoningItem,
    RefusalItem,
    StructuredItem,
    TextItem,
    ToolCallItem,
    ToolResultItem,
    UrlSource,
    Usage,
)
from actoviq.providers._lifecycle import AsyncCloseable, Outcome
from actoviq.providers.errors import ModelCallAbortedError, StreamConsumedError
from actoviq.providers.legacy.shapes import (
    ContentBlock,
    LegacyModelRequest,
    Message,
    MessageStreamEvent,
    core_usage_to_legacy,
)
from actoviq.providers.mapping._common import as_dict, dumps_js, json_object, json_value
from actoviq.providers.protocol import ModelProvider
from actoviq.providers.stream import ModelStream
from actoviq.providers.types import (
    ModelCallContext,
    ModelReasoningRequest,
    ModelRequest,
    ModelResponse,
    ModelToolDefinition,
    ModelToolPolicy,
    ReasoningDelta,
    ResponseCompleted,
    TextDelta,
    ToolCallDelta,
    ToolChoice,
    UsageReport,
)

__all__ = [
    "LegacyMessageStream",
    "ModelProviderLegacyAdapter",
    "from_legacy_request",
    "legacy_stop_reason",
    "to_legacy_message",
]

_STOP: Final[dict[str, str]] = {
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "stop": "end_turn",
}


def legacy_stop_reason(reason: str) -> str:
    """``tool_calls``→``tool_use``, ``length``→``max_tokens``, ``stop``→``end_turn``; else as is."""
    return _STOP.get(reason, reason)


def _image(block: Mapping[str, Any], role: str) -> ImageItem | None:
    source = as_dict(block.get("source"))
    if source is None:
        return None
    parsed: ImageSource
    if source.get("type") == "url":
        parsed = UrlSource(url=str(source.get("url") or ""))
    elif source.get("type") == "file":
        parsed = FileSource(file_id=str(source.get("file_id") or ""))
    else:
        parsed = Base64Source(
            media_type=str(source.get("media_type") or "image/png"),
            data=str(source.get("data") or ""),
        )
    return ImageItem(source=parsed, role="assistant" if role == "assistant" else "user")


def _from_block(entry: object, role: str, provider_id: str) -> CanonicalItem:
    block = as_dict(entry)
    if block is None:
        return RawItem(provider=provider_id, value=json_value(entry))
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return TextItem(role="assistant" if role == "assistant" else "user", text=block["text"])
    if kind == "image":
        image = _image(block, role)
        if image is not None:
            return image
    if kind == "tool_use":
        return ToolCallItem(
            id=str(block.get("id") or ""),
            name=str(block.get("name") or ""),
            input=json_object(block.get("input")),
        )
    if kind == "tool_result":
        content = block.get("content")
        return ToolResultItem(
            call_id=str(block.get("tool_use_id") or ""),
            status="error" if block.get("is_error") is True else "success",
            output=json_value("" if content is None else content),
        )
    if kind == "thinking":
        thinking = block.get("thinking")
        return ReasoningItem(
            provider=provider_id,
            summary=thinking if isinstance(thinking, str) else None,
            opaque=json_value(block),
        )
    # Lossy case 2: document, redacted_thinking, server tool blocks... owned by the TARGET.
    return RawItem(provider=provider_id, value=json_value(block))


def _tool_policy(choice: Mapping[str, Any]) -> ModelToolPolicy:
    kind = choice.get("type")
    if kind == "any":
        return "required"
    if kind == "tool" and isinstance(choice.get("name"), str):
        return ToolChoice(name=choice["name"])
    if kind == "none":
        return "none"
    return "auto"


def from_legacy_request(request: LegacyModelRequest, provider_id: str) -> ModelRequest:
    """A legacy request as a :class:`ModelRequest` for ``provider_id``.

    ``top_p``, ``context_management`` and ``extra_tool_schemas`` are dropped (lossy case 7).
    """
    items: list[CanonicalItem] = []
    system = request.get("system")
    if isinstance(system, str):
        items.append(TextItem(role="system", text=system))
    for message in request["messages"]:
        role = message["role"]
        content = message["content"]
        if isinstance(content, str):
            items.append(
                TextItem(role="assistant" if role == "assistant" else "user", text=content)
            )
            continue
        items.extend(_from_block(block, role, provider_id) for block in content)
    tools = None
    if "tools" in request:
        tools = [
            ModelToolDefinition(
                name=tool["name"],
                description=tool.get("description"),
                input_schema=json_object(tool.get("input_schema")),
                strict=tool.get("strict"),
            )
            for tool in request["tools"]
        ]
    choice = cast(Mapping[str, Any] | None, request.get("tool_choice"))
    parallel = None
    if choice is not None and choice.get("disable_parallel_tool_use") is not None:
        parallel = not choice["disable_parallel_tool_use"]
    metadata = request.get("metadata")
    effort = request.get("effort")
    stop = request.get("stop_sequences")
    return ModelRequest(
        model=ModelRefParts(provider=provider_id, model=request["model"]),
        input=items,
        tools=tools,
        tool_policy=_tool_policy(choice) if choice is not None else None,
        parallel_tool_calls=parallel,
        max_output_tokens=request["max_tokens"],
        temperature=request.get("temperature"),
        stop_sequences=list(stop) if stop is not None else None,
        metadata=json_object(metadata) if metadata is not None else None,
        reasoning=ModelReasoningRequest(effort=effort) if effort is not None else None,
    )


def _to_legacy_content(output: Sequence[CanonicalItem]) -> list[ContentBlock]:
    has_text = any(isinstance(item, TextItem) for item in output)
    content: list[ContentBlock] = []
    for item in output:
        match item:
            case TextItem(text=text):
                content.append({"type": "text", "text": text})
            case ToolCallItem(id=call_id, name=name, input=tool_input):
                content.append(
                    {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}
                )
            case ReasoningItem(opaque=opaque, summary=summary):
                if isinstance(opaque, dict):
                    content.append(dict(opaque))
                else:
                    thinking = summary if summary is not None else opaque
                    text = "" if thinking is None else str(thinking)
                    content.append({"type": "thinking", "thinking": text})
            case StructuredItem(value=value) if not has_text:
                content.append({"type": "text", "text": dumps_js(value)})
            case RefusalItem(message=message):
                content.append({"type": "text", "text": message})
            case RawItem(value=value) if isinstance(value, dict):
                content.append(dict(value))
            case _:
                pass  # lossy case 3: media, tool results, handoffs, errors, non-dict raws
    return content


def to_legacy_message(response: ModelResponse) -> Message:
    """A :class:`ModelResponse` as a legacy message (usage without double-counted cache)."""
    return {
        "id": response.id,
        "type": "message",
        "role": "assistant",
        "model": response.model.model_id,
        "content": _to_legacy_content(response.output),
        "stop_reason": legacy_stop_reason(response.finish_reason),
        "stop_sequence": None,
        # Legacy messages always carry usage: an unknown one reads as zeros there.
        "usage": core_usage_to_legacy(
            response.usage if isinstance(response.usage, Usage) else Usage()
        ),
    }


class ModelProviderLegacyAdapter:
    """A provider v2 as a legacy ``ModelApi`` (``create_message`` / ``stream_message``).

    Preflight happens inside the provider. The request's ``signal`` (if any) aborts the call.

    Example:
        >>> adapter = ModelProviderLegacyAdapter(ScriptedProvider(["hi"]))  # doctest: +SKIP
        >>> message = await adapter.create_message(  # doctest: +SKIP
        ...     {"model": "m", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 64}
        ... )
    """

    def __init__(self, provider: ModelProvider) -> None:
        self._provider = provider

    @property
    def provider(self) -> ModelProvider:
        """The wrapped provider."""
        return self._provider

    def __repr__(self) -> str:
        return f"ModelProviderLegacyAdapter({self._provider!r})"

    async def create_message(self, request: LegacyModelRequest) -> Message:
        """One call through the provider, answered as a legacy message."""
        response = await self._provider.generate(
            from_legacy_request(request, self._provider.id),
            ModelCallContext(signal=request.get("signal")),
        )
        return to_legacy_message(response)

    def stream_message(self, request: LegacyModelRequest) -> LegacyMessageStream:
        """A legacy stream over ``provider.stream`` (lazy; single consumer)."""
        stream = self._provider.stream(
            from_legacy_request(request, self._provider.id),
            ModelCallContext(signal=request.get("signal")),
        )
        return LegacyMessageStream(stream)


class LegacyMessageStream(AsyncCloseable):
    """Provider v2 stream events translated to legacy ``MessageStreamEvent`` s (02 §4.3).

    Single consumer. ``final_message()`` drains the stream when nobody iterated it. Use
    ``async with`` (or :meth:`aclose`) to stop early: the provider stream is closed and
    ``final_message()`` raises the stream's abort error.
    """

    def __init__(self, stream: ModelStream) -> None:
        self._stream = stream
        self._pending: deque[MessageStreamEvent] = deque()
        self._blocks: dict[str, int] = {}  # block key -> index, in opening order
        self._started = False
        self._announced = False
        self._done = False
        self._completed = False
        self._outcome: Outcome[Message] = Outcome()

    def __aiter__(self) -> LegacyMessageStream:
        if self._started:
            raise StreamConsumedError("Legacy model streams are single-consumer iterables.")
        self._started = True
        return self

    async def __anext__(self) -> MessageStreamEvent:
        while not self._pending:
            if self._done:
                raise StopAsyncIteration
            try:
                event = await self._stream.__anext__()
            except StopAsyncIteration:
                await self._end_without_completion()
                continue
            except BaseException as error:
                self._fail(error)
                await self._stream.aclose()
                raise
            self._translate(event)
        return self._pending.popleft()

    async def final_message(self) -> Message:
        """The final legacy message; raises the stream's error when it failed."""
        if not self._started:
            async for _ in self:
                pass
        return await self._outcome.wait()

    async def aclose(self) -> None:
        """Close the provider stream; an unfinished stream settles as stopped early."""
        self._done = True
        await self._stream.aclose()
        self._fail(ModelCallAbortedError("Legacy model stream stopped early."))

    def _fail(self, error: BaseException) -> None:
        self._outcome.fail(error)

    def _resolve(self, message: Message) -> None:
        self._outcome.resolve(message)

    def _open(self, key: str, block: ContentBlock) -> int:
        index = self._blocks.get(key)
        if index is None:
            index = self._blocks[key] = len(self._blocks)
            self._pending.append(
                {"type": "content_block_start", "index": index, "content_block": block}
            )
        return index

    def _translate(self, event: object) -> None:
        if self._completed:
            return  # nothing follows message_stop
        if not self._announced:
            self._announced = True
            self._pending.append(
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_stream",
                        "type": "message",
                        "role": "assistant",
                        "model": "unknown",
                        "content": [],
                        "stop_reason": None,
                    },
                }
            )
        if isinstance(event, TextDelta):
            index = self._open("text", {"type": "text", "text": ""})
            delta = {"type": "text_delta", "text": event.delta}
            self._pending.append({"type": "content_block_delta", "index": index, "delta": delta})
        elif isinstance(event, ReasoningDelta):
            index = self._open("thinking", {"type": "thinking", "thinking": ""})
            delta = {"type": "thinking_delta", "thinking": event.delta or ""}
            self._pending.append({"type": "content_block_delta", "index": index, "delta": delta})
        elif isinstance(event, ToolCallDelta):
            block: ContentBlock = {
                "type": "tool_use",
                "id": event.call_id,
                "name": event.name or "",
                "input": {},
            }
            index = self._open(f"tool:{event.call_id}", block)
            if event.arguments_delta:
                delta = {"type": "input_json_delta", "partial_json": event.arguments_delta}
                self._pending.append(
                    {"type": "content_block_delta", "index": index, "delta": delta}
                )
        elif isinstance(event, UsageReport):
            usage = core_usage_to_legacy(event.usage)
            self._pending.append({"type": "message_delta", "delta": {}, "usage": usage})
        elif isinstance(event, ResponseCompleted):
            self._completed = True
            self._complete(event.response)
        # provider.event and refusal.delta have no legacy form.

    def _complete(self, response: ModelResponse) -> None:
        for index in self._blocks.values():
            self._pending.append({"type": "content_block_stop", "index": index})
        message = to_legacy_message(response)
        self._resolve(message)
        self._pending.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"]},
                "usage": message.get("usage", {}),
            }
        )
        self._pending.append({"type": "message_stop"})

    async def _end_without_completion(self) -> None:
        self._done = True
        if self._completed:
            return
        try:
            response = await self._stream.final_response()
        except BaseException as error:
            self._fail(error)
            raise
        self._resolve(to_legacy_message(response))
        self._pending.append({"type": "message_stop"})
