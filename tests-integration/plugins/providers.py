"""Release-gate plugin: every canonical item type through each adapter's pure request builder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness import register_provider_mapping

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


register_provider_mapping(
    "openai-responses", _mapper("openai-responses", openai_responses.build_request_body)
)
register_provider_mapping("openai-chat", _mapper("openai-chat", openai_chat.build_request_body))
register_provider_mapping("anthropic", _mapper("anthropic", anthropic.build_request_body))
