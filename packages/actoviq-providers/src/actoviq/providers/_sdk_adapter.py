"""SDK-agnostic glue shared by the OpenAI and Anthropic adapters (no SDK import here).

The adapter modules pass their SDK's exception classes in; this module only orchestrates:
preflight, the pure body builder, the SDK call (abortable, bounded by the provider's timeout and
the call's deadline, whichever comes first), the pure parser, and exception mapping with
``retryable`` by status (D4, :mod:`actoviq.providers._sdk_errors`).

Timeouts: the provider's ``timeout`` is the SDK's HTTP timeout (for a plain call, the wait for
the answer; for a stream, the wait for the next chunk). A call's deadline (``ModelCallContext``)
bounds the whole call, retries and every stream read included: the per-request HTTP timeout is
the smaller of the two, and the deadline is also enforced as a total limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any, ClassVar, Final, TypeVar, cast

import attrs

from actoviq.core import AbortSignal, ProviderResponseError
from actoviq.providers._sdk_errors import (
    RETRYABLE_STATUSES,
    SDKErrors,
    connection_error,
    is_retryable_status,
    map_sdk_error,
    provider_message,
    request_url,
    scrub,
    timeout_error,
)
from actoviq.providers.base import BaseModelProvider, PreparedCall
from actoviq.providers.capabilities import CapabilitiesSource, CapabilityResolver, ModelCapabilities
from actoviq.providers.mapping._common import MappingOptions
from actoviq.providers.stream import StreamMapper, abort_reason
from actoviq.providers.tool_names import ToolNameMap, ToolNameRule
from actoviq.providers.types import (
    ModelCallContext,
    ModelRequest,
    ModelResponse,
    ModelStreamEvent,
    ResolvedModel,
)

__all__ = [
    "RETRYABLE_STATUSES",
    "CallLimits",
    "MappingApi",
    "SDKErrors",
    "SDKModelProvider",
    "is_retryable_status",
    "map_sdk_error",
    "provider_message",
    "run_abortable",
]

_T = TypeVar("_T")


BodyBuilder = Callable[[ModelRequest, str, MappingOptions], dict[str, Any]]
Parser = Callable[[object, ResolvedModel, ModelRequest, MappingOptions], ModelResponse]
MapperFactory = Callable[[ResolvedModel, ModelRequest, MappingOptions], StreamMapper]


@attrs.frozen(kw_only=True, slots=True)
class MappingApi:
    """The pure functions of one provider API (see :mod:`actoviq.providers.mapping`)."""

    build_body: Callable[..., dict[str, Any]]
    parse: Parser
    mapper: MapperFactory


@attrs.frozen(kw_only=True, slots=True)
class CallLimits:
    """How long one call may take.

    Attributes:
        request_timeout: the per-request HTTP timeout to pass to the SDK (seconds), or None to
            keep the client's own.
        deadline: the call's absolute deadline on the event loop clock, or None.
        deadline_bound: the deadline is tighter than the provider's timeout (a timeout then
            means the deadline passed: not retryable).
        provider_timeout: the provider's own timeout in seconds (None: none).
    """

    request_timeout: float | None
    deadline: float | None
    deadline_bound: bool
    provider_timeout: float | None


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


def _client_timeout(client: Any) -> float | None:
    """The SDK client's own timeout in seconds (its read timeout when it is a Timeout object)."""
    value = getattr(client, "timeout", None)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    read = getattr(value, "read", None)
    return float(read) if isinstance(read, int | float) else None


class SDKModelProvider(BaseModelProvider):
    """An adapter that sends pure-built bodies through an official SDK client.

    Subclasses set ``_path``, ``_stream_cls``, ``_api_label`` and ``_transport_errors`` and build
    the client in :meth:`_new_client`; the client is created lazily and closed by :meth:`aclose`
    when this provider created it.
    """

    _label = "SDK"
    # HTTP-layer errors the SDK lets through unwrapped (e.g. a read failing mid-stream); the
    # adapter modules set this to their HTTP library's base transport error and timeout error.
    _transport_errors: tuple[type[BaseException], ...] = ()
    _timeout_errors: tuple[type[BaseException], ...] = ()
    _path: ClassVar[str] = ""  # the API path every call is POSTed to
    _stream_cls: ClassVar[Any] = None  # the SDK's ``AsyncStream[object]``
    tool_name_rule: ClassVar[ToolNameRule | None] = None
    """The tool names the API accepts; others are mapped on the wire (:mod:`.tool_names`)."""

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
        body_options: dict[str, Any] | None = None,
        request_headers: dict[str, Any] | None = None,
        secrets: tuple[str, ...] = (),
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
        self._body_options = dict(body_options or {})
        # Per-request headers (e.g. an explicitly omitted Authorization for a keyless server).
        self._request_headers = dict(request_headers or {})
        # A ready client carries its own credentials: they are scrubbed from errors too.
        held = () if client is None else _client_credentials(client)
        self._secrets = tuple(secret for secret in (*secrets, *held) if secret)

    @property
    def mapping_options(self) -> MappingOptions:
        """How this adapter maps (raw response, raw items, provider events)."""
        return self._options

    def tool_names(self, request: ModelRequest) -> ToolNameMap:
        """How ``request``'s tool names go on the wire (see :class:`ToolNameMap`).

        Raises:
            ToolNameError: a name cannot be mapped to one the API accepts.
        """
        rule = self.tool_name_rule
        if rule is None:
            return ToolNameMap({}, {})
        return ToolNameMap.for_request(request, rule)

    def build_body(self, request: ModelRequest, model_id: str, *, stream: bool) -> dict[str, Any]:
        """The provider request body for ``request`` (pure; raises typed errors).

        Tool names the API does not accept are sent mapped (:meth:`tool_names`).

        Raises:
            ToolNameError: a tool name cannot be mapped to one the API accepts.
        """
        request = self.tool_names(request).request(request)
        return self._build_body(
            request, model_id, self._options, stream=stream, **self._body_options
        )

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
        options: dict[str, Any] = {}
        if request_timeout is not None:
            options["timeout"] = request_timeout
        if self._request_headers:
            options["headers"] = dict(self._request_headers)
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

    def _limits(self, context: ModelCallContext) -> CallLimits:
        """The provider timeout and the call deadline, combined by minimum."""
        provider_timeout = _client_timeout(self._sdk())
        if context.deadline is None:
            return CallLimits(
                request_timeout=None,
                deadline=None,
                deadline_bound=False,
                provider_timeout=provider_timeout,
            )
        left = max(0.001, (context.deadline - time.time() * 1000) / 1000)
        bound = provider_timeout is None or left < provider_timeout
        return CallLimits(
            request_timeout=left if bound else None,  # else the client's own timeout applies
            deadline=asyncio.get_running_loop().time() + left,
            deadline_bound=bound,
            provider_timeout=provider_timeout,
        )

    def _map_error(self, error: BaseException, limits: CallLimits | None) -> BaseException:
        deadline_bound = limits is not None and limits.deadline_bound
        timeout = limits.provider_timeout if limits is not None else None
        mapped = map_sdk_error(
            error,
            self._errors,
            self.id,
            secrets=self._secrets,
            deadline_bound=deadline_bound,
            timeout=timeout,
        )
        if mapped is not error:
            return mapped
        if isinstance(error, self._timeout_errors):  # an HTTP read timeout mid-stream
            mapped = timeout_error(
                self.id, request_url(error), deadline_bound=deadline_bound, limit=timeout
            )
        elif isinstance(error, self._transport_errors):
            mapped = connection_error(self.id, error, request_url(error))
        elif isinstance(error, _MALFORMED):
            # The SDK could not parse what the server sent (a proxy's garbage, a cut or
            # binary body, JSON nested past the parser's recursion limit): the server answered,
            # so the request may have been processed; not retried.
            mapped = ProviderResponseError(
                f"Provider {self.id} sent a response that is not valid JSON "
                f"({type(error).__name__}: {str(error)[:200]}).",
                provider_id=self.id,
                retryable=False,
            )
        else:
            return error
        message = scrub(mapped.message, self._secrets)
        mapped.args, mapped.message = (message,), message
        return mapped

    @contextlib.contextmanager
    def _typed_errors(self, limits: CallLimits | None) -> Generator[None]:
        """Re-raise SDK (and bare transport) exceptions as our typed errors."""
        try:
            yield
        except Exception as error:
            mapped = self._map_error(error, limits)
            if mapped is error:
                raise
            raise mapped from error

    def _deadline_passed(self, limits: CallLimits) -> BaseException:
        return timeout_error(self.id, None, deadline_bound=True, limit=limits.provider_timeout)

    async def _send(
        self, prepared: PreparedCall, context: ModelCallContext, *, stream: bool
    ) -> tuple[Any, CallLimits]:
        body = self.build_body(prepared.request, prepared.model.model_id, stream=stream)
        limits = self._limits(context)
        call = run_abortable(
            self._post(body, stream=stream, request_timeout=limits.request_timeout),
            context.signal,
        )
        try:
            with self._typed_errors(limits):
                if limits.deadline is None:
                    return await call, limits
                # The deadline bounds the whole call, the SDK's retries and backoff included.
                async with asyncio.timeout_at(limits.deadline):
                    return await call, limits
        except TimeoutError as error:
            raise self._deadline_passed(limits) from error

    async def _generate(self, prepared: PreparedCall, context: ModelCallContext) -> ModelResponse:
        names = self.tool_names(prepared.request)
        raw, _ = await self._send(prepared, context, stream=False)
        parsed = self._parse(raw, prepared.model, names.request(prepared.request), self._options)
        return names.response(parsed)

    def _stream_mapper(self, prepared: PreparedCall) -> StreamMapper:
        names = self.tool_names(prepared.request)
        mapper = self._mapper_factory(
            prepared.model, names.request(prepared.request), self._options
        )
        return mapper if names.identity else _NamedStreamMapper(mapper, names)

    async def _open_stream(
        self, prepared: PreparedCall, context: ModelCallContext
    ) -> AsyncIterator[Any]:
        sdk_stream, limits = await self._send(prepared, context, stream=True)
        return self._events(sdk_stream, limits)

    async def _events(self, sdk_stream: Any, limits: CallLimits) -> AsyncIterator[Any]:
        iterator = sdk_stream.__aiter__()
        try:
            while True:
                try:
                    with self._typed_errors(limits):
                        if limits.deadline is None:
                            event = await anext(iterator)
                        else:
                            # Each read is bounded by the call's deadline (no yield inside).
                            async with asyncio.timeout_at(limits.deadline):
                                event = await anext(iterator)
                except StopAsyncIteration:
                    return
                except TimeoutError as error:
                    raise self._deadline_passed(limits) from error
                yield event
        finally:
            await sdk_stream.close()


_MALFORMED: Final = (json.JSONDecodeError, UnicodeDecodeError, RecursionError)


class _NamedStreamMapper:
    """A stream mapper whose events carry canonical tool names."""

    def __init__(self, mapper: StreamMapper, names: ToolNameMap) -> None:
        self._mapper = mapper
        self._names = names

    def map(self, event: Any) -> list[ModelStreamEvent]:
        return [self._names.event(mapped) for mapped in self._mapper.map(event)]

    def finalize(self) -> ModelResponse:
        return self._names.response(self._mapper.finalize())


def _client_credentials(client: object) -> tuple[str, ...]:
    """The credentials an SDK client holds (``api_key``; Anthropic's ``auth_token`` too)."""
    found: list[str] = []
    for name in ("api_key", "auth_token"):
        value = getattr(client, name, None)
        if isinstance(value, str) and len(value) >= 8:  # a placeholder key is not a secret
            found.append(value)
    return tuple(found)
