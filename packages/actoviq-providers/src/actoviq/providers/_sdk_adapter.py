"""SDK-agnostic glue shared by the OpenAI and Anthropic adapters (no SDK import here).

The adapter modules pass their SDK's exception classes in; this module only orchestrates:
preflight, the pure body builder, the SDK call (abortable, deadline as per-request timeout), the
pure parser, and exception mapping with ``retryable`` by status (D4).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any, ClassVar, Protocol, TypeVar, cast

import attrs

from actoviq.core import AbortSignal, ProviderResponseError, ProviderTransportError
from actoviq.providers.base import BaseModelProvider, PreparedCall
from actoviq.providers.capabilities import CapabilitiesSource, CapabilityResolver, ModelCapabilities
from actoviq.providers.errors import ModelCallTimeoutError
from actoviq.providers.mapping._common import MappingOptions, as_dict
from actoviq.providers.stream import StreamMapper, abort_reason
from actoviq.providers.types import ModelCallContext, ModelRequest, ModelResponse, ResolvedModel

__all__ = [
    "RETRYABLE_STATUSES",
    "MappingApi",
    "SDKErrors",
    "SDKModelProvider",
    "is_retryable_status",
]

_T = TypeVar("_T")
RETRYABLE_STATUSES = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    """408, 409, 429 and every 5xx are worth retrying (the SDKs retry the same set)."""
    return status in RETRYABLE_STATUSES or status >= 500


class SDKErrors(Protocol):
    """The exception classes an SDK module exposes (``openai`` and ``anthropic`` both do)."""

    APIStatusError: type[Exception]
    APITimeoutError: type[Exception]
    APIConnectionError: type[Exception]
    APIError: type[Exception]


BodyBuilder = Callable[[ModelRequest, str, MappingOptions], dict[str, Any]]
Parser = Callable[[object, ResolvedModel, ModelRequest, MappingOptions], ModelResponse]
MapperFactory = Callable[[ResolvedModel, ModelRequest, MappingOptions], StreamMapper]


@attrs.frozen(kw_only=True, slots=True)
class MappingApi:
    """The pure functions of one provider API (see :mod:`actoviq.providers.mapping`)."""

    build_body: Callable[..., dict[str, Any]]
    parse: Parser
    mapper: MapperFactory


def provider_message(body: object) -> str | None:
    """The provider's own error message from an error body."""
    data = as_dict(body)
    if data is None:
        return None
    error = as_dict(data.get("error"))
    if error is not None and isinstance(error.get("message"), str):
        return error["message"]
    message = data.get("message")
    return message if isinstance(message, str) else None


def map_sdk_error(error: BaseException, errors: SDKErrors, provider_id: str) -> BaseException:
    """An SDK exception as our typed error (the original is kept as ``__cause__``)."""
    if isinstance(error, errors.APITimeoutError):
        timeout = ModelCallTimeoutError(
            f"Provider {provider_id} request timed out.", retryable=True
        )
        timeout.__cause__ = error
        return timeout
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
        suffix = f": {message}" if message else ""
        return ProviderTransportError(
            f"Provider {provider_id} request failed with HTTP {status}{suffix}.",
            provider_id=provider_id,
            status=status,
            retryable=is_retryable_status(status),
            cause=error,
        )
    if isinstance(error, errors.APIConnectionError):
        return ProviderTransportError(
            f"Provider {provider_id} transport failed: {type(error).__name__}.",
            provider_id=provider_id,
            retryable=True,
            cause=error,
        )
    if isinstance(error, errors.APIError):
        message = provider_message(getattr(error, "body", None)) or "error event"
        return ProviderResponseError(
            f"Provider {provider_id} stream failed: {message}.",
            provider_id=provider_id,
            cause=error,
        )
    return error


async def run_abortable(awaitable: Awaitable[_T], signal: AbortSignal | None) -> _T:
    """Await ``awaitable``, cancelling it and raising the abort reason if ``signal`` aborts."""
    if signal is None:
        return await awaitable
    if signal.aborted:
        if isinstance(awaitable, asyncio.Future | asyncio.Task):
            awaitable.cancel()
        elif hasattr(awaitable, "close"):
            awaitable.close()  # type: ignore[attr-defined]
        raise abort_reason(signal)
    loop = asyncio.get_running_loop()
    aborted: asyncio.Future[None] = loop.create_future()

    def on_abort(_: object) -> None:
        if not aborted.done():
            aborted.set_result(None)

    remove = signal.add_listener(on_abort)
    task = asyncio.ensure_future(awaitable)
    try:
        await asyncio.wait({task, aborted}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        remove()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if signal.aborted and not (task.done() and not task.cancelled() and task.exception() is None):
        raise abort_reason(signal)
    return task.result()


class SDKModelProvider(BaseModelProvider):
    """An adapter that sends pure-built bodies through an official SDK client.

    Subclasses set ``_path``, ``_stream_cls`` and ``_transport_errors`` and build the client in
    :meth:`_new_client`; the client is created lazily and closed by :meth:`aclose` when this
    provider created it.
    """

    _label = "SDK"
    # HTTP-layer errors the SDK lets through unwrapped (e.g. a read failing mid-stream); the
    # adapter modules set this to their HTTP library's base transport error.
    _transport_errors: tuple[type[BaseException], ...] = ()
    _path: ClassVar[str] = ""  # the API path every call is POSTed to
    _stream_cls: ClassVar[Any] = None  # the SDK's ``AsyncStream[object]``

    def _map_error(self, error: Exception) -> BaseException:
        mapped = map_sdk_error(error, self._errors, self.id)
        if mapped is error and isinstance(error, self._transport_errors):
            return ProviderTransportError(
                f"Provider {self.id} transport failed: {type(error).__name__}.",
                provider_id=self.id,
                retryable=True,
                cause=error,
            )
        return mapped

    def __init__(
        self,
        *,
        id: str,
        default_capabilities: ModelCapabilities,
        capabilities: CapabilitiesSource | None,
        capability_resolver: CapabilityResolver | None,
        include_raw_response: bool,
        preserve_provider_items: bool,
        emit_provider_events: bool,
        api: MappingApi,
        errors: Any,  # the SDK module (openai / anthropic); see SDKErrors
        client: Any,  # a ready SDK client (then ``client_args`` are unused), or None
        client_args: dict[str, Any],
    ) -> None:
        super().__init__(
            id=id,
            default_capabilities=default_capabilities,
            capabilities=capabilities,
            capability_resolver=capability_resolver,
        )
        self._options = MappingOptions(
            provider_id=id,
            include_raw_response=include_raw_response,
            preserve_provider_items=preserve_provider_items,
            emit_provider_events=emit_provider_events,
        )
        self._build_body = api.build_body
        self._parse = api.parse
        self._mapper_factory = api.mapper
        self._errors = cast(SDKErrors, errors)
        self._client: Any = client
        self._owns_client = client is None
        self._client_args = client_args

    @property
    def mapping_options(self) -> MappingOptions:
        """How this adapter maps (raw response, raw items, provider events)."""
        return self._options

    def build_body(self, request: ModelRequest, model_id: str, *, stream: bool) -> dict[str, Any]:
        """The provider request body for ``request`` (pure; raises typed errors)."""
        return self._build_body(request, model_id, self._options, stream=stream)

    def _new_client(self, args: dict[str, Any]) -> Any:
        """A new SDK client from the non-None ``client_args`` (the adapter modules build it)."""
        raise NotImplementedError

    def _sdk(self) -> Any:
        if self._client is None:
            self._client = self._new_client(
                {key: value for key, value in self._client_args.items() if value is not None}
            )
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
                stream_cls=self._stream_cls,
            )
        return await client.post(self._path, cast_to=object, body=body, options=options)

    async def aclose(self) -> None:
        """Close the SDK client if this provider created it."""
        if self._owns_client and self._client is not None:
            await self._client.close()
            self._client = None

    @staticmethod
    def _timeout(context: ModelCallContext) -> float | None:
        if context.deadline is None:
            return None
        return max(0.001, (context.deadline - time.time() * 1000) / 1000)

    @contextlib.contextmanager
    def _typed_errors(self) -> Generator[None]:
        """Re-raise SDK (and bare transport) exceptions as our typed errors."""
        try:
            yield
        except Exception as error:
            mapped = self._map_error(error)
            if mapped is error:
                raise
            raise mapped from error

    async def _send(
        self, prepared: PreparedCall, context: ModelCallContext, *, stream: bool
    ) -> Any:
        body = self.build_body(prepared.request, prepared.model.model_id, stream=stream)
        with self._typed_errors():
            return await run_abortable(
                self._post(body, stream=stream, request_timeout=self._timeout(context)),
                context.signal,
            )

    async def _generate(self, prepared: PreparedCall, context: ModelCallContext) -> ModelResponse:
        raw = await self._send(prepared, context, stream=False)
        return self._parse(raw, prepared.model, prepared.request, self._options)

    def _stream_mapper(self, prepared: PreparedCall) -> StreamMapper:
        return self._mapper_factory(prepared.model, prepared.request, self._options)

    async def _open_stream(
        self, prepared: PreparedCall, context: ModelCallContext
    ) -> AsyncIterator[Any]:
        return self._events(await self._send(prepared, context, stream=True))

    async def _events(self, sdk_stream: Any) -> AsyncIterator[Any]:
        try:
            with self._typed_errors():
                async for event in sdk_stream:
                    yield event
        finally:
            await sdk_stream.close()
