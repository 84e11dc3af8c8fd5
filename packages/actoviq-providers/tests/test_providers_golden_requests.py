"""Golden request vectors (golden ``provider-requests``): preflight and request bodies.

1. When the reference's preflight with the adapter's default capabilities failed, the port's
   preflight raises a ``CapabilityError`` with the same ``to_json()`` (before any network call).
2. The body built by the pure builder is compared (type-strict for bools) with
   ``python_port_expected_body_derived`` if present, else ``body``, after applying exactly what the
   vector's ``decision_override`` says (the ``OVERRIDES`` table; every note must be handled).
3. ``reference_body`` / ``reference_error`` vectors must raise a typed error even with every
   capability enabled, or (where ``python_port`` allows it) map to the port's documented form.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from providers_support import assert_json_equal, golden_vectors, resolved_model

from actoviq.core import CapabilityError, UnknownItemTypeError, from_json
from actoviq.providers import (
    ALL_CAPABILITIES,
    ANTHROPIC_MESSAGES_CAPABILITIES,
    OPENAI_CHAT_COMPAT_CAPABILITIES,
    OPENAI_RESPONSES_CAPABILITIES,
    ModelRequest,
    ProviderOptionsError,
    assert_request_capabilities,
)
from actoviq.providers.mapping import MappingOptions, anthropic, openai_chat, openai_responses

pytestmark = pytest.mark.oracle
Json = Any
Override = Callable[[Json, Json], None]  # (expected body, request wire JSON)
BUILDERS: dict[str, Any] = {
    "openai-responses": openai_responses.build_request_body,
    "openai-chat": openai_chat.build_request_body,
    "anthropic": anthropic.build_request_body,
}
DEFAULTS = {
    "openai-responses": OPENAI_RESPONSES_CAPABILITIES,
    "openai-chat": OPENAI_CHAT_COMPAT_CAPABILITIES,
    "anthropic": ANTHROPIC_MESSAGES_CAPABILITIES,
}


VECTORS = golden_vectors("provider-requests")
IDS = [f"{adapter}:{vector['name']}" for adapter, vector in VECTORS]


def _build(adapter: str, request: ModelRequest) -> dict[str, Any]:
    return BUILDERS[adapter](request, "test-model", MappingOptions(provider_id=adapter))


# --- decision overrides --------------------------------------------------------------------------


def responses_file_data(expected: Json, request: Json) -> None:
    """02 §6.8 item 8: ``file_data`` is a data URL and carries ``filename``."""
    document = request["input"][0]
    part = expected["input"][0]["content"][0]
    part["file_data"] = f"data:{document['source']['mediaType']};base64,{part['file_data']}"
    part["filename"] = document["name"]


def no_hosted_name(expected: Json, request: Json) -> None:
    """02 §6.8 item 7: no ``name`` on hosted tools whose type does not need one."""
    for tool in expected["tools"]:
        if tool.get("type") not in ("function", "custom"):
            tool.pop("name", None)


def error_status_wrapped(key: str) -> Override:
    """02 §6.8 item 5: an error result is sent as ``{"error": <output>}`` (documented form)."""

    def apply(expected: Json, request: Json) -> None:
        errors = {
            item["callId"]: item["output"]
            for item in request["input"]
            if item["type"] == "tool_result" and item["status"] == "error"
        }
        entries = expected["input"] if key == "input" else expected["messages"]
        for entry in entries:
            if entry.get("type") != "function_call_output" and entry.get("role") != "tool":
                continue
            call_id = entry.get("call_id", entry.get("tool_call_id"))
            if call_id in errors:
                field = "output" if key == "input" else "content"
                wrapped = {"error": errors[call_id]}
                entry[field] = json.dumps(wrapped, separators=(",", ":"), ensure_ascii=False)

    return apply


# The port's documented effort mapping (normalize_effort in mapping/_common.py): one rule, the
# strongest supported effort not above the request, else the weakest supported.
EFFORTS = {
    ("openai-responses", "max"): "xhigh",
    ("openai-responses", "minimal"): "minimal",
    ("openai-chat", "max"): "xhigh",
    ("openai-chat", "minimal"): "minimal",
    ("anthropic", "max"): "max",
    ("anthropic", "minimal"): "low",
}


def effort(adapter: str) -> Override:
    """02 §6.8 item 10: the documented effort mapping; other keys must match."""

    def apply(expected: Json, request: Json) -> None:
        wanted = EFFORTS[adapter, request["reasoning"]["effort"]]
        if adapter == "openai-responses":
            expected["reasoning"]["effort"] = wanted
        elif adapter == "openai-chat":
            expected["reasoning_effort"] = wanted
        else:
            expected["output_config"]["effort"] = wanted

    return apply


def document_title(expected: Json, request: Json) -> None:
    """02 §6.8 item 8: Anthropic document ``title`` from the item name."""
    names = [item["name"] for item in request["input"] if item["type"] == "document"]
    blocks = [
        block
        for message in expected["messages"]
        for block in message["content"]
        if block.get("type") == "document"
    ]
    for block, name in zip(blocks, names, strict=True):
        block["title"] = name


def declared_tool_fields(expected: Json, request: Json) -> None:
    """02 §6.8 item 7: provider options cannot override ``name`` / ``input_schema``."""
    for body_tool, tool in zip(expected["tools"], request["tools"], strict=True):
        body_tool["name"] = tool["name"]
        body_tool["input_schema"] = tool["inputSchema"]


def drop_non_object_reasoning(expected: Json, request: Json) -> None:
    """02 §6.8 item 10: reasoning with a non-object opaque is dropped (user + assistant left)."""
    expected["messages"] = [
        message
        for message in expected["messages"]
        if not any(block.get("type") == "thinking" for block in message["content"])
    ]


def anthropic_user_id_only(expected: Json, request: Json) -> None:
    """02 §6.8 item 6: only a string ``metadata.user_id`` is forwarded."""
    user_id = request["metadata"].get("user_id")
    if isinstance(user_id, str):
        expected["metadata"] = {"user_id": user_id}
    else:
        del expected["metadata"]


RAISES = "raises ProviderOptionsError"  # 02 §6.8 item 15: the port raises (a ValueError)
UNGROUPED = "the port does not group"  # 02 §6.8 item 1 is optional for Anthropic: not grouped
OVERRIDES: dict[tuple[str, str], list[Override] | str] = {
    ("openai-responses", "document-base64"): [responses_file_data],
    ("openai-responses", "hosted-tool"): [no_hosted_name],
    ("openai-responses", "tool-result-error-status"): [error_status_wrapped("input")],
    ("openai-responses", "reasoning-request-max-budget"): [effort("openai-responses")],
    ("openai-responses", "reasoning-request-minimal"): [effort("openai-responses")],
    ("openai-responses", "provider-options-reserved-keys"): RAISES,
    ("openai-responses", "provider-options-non-object"): RAISES,
    # Chat grouping (item 1): python_port_expected_body_derived is the expected body as is.
    ("openai-chat", "tool-call-history"): [],
    ("openai-chat", "parallel-tool-calls-history"): [],
    ("openai-chat", "tool-result-error-status"): [error_status_wrapped("messages")],
    ("openai-chat", "reasoning-request-max-budget"): [effort("openai-chat")],
    ("openai-chat", "reasoning-request-minimal"): [effort("openai-chat")],
    ("openai-chat", "provider-options-reserved-keys"): RAISES,
    ("openai-chat", "provider-options-non-object"): RAISES,
    ("anthropic", "unicode-and-empty-text"): UNGROUPED,
    ("anthropic", "image-url-detail"): UNGROUPED,
    ("anthropic", "image-base64"): UNGROUPED,
    ("anthropic", "document-url"): [document_title],
    ("anthropic", "document-base64"): [document_title],
    ("anthropic", "document-file"): [document_title],
    ("anthropic", "tool-provider-options-override"): [declared_tool_fields],
    ("anthropic", "tool-call-history"): UNGROUPED,
    ("anthropic", "parallel-tool-calls-history"): UNGROUPED,
    ("anthropic", "reasoning-roundtrip-same-provider"): UNGROUPED,
    ("anthropic", "reasoning-redacted-thinking"): UNGROUPED,
    ("anthropic", "reasoning-non-dict-opaque"): [drop_non_object_reasoning],
    ("anthropic", "reasoning-request-max-budget"): [effort("anthropic")],
    ("anthropic", "reasoning-request-minimal"): [effort("anthropic")],
    ("anthropic", "metadata-strings"): [anthropic_user_id_only],
    ("anthropic", "metadata-non-string-values"): [anthropic_user_id_only],
    ("anthropic", "provider-options-reserved-keys"): RAISES,
    ("anthropic", "provider-options-non-object"): RAISES,
    ("anthropic", "structured-refusal-error-history"): UNGROUPED,
}

# reference_body vectors whose python_port allows mapping instead of rejecting: the port maps
# Chat documents to ``file`` parts (02 §6.8 item 8), with capability ``input.document`` enabled.
CHAT_FILE_PARTS: dict[str, Json] = {
    "document-base64": {
        "type": "file",
        "file": {"file_data": "data:application/pdf;base64,JVBERi0xLjQK", "filename": "report.pdf"},
    },
    "document-file": {"type": "file", "file": {"file_id": "file-doc-1", "filename": "notes.txt"}},
}


def _preflight_then_build(adapter: str, request: ModelRequest) -> None:
    assert_request_capabilities(adapter, resolved_model(adapter), ALL_CAPABILITIES, request)
    _build(adapter, request)


def test_every_override_note_is_handled() -> None:
    noted = {
        (adapter, vector["name"])
        for adapter, vector in VECTORS
        if "decision_override" in vector
        and "reference_body" not in vector
        and "reference_error" not in vector
    }
    assert noted == set(OVERRIDES)


@pytest.mark.parametrize(("adapter", "vector"), VECTORS, ids=IDS)
def test_golden_preflight_with_default_capabilities(adapter: str, vector: dict[str, Any]) -> None:
    try:
        request = from_json(ModelRequest, vector["request"])
    except UnknownItemTypeError:
        assert "python_port" in vector or "reference_error" in vector
        return
    outcome = vector["preflight_default_capabilities"]
    if "python_port" in vector and vector["name"] == "reasoning-other-provider":
        # S8 / 02 §6.8 item 10: the port refuses another provider's reasoning in preflight,
        # before (and instead of) the reference's capability result.
        with pytest.raises(CapabilityError, match="Reasoning item for provider other-provider"):
            assert_request_capabilities(
                adapter, resolved_model(adapter), DEFAULTS[adapter], request
            )
        return
    if outcome["ok"]:
        assert_request_capabilities(adapter, resolved_model(adapter), DEFAULTS[adapter], request)
        return
    with pytest.raises(CapabilityError) as info:
        assert_request_capabilities(adapter, resolved_model(adapter), DEFAULTS[adapter], request)
    wanted = copy.deepcopy(outcome["error"]["toJSON"])
    if vector["name"] == "raw-other-provider":
        # 02 §6.6: the port fixes the reference's model=providerId in the raw-ownership error.
        assert wanted["details"]["model"] == adapter
        wanted["details"]["model"] = "test-model"
    assert_json_equal(wanted, info.value.to_json(), vector["name"])


@pytest.mark.parametrize(("adapter", "vector"), VECTORS, ids=IDS)
def test_golden_request_body(adapter: str, vector: dict[str, Any]) -> None:
    try:
        request = from_json(ModelRequest, vector["request"])
    except UnknownItemTypeError:  # unknown item type: a typed refusal when loading
        assert "python_port" in vector
        return
    if "reference_body" in vector or "reference_error" in vector:
        if adapter == "openai-chat" and vector["name"] in CHAT_FILE_PARTS:
            assert "or map it to a Chat file part" in vector["python_port"]
            body = _build(adapter, request)
            assert_json_equal(CHAT_FILE_PARTS[vector["name"]], body["messages"][0]["content"][0])
            assert '"kind"' not in json.dumps(body)  # never the canonical dict
            return
        with pytest.raises((CapabilityError, ValueError)):
            _preflight_then_build(adapter, request)
        return
    override = OVERRIDES.get((adapter, vector["name"]), [])
    if override == RAISES:
        with pytest.raises(ProviderOptionsError):
            _build(adapter, request)
        return
    expected = copy.deepcopy(vector.get("python_port_expected_body_derived", vector["body"]))
    for apply in override if isinstance(override, list) else []:
        apply(expected, vector["request"])
    assert_json_equal(expected, _build(adapter, request), vector["name"])
    streamed = BUILDERS[adapter](
        request, "test-model", MappingOptions(provider_id=adapter), stream=True
    )
    rule = {"stream": True}
    if adapter == "openai-chat":
        rule["stream_options"] = {"include_usage": True}  # type: ignore[assignment]
    assert_json_equal({**expected, **rule}, streamed, f"{vector['name']} (stream)")
