"""OpenAI adapters on the official ``openai`` SDK (extra ``actoviq-providers[openai]``).

:class:`OpenAIResponsesProvider` speaks the Responses API; :class:`OpenAIChatProvider` speaks Chat
Completions and works with any OpenAI-compatible server through ``base_url``. Bodies are built and
responses mapped by the pure functions in :mod:`actoviq.providers.mapping`; the SDK owns HTTP,
retries (``max_retries``), timeouts and SSE parsing. Inject ``http_client`` (an
``httpx2.AsyncClient``) to control transport, e.g. ``httpx2.MockTransport`` in tests.

Example:
    >>> provider = OpenAIChatProvider(api_key="sk-...", base_url="http://127.0.0.1:8080/v1")
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx2
import openai

from actoviq.providers._sdk_adapter import MappingApi, SDKModelProvider
from actoviq.providers.capabilities import (
    OPENAI_CHAT_COMPAT_CAPABILITIES,
    OPENAI_RESPONSES_CAPABILITIES,
    CapabilitiesSource,
    CapabilityResolver,
    ModelCapabilities,
)
from actoviq.providers.mapping import openai_chat, openai_responses

__all__ = ["OpenAIChatProvider", "OpenAIResponsesProvider"]


class _OpenAIProvider(SDKModelProvider):
    """The OpenAI client handling both adapters share; subclasses name the API and its mapping."""

    _transport_errors = (httpx2.TransportError,)
    _stream_cls = openai.AsyncStream[object]
    _default_id: ClassVar[str]
    _default_capabilities: ClassVar[ModelCapabilities]
    _api: ClassVar[MappingApi]

    def __init__(
        self,
        *,
        id: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        http_client: httpx2.AsyncClient | None = None,
        client: openai.AsyncOpenAI | None = None,
        max_retries: int = 2,
        timeout: float | None = None,
        capabilities: CapabilitiesSource | None = None,
        capability_resolver: CapabilityResolver | None = None,
        include_raw_response: bool = False,
        preserve_provider_items: bool = True,
        emit_provider_events: bool = False,
    ) -> None:
        client_args: dict[str, Any] = {
            "api_key": api_key,
            "base_url": base_url.rstrip("/") if base_url else None,
            "organization": organization,
            "http_client": http_client,
            "max_retries": max_retries,
            "timeout": timeout,
        }
        super().__init__(
            id=self._default_id if id is None else id,
            default_capabilities=self._default_capabilities,
            capabilities=capabilities,
            capability_resolver=capability_resolver,
            include_raw_response=include_raw_response,
            preserve_provider_items=preserve_provider_items,
            emit_provider_events=emit_provider_events,
            api=self._api,
            errors=openai,
            client=client,
            client_args=client_args,
        )

    def _new_client(self, args: dict[str, Any]) -> openai.AsyncOpenAI:
        # The client's own key is never needed here: compatible servers may have none.
        args.setdefault("api_key", "unused")
        return openai.AsyncOpenAI(**args)


class OpenAIResponsesProvider(_OpenAIProvider):
    """OpenAI Responses API (``POST /responses``).

    Args:
        id: provider instance id (default ``"openai-responses"``).
        api_key: the API key (else ``OPENAI_API_KEY``).
        base_url: API root (default ``https://api.openai.com/v1``).
        organization: the OpenAI organization header.
        http_client: an ``httpx2.AsyncClient`` for the SDK (inject a MockTransport in tests).
        client: a ready ``openai.AsyncOpenAI`` (then the other client arguments are unused).
        max_retries: SDK retries for 408/409/429/5xx and connection errors.
        timeout: SDK timeout in seconds (a call's deadline tightens it per request).
        capabilities: full object, ``{model | "*": caps}`` table or resolver.
        capability_resolver: applied last.
        include_raw_response: keep the whole response on ``ModelResponse.raw_response``.
        preserve_provider_items: keep unknown output as ``raw`` items (default True).
        emit_provider_events: re-emit provider stream events (default False).
    """

    _path = "/responses"
    _default_id = "openai-responses"
    _default_capabilities = OPENAI_RESPONSES_CAPABILITIES
    _api = MappingApi(
        build_body=openai_responses.build_request_body,
        parse=openai_responses.parse_response,
        mapper=openai_responses.ResponsesStreamMapper,
    )


class OpenAIChatProvider(_OpenAIProvider):
    """OpenAI Chat Completions (``POST /chat/completions``), also for OpenAI-compatible servers.

    Takes the same arguments as :class:`OpenAIResponsesProvider` (default id ``"openai-chat"``).
    """

    _path = "/chat/completions"
    _default_id = "openai-chat"
    _default_capabilities = OPENAI_CHAT_COMPAT_CAPABILITIES
    _api = MappingApi(
        build_body=openai_chat.build_request_body,
        parse=openai_chat.parse_response,
        mapper=openai_chat.ChatStreamMapper,
    )
