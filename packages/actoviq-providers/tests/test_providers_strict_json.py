"""Provider output becomes strict JSON (D2, D10) instead of failing item construction.

Models do send integers beyond 2^53 in tool arguments, text whose UTF-16 surrogate pair was cut
between two streamed chunks, and (attackers) arguments nested far too deep. The mapping keeps
what it can: big integers as strings, split pairs joined, lone surrogates as U+FFFD, and
unparseable or too-deep arguments as their raw text.
"""

from __future__ import annotations

from typing import Any

from providers_support import resolved_model

from actoviq.core import (
    MAX_JSON_DEPTH,
    TextItem,
    ToolCallItem,
    is_json_value,
)
from actoviq.providers import ModelRequest
from actoviq.providers.mapping import MappingOptions, openai_chat
from actoviq.providers.mapping._common import json_value

OPTIONS = MappingOptions(provider_id="openai-chat")
REQUEST = ModelRequest(model="openai-chat:test-model", input=[])


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


def _call(arguments: str) -> ToolCallItem:
    body = _completion(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": arguments},
                }
            ],
        }
    )
    response = openai_chat.parse_response(body, resolved_model("openai-chat"), REQUEST, OPTIONS)
    (call,) = [item for item in response.output if isinstance(item, ToolCallItem)]
    return call


def test_tool_arguments_with_big_integers_keep_them_as_strings() -> None:
    call = _call('{"order": 12345678901234567890, "qty": 3, "neg": -9007199254740993}')
    assert call.input == {"order": "12345678901234567890", "qty": 3, "neg": "-9007199254740993"}


def test_tool_arguments_with_escaped_surrogates_are_repaired() -> None:
    call = _call('{"q": "lone \\ud800 and pair \\ud83d\\ude00", "\\udc00": 1}')
    assert call.input == {"q": "lone \ufffd and pair \U0001f600", "\ufffd": 1}


def test_tool_arguments_nested_too_deep_are_kept_as_raw_text() -> None:
    arguments = '{"a":' * 100_000 + "1" + "}" * 100_000
    call = _call(arguments)
    assert call.input == {"raw": arguments}


def test_tool_arguments_at_the_depth_limit_are_parsed() -> None:
    depth = MAX_JSON_DEPTH - 2  # an argument object holding a value: within the limit
    arguments = '{"a":' + "[" * depth + "1" + "]" * depth + "}"
    call = _call(arguments)
    assert is_json_value(call.input)
    assert call.input != {"raw": arguments}


def test_lenient_conversion_never_recurses_and_stays_within_the_limit() -> None:
    value: Any = 1
    for _ in range(5_000):
        value = {"k": [value]}
    converted = json_value(value)
    assert is_json_value(converted)


def test_text_with_a_split_surrogate_pair_becomes_the_character() -> None:
    body = _completion({"role": "assistant", "content": "smile \ud83d\ude00 and \udfff"})
    response = openai_chat.parse_response(body, resolved_model("openai-chat"), REQUEST, OPTIONS)
    (text,) = [item for item in response.output if isinstance(item, TextItem)]
    assert text.text == "smile \U0001f600 and \ufffd"


def test_streamed_text_split_inside_a_surrogate_pair_is_joined() -> None:
    mapper = openai_chat.ChatStreamMapper(resolved_model("openai-chat"), REQUEST, OPTIONS)
    for delta in ("smile \ud83d", "\ude00 done"):
        mapper.map(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": delta}, "finish_reason": None}],
            }
        )
    mapper.map(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }
    )
    response = mapper.finalize()
    (text,) = [item for item in response.output if isinstance(item, TextItem)]
    assert text.text == "smile \U0001f600 done"
