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

from typing import Any

import httpx2
import openai

from actoviq.providers._sdk_adapter import SDKModelProvider
from actoviq.providers.capabilities import (
    OPENAI_CHAT_COMPAT_CAPABILITIES,
    OPENAI_RESPONSES_CAPABILITIES,
    CapabilitiesSource,
    CapabilityResolver,
)
from actoviq.providers.mapping import openai_chat, openai_responses

__all__ = ["OpenAIChatProvider", "OpenAIResponsesProvider"]


class _OpenAIProvider(SDKModelProvider):
    _path = ""
    _transport_errors = (httpx2.TransportError,)

    def __init__(
        self,
        *,
        id: str,
        api_key: str | None,
        base_url: str | None,
        organization: str | None,
        http_client: httpx2.AsyncClient | None,
        client: openai.AsyncOpenAI | None,
        max_retries: int,
        timeout: float | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(id=id, errors=openai, **kwargs)
        self._client = client
        self._owns_client = client is None
        self._client_args: dict[str, Any] = {
            "api_key": api_key,
            "base_url": base_url.rstrip("/") if base_url else None,
            "organization": organization,
            "http_client": http_client,
            "max_retries": max_retries,
        }
        if timeout is not None:
            self._client_args["timeout"] = timeout

    def _sdk(self) -> openai.AsyncOpenAI:
        if self._client is None:
            args = {k: v for k, v in self._client_args.items() if v is not None}
            # The client's own key is never needed here: compatible servers may have none.
            args.setdefault("api_key", "unused")
            self._client = openai.AsyncOpenAI(**args)
        return self._client

    async def _post(
        self, body: dict[str, Any], *, stream: bool, request_timeout: float | None
    ) -> Any:
        options: Any = {"timeout": request_timeout} if request_timeout is not None else {}
        client = self._sdk()
        if stream:
            return await client.post(
                self._path,
                cast_to=object,
                body=body,
                options=options,
                stream=True,
                stream_cls=openai.AsyncStream[object],
            )
        return await client.post(self._path, cast_to=object, body=body, options=options)

    async def aclose(self) -> None:
        """Close the SDK client if this provider created it."""
        if self._owns_client and self._client is not None:
            await self._client.close()
            self._client = None


class OpenAIResponsesProvider(_OpenAIProvider):
    """OpenAI Responses API (``POST /responses``).

    Args:
        id: provider instance id (default ``"openai-responses"``).
        api_key: the API key (else ``OPENAI_API_KEY``).
        base_url: API root (default ``https://api.openai.com/v1``).
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

    def __init__(
        self,
        *,
        id: str = "openai-responses",
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
        super().__init__(
            id=id,
            api_key=api_key,
            base_url=base_url,
            organization=organization,
            http_client=http_client,
            client=client,
            max_retries=max_retries,
            timeout=timeout,
            default_capabilities=OPENAI_RESPONSES_CAPABILITIES,
            capabilities=capabilities,
            capability_resolver=capability_resolver,
            include_raw_response=include_raw_response,
            preserve_provider_items=preserve_provider_items,
            emit_provider_events=emit_provider_events,
            build_body=openai_responses.build_request_body,
            parse=openai_responses.parse_response,
            mapper=openai_responses.ResponsesStreamMapper,
        )


class OpenAIChatProvider(_OpenAIProvider):
    """OpenAI Chat Completions (``POST /chat/completions``), also for OpenAI-compatible servers.

    Takes the same arguments as :class:`OpenAIResponsesProvider` (default id ``"openai-chat"``).
    """

    _path = "/chat/completions"

    def __init__(
        self,
        *,
        id: str = "openai-chat",
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
        super().__init__(
            id=id,
            api_key=api_key,
            base_url=base_url,
            organization=organization,
            http_client=http_client,
            client=client,
            max_retries=max_retries,
            timeout=timeout,
            default_capabilities=OPENAI_CHAT_COMPAT_CAPABILITIES,
            capabilities=capabilities,
            capability_resolver=capability_resolver,
            include_raw_response=include_raw_response,
            preserve_provider_items=preserve_provider_items,
            emit_provider_events=emit_provider_events,
            build_body=openai_chat.build_request_body,
            parse=openai_chat.parse_response,
            mapper=openai_chat.ChatStreamMapper,
        )
