"""Anthropic Messages adapter on the official ``anthropic`` SDK (extra ``[anthropic]``).

Bodies are built and responses mapped by :mod:`actoviq.providers.mapping.anthropic`; the SDK owns
HTTP, retries, timeouts and SSE parsing. One credential is sent: ``auth_token`` (Bearer) wins
over ``api_key`` (``x-api-key``). Inject ``http_client`` (an ``httpx2.AsyncClient``) to control
the transport.

Example:
    >>> provider = AnthropicProvider(api_key="sk-ant-...")
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2

from actoviq.providers._sdk_adapter import MappingApi, SDKModelProvider
from actoviq.providers.capabilities import (
    ANTHROPIC_MESSAGES_CAPABILITIES,
    CapabilitiesSource,
    CapabilityResolver,
)
from actoviq.providers.mapping import anthropic as mapping

__all__ = ["AnthropicProvider"]

_MESSAGES_API = MappingApi(
    build_body=mapping.build_request_body,
    parse=mapping.parse_response,
    mapper=mapping.AnthropicStreamMapper,
)


class AnthropicProvider(SDKModelProvider):
    """Anthropic Messages API (``POST /v1/messages``).

    Args:
        id: provider instance id (default ``"anthropic"``).
        api_key: sent as ``x-api-key`` (else ``ANTHROPIC_API_KEY``).
        auth_token: sent as ``Authorization: Bearer`` instead of the key.
        base_url: API root (default ``https://api.anthropic.com``).
        http_client: an ``httpx2.AsyncClient`` for the SDK.
        client: a ready ``anthropic.AsyncAnthropic``.
        max_retries, timeout: SDK retry count and timeout (seconds).
        capabilities, capability_resolver, include_raw_response, preserve_provider_items,
            emit_provider_events: as for the OpenAI adapters.
    """

    _transport_errors = (httpx2.TransportError,)
    _path = "/v1/messages"
    _stream_cls = anthropic.AsyncStream[object]

    def __init__(
        self,
        *,
        id: str = "anthropic",
        api_key: str | None = None,
        auth_token: str | None = None,
        base_url: str | None = None,
        http_client: httpx2.AsyncClient | None = None,
        client: anthropic.AsyncAnthropic | None = None,
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
            default_capabilities=ANTHROPIC_MESSAGES_CAPABILITIES,
            capabilities=capabilities,
            capability_resolver=capability_resolver,
            include_raw_response=include_raw_response,
            preserve_provider_items=preserve_provider_items,
            emit_provider_events=emit_provider_events,
            api=_MESSAGES_API,
            errors=anthropic,
            client=client,
            client_args=_credential(
                {
                    "base_url": base_url.rstrip("/") if base_url else None,
                    "http_client": http_client,
                    "max_retries": max_retries,
                    "timeout": timeout,
                },
                api_key=api_key,
                auth_token=auth_token,
            ),
        )

    def _new_client(self, args: dict[str, Any]) -> anthropic.AsyncAnthropic:
        if "auth_token" not in args and "api_key" not in args:
            args["api_key"] = None  # the SDK reads ANTHROPIC_API_KEY
        return anthropic.AsyncAnthropic(**args)


def _credential(
    args: dict[str, Any], *, api_key: str | None, auth_token: str | None
) -> dict[str, Any]:
    """``args`` with the one credential sent: the Bearer token wins over the API key."""
    if auth_token is not None:
        return {**args, "auth_token": auth_token}
    if api_key is not None:
        return {**args, "api_key": api_key}
    return args
