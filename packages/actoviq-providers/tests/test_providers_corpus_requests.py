"""Issue 13 defect 2: our default request bodies against what the vendors' own clients sent.

For every request in the recorded corpus (real traffic of pydantic-ai on the official SDKs, in
``tests/data/corpus``), the adapter builds the body of the request a runtime sends by default for
the same model: a text input, the recorded request's tools (as plain function tools) when it had
any, ``tool_policy="auto"`` only when it sent a ``tool_choice``, streamed when it streamed, no
model settings. Every top-level key of our body must be one the recorded request carried too (no
output-token limit, no ``tool_choice``/``parallel_tool_calls`` without tools, no
``stream_options`` the real client did not send); a streamed Chat request asks for the usage chunk
as the real one did; an Anthropic request carries ``max_tokens`` (the API requires it) and no
recorded request asked a model for more than our table's maximum for it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
from providers_support import CORPUS, CORPUS_API, SECRET, Recorder, make_adapter

from actoviq.core import TextItem
from actoviq.providers import (
    ALL_CAPABILITIES,
    ANTHROPIC_MAX_OUTPUT_TOKENS,
    ModelRequest,
    ModelToolDefinition,
)
from actoviq.providers.output_limits import model_output_limit

FILES = sorted(CORPUS.glob("*/*.json"))
INTERACTIONS: list[tuple[str, str, dict[str, Any]]] = [
    (f"{path.parent.name}/{path.stem}#{index}", CORPUS_API[data["api"]], interaction["request"])
    for path in FILES
    for data in [json.loads(Path(path).read_text("utf-8"))]
    for index, interaction in enumerate(data["interactions"])
    if isinstance(interaction["request"].get("body"), dict)
    and interaction["request"].get("method", "POST") == "POST"
]
TOOL = ModelToolDefinition(
    name="lookup", description="Look something up.", input_schema={"type": "object"}
)


def default_request(api: str, recorded: dict[str, Any]) -> ModelRequest:
    """The request a runtime sends by default for the recorded one's model and shape."""
    has_tools = bool(recorded.get("tools"))
    return ModelRequest(
        model=f"{api}:{recorded['model']}",
        input=[TextItem(role="user", text="hi")],
        tools=[TOOL] if has_tools else None,
        tool_policy="auto" if has_tools and "tool_choice" in recorded else None,
    )


def answer(api: str, stream: bool) -> tuple[int, str, bytes]:
    if not stream:
        bodies: dict[str, Any] = {
            "openai-responses": {"id": "r", "object": "response", "status": "completed"},
            "openai-chat": {
                "id": "c",
                "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": ""}}],
            },
            "anthropic": {"id": "m", "type": "message", "content": [], "stop_reason": "end_turn"},
        }
        return 200, "application/json", json.dumps(bodies[api]).encode()
    events: dict[str, list[dict[str, Any]]] = {
        "openai-responses": [
            {"type": "response.completed", "response": {"id": "r", "status": "completed"}}
        ],
        "openai-chat": [
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
        ],
        "anthropic": [{"type": "message_start", "message": {"id": "m"}}, {"type": "message_stop"}],
    }
    text = "".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
        if "type" in event
        else f"data: {json.dumps(event)}\n\n"
        for event in events[api]
    )
    return 200, "text/event-stream", text.encode()


def test_the_corpus_is_vendored_and_covers_every_api() -> None:
    apis = {api for _, api, _ in INTERACTIONS}
    assert apis == {"openai-responses", "openai-chat", "anthropic"}
    assert len(INTERACTIONS) > 500


@pytest.mark.parametrize(
    ("label", "api", "recorded"), INTERACTIONS, ids=[label for label, _, _ in INTERACTIONS]
)
async def test_default_body_sends_only_what_the_vendor_client_sent(
    label: str, api: str, recorded: dict[str, Any]
) -> None:
    body_recorded = cast(dict[str, Any], recorded["body"])
    stream = bool(body_recorded.get("stream"))
    recorder = Recorder([answer(api, stream)])
    async with make_adapter(api, recorder, capabilities=ALL_CAPABILITIES) as provider:
        request = default_request(api, body_recorded)
        if stream:
            await provider.stream(request).final_response()
        else:
            await provider.generate(request)
    ours = recorder.bodies()[0]
    assert SECRET not in json.dumps(ours)
    extra = set(ours) - set(body_recorded)
    if not stream:
        extra.discard("stream")  # stream: false equals an absent stream
    assert not extra, f"{label}: we send {sorted(extra)}, the vendor's client did not"
    if api == "openai-chat" and stream:
        assert ours["stream_options"] == body_recorded["stream_options"]
    if api == "anthropic":
        maximum = model_output_limit(body_recorded["model"], ANTHROPIC_MAX_OUTPUT_TOKENS)
        assert isinstance(ours["max_tokens"], int) and ours["max_tokens"] > 0
        if maximum is not None:
            assert ours["max_tokens"] <= maximum
            assert body_recorded["max_tokens"] <= maximum, "our table is below a real request"
