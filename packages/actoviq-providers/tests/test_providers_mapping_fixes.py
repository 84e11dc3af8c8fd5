"""02 §6.8 items 8 (documents) and 10 (reasoning) across the three request builders."""

from __future__ import annotations

from typing import Any

import pytest

from actoviq.core import (
    Base64Source,
    DocumentItem,
    FileSource,
    ReasoningItem,
    TextItem,
    UnsupportedItemError,
    UrlSource,
)
from actoviq.providers import ModelReasoningRequest, ModelRequest
from actoviq.providers.mapping import MappingOptions, anthropic, openai_chat, openai_responses
from actoviq.providers.mapping._common import (
    ANTHROPIC_EFFORTS,
    EFFORT_ORDER,
    OPENAI_EFFORTS,
    normalize_effort,
)

PDF = Base64Source(media_type="application/pdf", data="JVBERi0=")


def _body(module: Any, provider: str, *items: Any, **kwargs: Any) -> dict[str, Any]:
    request = ModelRequest(model=f"{provider}:m", input=list(items), **kwargs)
    return module.build_request_body(request, "m", MappingOptions(provider_id=provider))


def test_responses_documents_use_data_urls_and_filenames() -> None:
    body = _body(openai_responses, "openai-responses", DocumentItem(source=PDF))
    part = body["input"][0]["content"][0]
    assert part == {
        "type": "input_file",
        "file_data": "data:application/pdf;base64,JVBERi0=",
        "filename": "document",
    }
    named = _body(openai_responses, "openai-responses", DocumentItem(source=PDF, name="a.pdf"))
    assert named["input"][0]["content"][0]["filename"] == "a.pdf"
    by_url = _body(openai_responses, "openai-responses", DocumentItem(source=UrlSource(url="u")))
    assert by_url["input"][0]["content"][0] == {"type": "input_file", "file_url": "u"}


def test_chat_documents_are_file_parts_and_urls_are_refused() -> None:
    body = _body(openai_chat, "openai-chat", DocumentItem(source=PDF, name="r.pdf"))
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {
                    "type": "file",
                    "file": {
                        "file_data": "data:application/pdf;base64,JVBERi0=",
                        "filename": "r.pdf",
                    },
                }
            ],
        }
    ]
    by_id = _body(openai_chat, "openai-chat", DocumentItem(source=FileSource(file_id="file-1")))
    assert by_id["messages"][0]["content"][0] == {"type": "file", "file": {"file_id": "file-1"}}
    with pytest.raises(UnsupportedItemError, match="no document URL"):
        _body(openai_chat, "openai-chat", DocumentItem(source=UrlSource(url="https://x/d.pdf")))
    with pytest.raises(UnsupportedItemError, match="user input"):
        _body(openai_chat, "openai-chat", DocumentItem(source=PDF, role="assistant"))


def test_anthropic_document_title_from_name() -> None:
    body = _body(anthropic, "anthropic", DocumentItem(source=PDF, name="spec.pdf"))
    block = body["messages"][0]["content"][0]
    assert block["title"] == "spec.pdf" and block["source"]["type"] == "base64"
    untitled = _body(anthropic, "anthropic", DocumentItem(source=PDF))
    assert "title" not in untitled["messages"][0]["content"][0]


def test_responses_store_false_includes_encrypted_reasoning() -> None:
    hi = TextItem(role="user", text="hi")
    plain = _body(openai_responses, "openai-responses", hi)
    assert "include" not in plain
    stored = _body(
        openai_responses,
        "openai-responses",
        hi,
        provider_options={"openai-responses": {"store": False}},
    )
    assert stored["store"] is False and stored["include"] == ["reasoning.encrypted_content"]
    kept = _body(
        openai_responses,
        "openai-responses",
        hi,
        provider_options={
            "openai-responses": {"store": False, "include": ["message.output_text.logprobs"]}
        },
    )
    assert kept["include"] == ["message.output_text.logprobs", "reasoning.encrypted_content"]
    on_server = _body(
        openai_responses,
        "openai-responses",
        hi,
        provider_options={"openai-responses": {"store": True}},
    )
    assert "include" not in on_server


@pytest.mark.parametrize("effort", EFFORT_ORDER)
def test_effort_normalisation_is_one_rule(effort: str) -> None:
    hi = TextItem(role="user", text="hi")
    reasoning = ModelReasoningRequest(effort=effort)  # type: ignore[arg-type]
    responses = _body(openai_responses, "openai-responses", hi, reasoning=reasoning)
    chat = _body(openai_chat, "openai-chat", hi, reasoning=reasoning)
    messages = _body(anthropic, "anthropic", hi, reasoning=reasoning)
    openai_expected = {"max": "xhigh"}.get(effort, effort)
    anthropic_expected = {"none": "low", "minimal": "low", "xhigh": "high"}.get(effort, effort)
    assert responses["reasoning"]["effort"] == openai_expected
    assert chat["reasoning_effort"] == openai_expected  # the reference sent max as "high"
    assert messages["output_config"]["effort"] == anthropic_expected
    assert normalize_effort(effort, OPENAI_EFFORTS) in OPENAI_EFFORTS
    assert normalize_effort(effort, ANTHROPIC_EFFORTS) in ANTHROPIC_EFFORTS


def test_anthropic_drops_reasoning_with_non_object_opaque() -> None:
    body = _body(
        anthropic,
        "anthropic",
        TextItem(role="user", text="q"),
        ReasoningItem(provider="anthropic", opaque="free text"),
        ReasoningItem(
            provider="anthropic", opaque={"type": "thinking", "thinking": "t", "signature": "s"}
        ),
    )
    assert [m["content"][0]["type"] for m in body["messages"]] == ["text", "thinking"]


def test_anthropic_metadata_user_id_only() -> None:
    hi = TextItem(role="user", text="hi")
    body = _body(anthropic, "anthropic", hi, metadata={"user_id": "u1", "other": "x"})
    assert body["metadata"] == {"user_id": "u1"}
    assert "metadata" not in _body(anthropic, "anthropic", hi, metadata={"count": 3})
