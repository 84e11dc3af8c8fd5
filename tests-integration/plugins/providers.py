"""Release-gate plugin: every canonical item type through each adapter's pure request builder.

``SHAPES`` documents, per adapter and mapped item type, the provider key each canonical field goes
to (from the vendors' request formats: Responses ``input`` items, Chat ``messages``, Anthropic
``messages`` content blocks), or why the field is not sent. The gate checks the built body against
it, so a renamed key fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness import register_provider_mapping
from wire_shapes import Omitted, WireKey, WireShape, WireShapes

from actoviq.core import CanonicalItem, ModelRefParts
from actoviq.providers import (
    ALL_CAPABILITIES,
    ModelRequest,
    ResolvedModel,
    assert_request_capabilities,
)
from actoviq.providers.mapping import MappingOptions, anthropic, openai_chat, openai_responses

Builder = Callable[..., dict[str, Any]]


def _mapper(provider_id: str, build: Builder) -> Callable[[Sequence[CanonicalItem]], Any]:
    model = ResolvedModel(
        provider_id=provider_id,
        model_id="gate-model",
        ref=ModelRefParts(provider=provider_id, model="gate-model"),
    )

    async def mapper(items: Sequence[CanonicalItem]) -> dict[str, Any]:
        request = ModelRequest(model=model, input=list(items))
        assert_request_capabilities(provider_id, model, ALL_CAPABILITIES, request)
        return build(request, model.model_id, MappingOptions(provider_id=provider_id))

    return mapper


AS_TEXT = "sent as a text note '[code] message'"
NO_SCHEMA = "sent as the assistant's JSON text; a message has no schema name"
STATUS = "no status key: an error output is sent as {'error': output}"
CALL_NAME = "the name travels on the matching tool call"
URL_IMPLIED = "the key holds the URL itself"
ERROR_NOTE = {"source": Omitted(AS_TEXT), "retryable": Omitted(AS_TEXT), "callId": Omitted(AS_TEXT)}


def _common(text: str, role: str = "role") -> dict[str, WireShape]:
    """Items sent as one text part: the path of that text (and of the message role)."""
    return {
        "text": {"role": WireKey(role), "text": WireKey(text)},
        "refusal": {"role": WireKey(role), "message": WireKey(text)},
        "structured": {
            "role": WireKey(role),
            "value": WireKey(text, "json"),
            "schemaName": Omitted(NO_SCHEMA),
        },
        "error": {
            "code": WireKey(text, "contains"),
            "message": WireKey(text, "contains"),
            **ERROR_NOTE,
        },
    }


RESPONSES: WireShapes = {
    **_common("content.0.text"),
    "image": {
        "role": WireKey("role"),
        "source.kind": Omitted(URL_IMPLIED),
        "source.url": WireKey("content.0.image_url"),
        "detail": WireKey("content.0.detail"),
    },
    "document": {
        "role": WireKey("role"),
        "source.kind": WireKey("content.0.file_data", "contains"),  # data:<type>;base64,<data>
        "source.mediaType": WireKey("content.0.file_data", "contains"),
        "source.data": WireKey("content.0.file_data", "contains"),
        "mediaType": WireKey("content.0.file_data", "contains"),
        "name": WireKey("content.0.filename"),
    },
    "tool_call": {
        "id": WireKey("call_id"),
        "name": WireKey("name"),
        "input": WireKey("arguments", "json"),
    },
    "tool_result": {
        "callId": WireKey("call_id"),
        "output": WireKey("output", "json"),
        "status": Omitted(STATUS),
        "name": Omitted(CALL_NAME),
    },
}
CHAT: WireShapes = {
    **_common("content"),
    "image": {
        "role": WireKey("role"),
        "source.kind": Omitted(URL_IMPLIED),
        "source.url": WireKey("content.0.image_url.url"),
        "detail": WireKey("content.0.image_url.detail"),
    },
    "document": {
        "role": WireKey("role"),
        "source.kind": WireKey("content.0.file.file_data", "contains"),
        "source.mediaType": WireKey("content.0.file.file_data", "contains"),
        "source.data": WireKey("content.0.file.file_data", "contains"),
        "mediaType": WireKey("content.0.file.file_data", "contains"),
        "name": WireKey("content.0.file.filename"),
    },
    "tool_call": {
        "id": WireKey("tool_calls.0.id"),
        "name": WireKey("tool_calls.0.function.name"),
        "input": WireKey("tool_calls.0.function.arguments", "json"),
    },
    "tool_result": {
        "callId": WireKey("tool_call_id"),
        "output": WireKey("content", "json"),
        "status": Omitted(STATUS),
        "name": Omitted(CALL_NAME),
    },
}
ANTHROPIC: WireShapes = {
    **_common("content.0.text"),
    "image": {
        "role": WireKey("role"),
        "source.kind": WireKey("content.0.source.type"),
        "source.url": WireKey("content.0.source.url"),
        "detail": Omitted("Anthropic image blocks have no detail setting"),
    },
    "document": {
        "role": WireKey("role"),
        "source.kind": WireKey("content.0.source.type"),
        "source.mediaType": WireKey("content.0.source.media_type"),
        "source.data": WireKey("content.0.source.data"),
        "mediaType": WireKey("content.0.source.media_type"),
        "name": WireKey("content.0.title"),
    },
    "tool_call": {
        "id": WireKey("content.0.id"),
        "name": WireKey("content.0.name"),
        "input": WireKey("content.0.input"),
    },
    "tool_result": {
        "callId": WireKey("content.0.tool_use_id"),
        "output": WireKey("content.0.content", "json"),
        "status": WireKey("content.0.is_error", values={"success": False, "error": True}),
        "name": Omitted(CALL_NAME),
    },
}

register_provider_mapping(
    "openai-responses", _mapper("openai-responses", openai_responses.build_request_body), RESPONSES
)
register_provider_mapping(
    "openai-chat", _mapper("openai-chat", openai_chat.build_request_body), CHAT
)
register_provider_mapping(
    "anthropic", _mapper("anthropic", anthropic.build_request_body), ANTHROPIC
)
