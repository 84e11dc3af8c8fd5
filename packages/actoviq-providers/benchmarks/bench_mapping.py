"""Per-call mapping overhead of each adapter: request build + response parse, 20-item transcript."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from actoviq.core import ModelRefParts, TextItem, ToolCallItem, ToolResultItem
from actoviq.providers import ModelRequest, ModelToolDefinition, ResolvedModel
from actoviq.providers.mapping import MappingOptions, anthropic, openai_chat, openai_responses

RESPONSES: dict[str, Any] = {
    "openai-responses": {
        "id": "resp_1",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "hi"}],
            },
            {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"q":1}'},
        ],
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
    },
    "openai-chat": {
        "id": "chatcmpl_1",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "hi",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "lookup", "arguments": '{"q":1}'},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    },
    "anthropic": {
        "id": "msg_1",
        "content": [
            {"type": "text", "text": "hi"},
            {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"q": 1}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    },
}
MODULES: dict[str, Any] = {
    "openai-responses": openai_responses,
    "openai-chat": openai_chat,
    "anthropic": anthropic,
}


def transcript() -> list[Any]:
    items: list[Any] = [TextItem(role="system", text="You are terse.")]
    for turn in range(6):
        items.append(TextItem(role="user", text=f"question {turn}"))
        items.append(ToolCallItem(id=f"c{turn}", name="lookup", input={"q": turn}))
        items.append(ToolResultItem(call_id=f"c{turn}", status="success", output={"v": turn}))
    items.append(TextItem(role="assistant", text="done"))
    return items[:20]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args()
    items = transcript()
    results: dict[str, Any] = {"transcript_items": len(items), "iterations": args.iterations}
    for provider_id, module in MODULES.items():
        model = ResolvedModel(
            provider_id=provider_id,
            model_id="m",
            ref=ModelRefParts(provider=provider_id, model="m"),
        )
        request = ModelRequest(
            model=model,
            input=items,
            tools=[ModelToolDefinition(name="lookup", input_schema={"type": "object"})],
        )
        options = MappingOptions(provider_id=provider_id)
        raw = RESPONSES[provider_id]
        for _ in range(200):  # warm-up
            module.build_request_body(request, "m", options)
            module.parse_response(raw, model, request, options)
        start = time.perf_counter()
        for _ in range(args.iterations):
            module.build_request_body(request, "m", options)
            module.parse_response(raw, model, request, options)
        per_call = (time.perf_counter() - start) / args.iterations * 1e6
        results[provider_id] = {"us_per_call": round(per_call, 2)}
        print(f"{provider_id}: {per_call:.1f} us per build+parse")
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    main()
