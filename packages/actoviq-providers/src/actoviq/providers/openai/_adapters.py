"""OpenAI adapters on the official ``openai`` SDK (extra ``actoviq-providers[openai]``).

:class:`OpenAIResponsesProvider` speaks the Responses API; :class:`OpenAIChatProvider` speaks Chat
Completions and works with any OpenAI-compatible server through ``base_url`` (with a
:class:`~actoviq.providers.mapping.chat_compat.OpenAICompat` profile for servers that differ from
the official API). Bodies are built and responses mapped by the pure functions in
:mod:`actoviq.providers.mapping`; the SDK owns HTTP, retries (``max_retries``), timeouts and SSE
parsing. Inject ``http_client`` (an ``httpx2.AsyncClient``) to control transport, e.g.
``httpx2.MockTransport`` in tests.

Example:
    >>> provider = OpenAIChatProvider(
    ...     base_url="http://127.0.0.1:8080/v1", compat="llama.cpp", require_api_key=False
    ... )
"""

from __future__ import annotations

import os
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
from actoviq.providers.errors import MissingAPIKeyError, ProviderConfigurationError
from actoviq.providers.mapping import openai_chat, openai_responses
from actoviq.providers.mapping.chat_compat import OpenAICompat, OpenAICompatLike, resolve_compat
from actoviq.providers.tool_names import OPENAI_TOOL_NAMES

__all__ = ["OpenAIChatProvider", "OpenAIResponsesProvider"]

API_KEY_ENV = "OPENAI_API_KEY"
# Given to the SDK client of a keyless server so it can be built; the Authorization header is
# omitted on every request, so this value is never sent.
_NO_KEY = "actoviq-no-api-key"


def _credentials(
    cls_name: str, api_key: str | None, base_url: str | None, require_api_key: bool
) -> tuple[str, dict[str, Any]]:
    """The key to give the SDK and the per-request headers (checked at construction)."""
    if api_key:
        return api_key, {}
    if require_api_key:
        found = os.environ.get(API_KEY_ENV)
        if found:
            return found, {}
        raise MissingAPIKeyError(
            f"{cls_name} needs an API key: pass api_key=... or set the {API_KEY_ENV} environment "
            "variable. For an OpenAI-compatible server that needs no key, pass base_url=... "
            "and require_api_key=False.",
            env_var=API_KEY_ENV,
        )
    if base_url is None:
        raise ProviderConfigurationError(
            f"{cls_name}(require_api_key=False) needs base_url=... (the server that needs no "
            f"key); the official OpenAI API always needs one (api_key= or {API_KEY_ENV})."
        )
    return _NO_KEY, {"Authorization": openai.Omit()}


class _OpenAIProvider(SDKModelProvider):
    """The OpenAI client handling both adapters share; subclasses name the API and its mapping."""

    _transport_errors = (httpx2.TransportError,)
    _timeout_errors = (httpx2.TimeoutException,)
    _stream_cls = openai.AsyncStream[object]
    tool_name_rule = OPENAI_TOOL_NAMES
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
        require_api_key: bool = True,
        capabilities: CapabilitiesSource | None = None,
        capability_resolver: CapabilityResolver | None = None,
        include_raw_response: bool = False,
        preserve_provider_items: bool = True,
        emit_provider_events: bool = False,
    ) -> None:
        headers: dict[str, Any] = {}
        key = api_key
        if client is None:  # a ready client carries its own credentials
            key, headers = _credentials(type(self).__name__, api_key, base_url, require_api_key)
        client_args: dict[str, Any] = {
            "api_key": key,
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
            request_headers=headers,
            secrets=(key,) if key and key != _NO_KEY else (),
        )

    def _new_client(self, args: dict[str, Any]) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(**args)


class OpenAIResponsesProvider(_OpenAIProvider):
    """OpenAI Responses API (``POST /responses``).

    Args:
        id: provider instance id (default ``"openai-responses"``).
        api_key: the API key (else the ``OPENAI_API_KEY`` environment variable). Without
            either, construction fails with :class:`~actoviq.providers.MissingAPIKeyError`.
        base_url: API root (default ``https://api.openai.com/v1``). A key from
            ``OPENAI_API_KEY`` is sent there too.
        organization: the OpenAI organization header.
        http_client: an ``httpx2.AsyncClient`` for the SDK (inject a MockTransport in tests).
        client: a ready ``openai.AsyncOpenAI`` (then the other client arguments are unused).
        max_retries: SDK retries for 408/409/429/5xx and connection errors.
        timeout: the SDK's HTTP timeout in seconds (a plain call's wait for the answer, a
            stream's wait for the next chunk); a call's deadline, when sooner, wins.
        require_api_key: False for a server that needs no key (only with ``base_url``): then,
            without ``api_key``, no Authorization header is sent and ``OPENAI_API_KEY`` is not
            read (so that key never reaches another server).
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

    Takes the arguments of :class:`OpenAIResponsesProvider` (default id ``"openai-chat"``) and:

    Args:
        compat: how the server differs from the official API: an
            :class:`~actoviq.providers.mapping.chat_compat.OpenAICompat` or a preset name
            (``"openai"``, ``"llama.cpp"``, ``"vllm"``, ``"ollama"``). Default: the official API.

    Example:
        >>> local = OpenAIChatProvider(
        ...     base_url="http://127.0.0.1:8080/v1", compat="llama.cpp", require_api_key=False
        ... )
    """

    _path = "/chat/completions"
    _default_id = "openai-chat"
    _default_capabilities = OPENAI_CHAT_COMPAT_CAPABILITIES
    _api = MappingApi(
        build_body=openai_chat.build_request_body,
        parse=openai_chat.parse_response,
        mapper=openai_chat.ChatStreamMapper,
    )

    def __init__(
        self,
        *,
        id: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        compat: OpenAICompatLike | None = None,
        organization: str | None = None,
        http_client: httpx2.AsyncClient | None = None,
        client: openai.AsyncOpenAI | None = None,
        max_retries: int = 2,
        timeout: float | None = None,
        require_api_key: bool = True,
        capabilities: CapabilitiesSource | None = None,
        capability_resolver: CapabilityResolver | None = None,
        include_raw_response: bool = False,
        preserve_provider_items: bool = True,
        emit_provider_events: bool = False,
    ) -> None:
        profile = resolve_compat(compat)
        super().__init__(
            id=id,
            api_key=api_key,
            base_url=base_url,
            organization=organization,
            http_client=http_client,
            client=client,
            max_retries=max_retries,
            timeout=timeout,
            require_api_key=require_api_key,
            capabilities=capabilities,
            capability_resolver=capability_resolver,
            include_raw_response=include_raw_response,
            preserve_provider_items=preserve_provider_items,
            emit_provider_events=emit_provider_events,
        )
        self._compat = profile
        self._body_options["compat"] = profile

    @property
    def compat(self) -> OpenAICompat:
        """The :class:`~actoviq.providers.mapping.chat_compat.OpenAICompat` profile in use."""
        return self._compat
