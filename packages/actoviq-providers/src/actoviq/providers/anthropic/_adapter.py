"""Anthropic Messages adapter on the official ``anthropic`` SDK (extra ``[anthropic]``).

Bodies are built and responses mapped by :mod:`actoviq.providers.mapping.anthropic`; the SDK owns
HTTP, retries, timeouts and SSE parsing. One credential is sent: ``auth_token`` (Bearer) wins
over ``api_key``. Inject ``http_client`` (an ``httpx2.AsyncClient``) to control the transport.

The Messages API requires ``max_tokens``: a request without ``max_output_tokens`` gets its
model's maximum output (:mod:`actoviq.providers.output_limits`).

Example:
    >>> provider = AnthropicProvider(api_key="sk-ant-...")
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import anthropic
import httpx2

from actoviq.providers._sdk_adapter import MappingApi, SDKModelProvider
from actoviq.providers.capabilities import (
    ANTHROPIC_MESSAGES_CAPABILITIES,
    CapabilitiesSource,
    CapabilityResolver,
)
from actoviq.providers.errors import MissingAPIKeyError, ProviderConfigurationError
from actoviq.providers.mapping import anthropic as mapping
from actoviq.providers.tool_names import ANTHROPIC_TOOL_NAMES

__all__ = ["AnthropicProvider"]

API_KEY_ENV = "ANTHROPIC_API_KEY"
AUTH_TOKEN_ENV = "ANTHROPIC_AUTH_TOKEN"

_MESSAGES_API = MappingApi(
    build_body=mapping.build_request_body,
    parse=mapping.parse_response,
    mapper=mapping.AnthropicStreamMapper,
)


class AnthropicProvider(SDKModelProvider):
    """Anthropic Messages API (``POST /v1/messages``).

    Args:
        id: provider instance id (default ``"anthropic"``).
        api_key: the API key (else ``ANTHROPIC_API_KEY``).
        auth_token: a Bearer token sent instead of the key (else ``ANTHROPIC_AUTH_TOKEN``).
            Without a key or token, construction fails with
            :class:`~actoviq.providers.MissingAPIKeyError`.
        base_url: API root (default ``https://api.anthropic.com``).
        http_client: an ``httpx2.AsyncClient`` for the SDK.
        client: a ready ``anthropic.AsyncAnthropic`` (then the other client arguments are unused).
        max_retries: SDK retries for 408/409/429/5xx and connection errors.
        timeout: the SDK's HTTP timeout in seconds; a call's deadline, when sooner, wins.
        require_api_key: False for a compatible server that needs no credential (only with
            ``base_url``): then, without ``api_key``/``auth_token``, none is sent and the
            environment variables are not read.
        output_token_limits: ``{model-name prefix: maximum output tokens}`` over the built-in
            table (``"*"`` replaces the 4,096 fallback): the ``max_tokens`` sent when a request
            sets no ``max_output_tokens``.
        capabilities: as for the OpenAI adapters.
        capability_resolver: as for the OpenAI adapters.
        include_raw_response: as for the OpenAI adapters.
        preserve_provider_items: as for the OpenAI adapters.
        emit_provider_events: as for the OpenAI adapters.
    """

    _transport_errors = (httpx2.TransportError,)
    _timeout_errors = (httpx2.TimeoutException,)
    _path = "/v1/messages"
    _stream_cls = anthropic.AsyncStream[object]
    tool_name_rule = ANTHROPIC_TOOL_NAMES

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
        require_api_key: bool = True,
        output_token_limits: Mapping[str, int] | None = None,
        capabilities: CapabilitiesSource | None = None,
        capability_resolver: CapabilityResolver | None = None,
        include_raw_response: bool = False,
        preserve_provider_items: bool = True,
        emit_provider_events: bool = False,
    ) -> None:
        args: dict[str, Any] = {
            "base_url": base_url.rstrip("/") if base_url else None,
            "http_client": http_client,
            "max_retries": max_retries,
            "timeout": timeout,
        }
        headers: dict[str, Any] = {}
        secret: str | None = None
        if client is None:  # a ready client carries its own credentials
            credential = _credential(api_key, auth_token, base_url, require_api_key)
            if credential is None:
                headers = {"Authorization": anthropic.Omit(), "X-Api-Key": anthropic.Omit()}
            else:
                args[credential[0]] = secret = credential[1]
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
            client_args=args,
            body_options={"output_token_limits": dict(output_token_limits or {})},
            request_headers=headers,
            secrets=(secret,) if secret else (),
        )

    def _new_client(self, args: dict[str, Any]) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(**args)


def _credential(
    api_key: str | None, auth_token: str | None, base_url: str | None, require_api_key: bool
) -> tuple[str, str] | None:
    """``(client argument, value)`` of the one credential sent, or None for a keyless server.

    The Bearer token wins over the API key; the environment is read only when a credential is
    required.
    """
    if auth_token:
        return "auth_token", auth_token
    if api_key:
        return "api_key", api_key
    if require_api_key:
        token = os.environ.get(AUTH_TOKEN_ENV)
        if token:
            return "auth_token", token
        key = os.environ.get(API_KEY_ENV)
        if key:
            return "api_key", key
        raise MissingAPIKeyError(
            f"AnthropicProvider needs an API key: pass api_key=... or set the {API_KEY_ENV} "
            f"environment variable (or auth_token=... / {AUTH_TOKEN_ENV}). For a compatible "
            "server that needs none, pass base_url=... and require_api_key=False.",
            env_var=API_KEY_ENV,
        )
    if base_url is None:
        raise ProviderConfigurationError(
            "AnthropicProvider(require_api_key=False) needs base_url=... (the server that needs "
            f"no key); the Anthropic API always needs one (api_key= or {API_KEY_ENV})."
        )
    return None
