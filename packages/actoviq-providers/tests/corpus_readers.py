"""What a recorded provider response says, read independently of our mappers.

One small reader per API, written from the vendors' documented response shapes (OpenAI Responses
``Response`` object and its stream events, Chat Completions ``chat.completion`` and
``chat.completion.chunk``, Anthropic ``Message`` and its stream events). It returns what the
canonical response must then contain: the final text, the client tool calls (id, name, parsed
arguments), the finish reason, the number of reasoning items, every usage field and the id.

The only port rules applied here are the documented canonical conventions (spec 02 §2.8 finish
table with the §6.8 item 3 fix, 02 §3.3.7 Anthropic input tokens including cache reads/writes).
Nothing is imported from ``actoviq.providers``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

Json = dict[str, Any]

# 02 §2.8 finishReason table; `stop_sequence` is `stop` in the port (02 §6.8 item 3), and
# Anthropic's documented `model_context_window_exceeded` stops for length. Anything else: unknown.
FINISH = {
    "stop": "stop",
    "end_turn": "stop",
    "completed": "stop",
    "stop_sequence": "stop",
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "incomplete": "length",
    "model_context_window_exceeded": "length",
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "refusal",
    "cancelled": "cancelled",
    "failed": "error",
}
USAGE_FIELDS = (
    "requests",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "audio_input_tokens",
    "audio_output_tokens",
    "cost_usd",
)


@dataclass
class Recorded:
    """The canonical facts of one recorded response."""

    id: str | None = None
    text: str = ""
    tool_calls: list[tuple[str, str, Json]] = field(default_factory=lambda: [])
    finish: str = "unknown"
    reasoning: int = 0
    # Every usage field; empty when the recording reports no usage (unknown, decision D10 /
    # issue 13: not zeros).
    usage: dict[str, int] = field(default_factory=lambda: {})


def _obj(value: object) -> Json:
    return cast(Json, value) if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


def _count(data: Json, *path: str) -> int:
    value: object = data
    for key in path:
        value = _obj(value).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _usage(**counts: int) -> dict[str, int]:
    """All usage fields: ``requests`` 1 (a real call), the given counts, the rest 0."""
    return {name: counts.get(name, 1 if name == "requests" else 0) for name in USAGE_FIELDS}


def _arguments(text: object) -> Json:
    """Tool-call arguments: a JSON string holding an object (an empty string is ``{}``)."""
    assert isinstance(text, str), text
    if not text.strip():
        return {}
    value = json.loads(text)
    assert isinstance(value, dict), f"tool-call arguments are not a JSON object: {text!r}"
    return cast(Json, value)


def _stream_finish(found: Recorded, stop: object) -> str:
    """A stream's finish: its last stop/finish reason, else ``tool_calls`` when it called a tool,
    else ``stop`` (02: streamed responses without a reason)."""
    if stop is not None:
        return FINISH.get(str(stop), "unknown")
    return "tool_calls" if found.tool_calls else "stop"


def sse_events(text: str) -> list[Json]:
    """The JSON ``data:`` payloads of a server-sent-events stream, in order."""
    events: list[Json] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(
            line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")
        )
        if data and data != "[DONE]":
            events.append(cast(Json, json.loads(data)))
    return events


# --- OpenAI Responses ----------------------------------------------------------------------------


def responses_body(body: Json) -> Recorded:
    """A ``Response`` object: ``output[]`` items, ``status``/``incomplete_details``, ``usage``."""
    found = Recorded(id=body.get("id"))
    for item in map(_obj, _list(body.get("output"))):
        kind = item.get("type")
        if kind == "message":
            for part in map(_obj, _list(item.get("content"))):
                if part.get("type") == "output_text":
                    found.text += part["text"]
        elif kind == "function_call":
            found.tool_calls.append((item["call_id"], item["name"], _arguments(item["arguments"])))
        elif kind == "reasoning":
            found.reasoning += 1
    incomplete: object = body.get("incomplete_details")
    details = _obj(incomplete)
    status = details.get("reason") if isinstance(incomplete, dict) else body.get("status")
    # a function call always finishes the turn for tools (02 §2.8, Responses)
    found.finish = "tool_calls" if found.tool_calls else FINISH.get(str(status), "unknown")
    if not isinstance(body.get("usage"), dict):
        return found  # usage unknown
    usage = _obj(body.get("usage"))
    tokens_in, tokens_out = _count(usage, "input_tokens"), _count(usage, "output_tokens")
    found.usage = _usage(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        total_tokens=_count(usage, "total_tokens")
        if "total_tokens" in usage
        else tokens_in + tokens_out,
        cache_read_tokens=_count(usage, "input_tokens_details", "cached_tokens"),
        reasoning_tokens=_count(usage, "output_tokens_details", "reasoning_tokens"),
    )
    return found


def responses_stream(events: list[Json]) -> Recorded:
    """A Responses stream: the ``response`` of its terminal event is the final response."""
    terminal = ("response.completed", "response.incomplete", "response.failed")
    finals = [_obj(e.get("response")) for e in events if e.get("type") in terminal]
    assert finals, "the stream has no terminal response event"
    return responses_body(finals[-1])


# --- OpenAI Chat Completions ---------------------------------------------------------------------


def _chat_usage(usage: Json) -> dict[str, int]:
    tokens_in, tokens_out = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
    return _usage(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        total_tokens=_count(usage, "total_tokens")
        if "total_tokens" in usage
        else tokens_in + tokens_out,
        cache_read_tokens=_count(usage, "prompt_tokens_details", "cached_tokens"),
        reasoning_tokens=_count(usage, "completion_tokens_details", "reasoning_tokens"),
        audio_input_tokens=_count(usage, "prompt_tokens_details", "audio_tokens"),
        audio_output_tokens=_count(usage, "completion_tokens_details", "audio_tokens"),
    )


_CHAT_REASONING = ("reasoning_content", "reasoning", "reasoning_details")


def chat_body(body: Json) -> Recorded:
    """A ``chat.completion``: the first choice's ``message``, ``finish_reason``; ``usage``."""
    choice = _obj(_list(body.get("choices"))[0]) if _list(body.get("choices")) else {}
    message = _obj(choice.get("message"))
    found = Recorded(id=body.get("id"))
    content = message.get("content")
    if isinstance(content, str):
        found.text = content
    for part in map(_obj, _list(content)):
        if part.get("type") == "text":
            found.text += part["text"]
    for call in map(_obj, _list(message.get("tool_calls"))):
        function = _obj(call.get("function"))
        found.tool_calls.append((call["id"], function["name"], _arguments(function["arguments"])))
    found.reasoning = int(any(message.get(key) is not None for key in _CHAT_REASONING))
    found.finish = FINISH.get(str(choice.get("finish_reason")), "unknown")
    if isinstance(body.get("usage"), dict):  # else usage unknown
        found.usage = _chat_usage(body["usage"])
    return found


def chat_stream(events: list[Json]) -> Recorded:
    """``chat.completion.chunk``s: choice 0's deltas; tool calls assembled by ``index``."""
    found = Recorded()  # usage unknown until a usage chunk
    calls: dict[int, list[str]] = {}
    reasoning = ""
    stop: object = None
    for chunk in events:
        if found.id is None and chunk.get("id"):
            found.id = chunk["id"]
        if isinstance(chunk.get("usage"), dict):
            found.usage = _chat_usage(chunk["usage"])
        for choice in map(_obj, _list(chunk.get("choices"))):
            if choice.get("index", 0) != 0:
                continue
            delta = _obj(choice.get("delta"))
            if isinstance(delta.get("content"), str):
                found.text += delta["content"]
            for key in ("reasoning_content", "reasoning"):
                if isinstance(delta.get(key), str):
                    reasoning += delta[key]
            for call in map(_obj, _list(delta.get("tool_calls"))):
                entry = calls.setdefault(call["index"], ["", "", ""])
                function = _obj(call.get("function"))
                entry[0] = entry[0] or call.get("id") or ""
                entry[1] = entry[1] or function.get("name") or ""
                entry[2] += function.get("arguments") or ""
            stop = choice.get("finish_reason") or stop
    found.tool_calls = [(i, n, _arguments(a)) for _, (i, n, a) in sorted(calls.items())]
    found.reasoning = int(bool(reasoning))
    found.finish = _stream_finish(found, stop)
    return found


# --- Anthropic Messages --------------------------------------------------------------------------


def _anthropic_usage(usage: Json) -> dict[str, int]:
    read = _count(usage, "cache_read_input_tokens")
    write = _count(usage, "cache_creation_input_tokens")
    tokens_in = _count(usage, "input_tokens") + read + write  # 02 §3.3.7
    tokens_out = _count(usage, "output_tokens")
    return _usage(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        total_tokens=tokens_in + tokens_out,
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def _anthropic_blocks(found: Recorded, blocks: list[Json]) -> None:
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            found.text += block["text"]
        elif kind == "tool_use":
            found.tool_calls.append((block["id"], block["name"], _obj(block.get("input"))))
        elif kind in ("thinking", "redacted_thinking"):
            found.reasoning += 1


def anthropic_body(body: Json) -> Recorded:
    """A ``Message``: ``content`` blocks, ``stop_reason``, ``usage``."""
    found = Recorded(id=body.get("id"))
    _anthropic_blocks(found, [_obj(b) for b in _list(body.get("content"))])
    found.finish = FINISH.get(str(body.get("stop_reason")), "unknown")
    if isinstance(body.get("usage"), dict):  # else usage unknown
        found.usage = _anthropic_usage(body["usage"])
    return found


def anthropic_stream(events: list[Json]) -> Recorded:
    """Messages stream events: blocks by ``index`` from their start and deltas; the usage of
    ``message_start``, updated by each ``message_delta`` (whose counts are cumulative)."""
    found = Recorded()
    stop: object = None
    blocks: dict[int, Json] = {}
    partial: dict[int, str] = {}
    usage: Json = {}
    for event in events:
        kind = event.get("type")
        if kind == "message_start":
            message = _obj(event.get("message"))
            found.id = message.get("id")
            usage.update(_obj(message.get("usage")))
        elif kind == "content_block_start":
            blocks[event["index"]] = dict(_obj(event.get("content_block")))
        elif kind == "content_block_delta":
            block, delta = blocks[event["index"]], _obj(event.get("delta"))
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            elif delta.get("type") == "input_json_delta":
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
        elif kind == "message_delta":
            stop = _obj(event.get("delta")).get("stop_reason") or stop
            usage.update({k: v for k, v in _obj(event.get("usage")).items() if v is not None})
    for index, text in partial.items():
        if blocks[index].get("type") == "tool_use" and text.strip():
            blocks[index]["input"] = _arguments(text)
    _anthropic_blocks(found, [blocks[i] for i in sorted(blocks)])
    found.finish = _stream_finish(found, stop)
    if usage:  # else usage unknown
        found.usage = _anthropic_usage(usage)
    return found


def read_recorded(api: str, response: Json) -> Recorded:
    """The facts of one recorded ``response`` (JSON ``body`` or ``sse`` text) of ``api``."""
    streamed = "sse" in response
    if api == "openai-responses":
        return (
            responses_stream(sse_events(response["sse"]))
            if streamed
            else responses_body(response["body"])
        )
    if api == "openai-chat":
        return chat_stream(sse_events(response["sse"])) if streamed else chat_body(response["body"])
    assert api == "anthropic-messages", api
    return (
        anthropic_stream(sse_events(response["sse"]))
        if streamed
        else anthropic_body(response["body"])
    )
