"""SDK exceptions as our typed errors, with messages that say what failed and how to fix it.

No SDK import here: the adapter passes its SDK module (its exception classes) in. Every message
names the provider and, for HTTP failures, the URL (without user info or query string) and the
server's own message; configured secrets are replaced by ``***`` wherever they would appear.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from actoviq.core import ProviderResponseError, ProviderTransportError
from actoviq.providers.errors import ModelCallTimeoutError
from actoviq.providers.mapping._common import as_dict

__all__ = [
    "RETRYABLE_STATUSES",
    "SDKErrors",
    "is_retryable_status",
    "map_sdk_error",
    "provider_message",
    "public_url",
    "scrub",
]

RETRYABLE_STATUSES = frozenset({408, 409, 429})
_MESSAGE_LIMIT = 500  # characters of a server message kept in ours


def is_retryable_status(status: int) -> bool:
    """408, 409, 429 and every 5xx are worth retrying (the SDKs retry the same set)."""
    return status in RETRYABLE_STATUSES or status >= 500


class SDKErrors(Protocol):
    """The exception classes an SDK module exposes (``openai`` and ``anthropic`` both do)."""

    APIStatusError: type[Exception]
    APITimeoutError: type[Exception]
    APIConnectionError: type[Exception]
    APIError: type[Exception]


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every configured secret replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def public_url(url: object) -> str | None:
    """``url`` without user info, query or fragment (they may hold credentials), or None."""
    if url is None:
        return None
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def request_url(error: BaseException) -> str | None:
    """The public URL of the request an SDK or HTTP error belongs to, when it has one."""
    try:
        request: Any = getattr(error, "request", None)
    except RuntimeError:  # httpx2 errors raise when no request is attached
        return None
    return public_url(getattr(request, "url", None)) if request is not None else None


def provider_message(body: object) -> str | None:
    """The server's own message from an error body (JSON object or plain text)."""
    if isinstance(body, str):
        text = body.strip()
        return text[:_MESSAGE_LIMIT] if text else None
    data = as_dict(body)
    if data is None:
        return None
    error = as_dict(data.get("error"))
    if error is not None and isinstance(error.get("message"), str):
        return error["message"][:_MESSAGE_LIMIT]
    if isinstance(data.get("error"), str):
        return str(data["error"])[:_MESSAGE_LIMIT]
    for key in ("message", "detail"):  # "detail": FastAPI-based servers (llama-cpp-python)
        value = data.get(key)
        if isinstance(value, str) and value:
            return value[:_MESSAGE_LIMIT]
        if isinstance(value, list) and value:
            first = as_dict(value[0])  # pyright: ignore[reportUnknownArgumentType]
            if first is not None and isinstance(first.get("msg"), str):
                return str(first["msg"])[:_MESSAGE_LIMIT]
    return None


def _reason(error: BaseException) -> str:
    """The low-level reason of a connection failure (the HTTP library's own message)."""
    cause = error.__cause__ or error.__context__
    for candidate in (cause, error):
        if candidate is None:
            continue
        text = str(candidate).strip()
        if text and text not in ("Connection error.", "Request timed out."):
            return f"{type(candidate).__name__}: {text}"
    return type(cause or error).__name__


def timeout_error(
    provider_id: str, url: str | None, *, deadline_bound: bool, limit: float | None
) -> ModelCallTimeoutError:
    """The timeout as ``MODEL_CALL_TIMEOUT``: retryable when the provider's own timeout fired.

    When the call's deadline was the tighter bound, the deadline passed: not retryable.
    """
    where = f" to {url}" if url else ""
    if deadline_bound:
        return ModelCallTimeoutError(
            f"Model call deadline exceeded: provider {provider_id} request{where} did not "
            "finish before the call's deadline."
        )
    after = f" after {limit:g} s" if limit is not None else ""
    return ModelCallTimeoutError(
        f"Provider {provider_id} request{where} timed out{after} (the provider's timeout; "
        "raise timeout= if the model needs longer).",
        retryable=True,
    )


def map_sdk_error(
    error: BaseException,
    errors: SDKErrors,
    provider_id: str,
    *,
    secrets: Iterable[str] = (),
    deadline_bound: bool = False,
    timeout: float | None = None,
) -> BaseException:
    """An SDK exception as our typed error (the original is kept as ``__cause__``).

    Returns ``error`` itself when it is not an SDK exception.
    """
    secret_list = tuple(secrets)
    mapped = _map(error, errors, provider_id, deadline_bound=deadline_bound, timeout=timeout)
    if mapped is not error and secret_list and hasattr(mapped, "message"):
        message = scrub(str(getattr(mapped, "message", "")), secret_list)
        mapped.args = (message,)
        mapped.message = message  # type: ignore[attr-defined]
    return mapped


def _map(
    error: BaseException,
    errors: SDKErrors,
    provider_id: str,
    *,
    deadline_bound: bool,
    timeout: float | None,
) -> BaseException:
    url = request_url(error)
    if isinstance(error, errors.APITimeoutError):
        mapped = timeout_error(provider_id, url, deadline_bound=deadline_bound, limit=timeout)
        mapped.__cause__ = error
        return mapped
    if isinstance(error, errors.APIStatusError):
        status = int(getattr(error, "status_code", 0) or 0)
        body = getattr(error, "body", None)
        message = provider_message(body)
        if status < 400:  # an error event inside a 200 stream
            error_body = as_dict(body) or {}
            kind = (as_dict(error_body.get("error")) or {}).get("type")
            return ProviderResponseError(
                f"Provider {provider_id} stream failed: {message or kind or 'error event'}.",
                provider_id=provider_id,
                retryable=kind in ("overloaded_error", "rate_limit_error", "api_error"),
                cause=error,
            )
        where = f" to {url}" if url else ""
        suffix = f": {message}" if message else ""
        hint = ""
        if status == 404:
            hint = " (check base_url and the model name: does this server implement this API?)"
        elif status in (401, 403):
            hint = " (check the API key)"
        return ProviderTransportError(
            f"Provider {provider_id} request{where} failed with HTTP {status}{suffix}{hint}.",
            provider_id=provider_id,
            status=status,
            retryable=is_retryable_status(status),
            details={"url": url} if url else None,
            cause=error,
        )
    if isinstance(error, errors.APIConnectionError):
        return connection_error(provider_id, error, url)
    if isinstance(error, errors.APIError):
        message = provider_message(getattr(error, "body", None)) or "error event"
        return ProviderResponseError(
            f"Provider {provider_id} stream failed: {message}.",
            provider_id=provider_id,
            cause=error,
        )
    return error


def connection_error(
    provider_id: str, error: BaseException, url: str | None
) -> ProviderTransportError:
    """A connection failure naming the URL and the reason (retryable)."""
    where = f" to {url}" if url else ""
    return ProviderTransportError(
        f"Provider {provider_id} could not complete the request{where}: {_reason(error)}.",
        provider_id=provider_id,
        retryable=True,
        details={"url": url} if url else None,
        cause=error,
    )
