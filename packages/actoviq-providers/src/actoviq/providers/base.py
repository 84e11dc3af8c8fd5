"""Shared adapter behaviour: ownership, capability resolution and preflight (spec 02 §2.4)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import attrs

from actoviq.core import JsonObject, ModelRefParts, field_replacer, model_ref_parts
from actoviq.providers._lifecycle import AsyncCloseable
from actoviq.providers.capabilities import (
    CapabilitiesSource,
    CapabilityResolver,
    ModelCapabilities,
    assert_request_capabilities,
    resolve_model_capabilities,
)
from actoviq.providers.errors import ModelOwnershipError
from actoviq.providers.stream import ModelStream, StreamMapper, check_call_available
from actoviq.providers.types import ModelCallContext, ModelRequest, ModelResponse, ResolvedModel

__all__ = ["BaseModelProvider", "PreparedCall", "namespaced_options"]

_RESOLVED_CACHE_LIMIT = 256  # distinct model names remembered per provider (cleared when full)

# A validated request with only ``model`` swapped for a ResolvedModel is copied slot by slot
# (every field already passed its converter) instead of through attrs.evolve, which re-runs
# __init__ and every converter.
_replace_model = field_replacer(ModelRequest, "model")


def _with_model(request: ModelRequest, model: ResolvedModel) -> ModelRequest:
    if request.model is model:
        return request
    return _replace_model(request, model)


@attrs.frozen(kw_only=True, slots=True)
class PreparedCall:
    """The outcome of preflight: the resolved model, its capabilities, the request to send."""

    model: ResolvedModel
    capabilities: ModelCapabilities
    request: ModelRequest


def namespaced_options(request: ModelRequest, provider_id: str) -> JsonObject:
    """``request.provider_options[provider_id]`` when it is an object, else ``{}``."""
    options = request.provider_options or {}
    value = options.get(provider_id)
    return cast(JsonObject, value) if isinstance(value, dict) else {}


class BaseModelProvider(AsyncCloseable):
    """Ownership checks, capability resolution and preflight shared by every adapter.

    Subclasses implement :meth:`_generate` and :meth:`_open_stream`.

    Args:
        id: provider instance id (routing key and ``provider_options`` namespace).
        default_capabilities: the adapter default.
        capabilities: a full object, a ``{model_id | "*": caps}`` table or a resolver.
        capability_resolver: applied last; its result is final.
    """

    def __init__(
        self,
        *,
        id: str,
        default_capabilities: ModelCapabilities,
        capabilities: CapabilitiesSource | None = None,
        capability_resolver: CapabilityResolver | None = None,
    ) -> None:
        self._id = id
        self._default_capabilities = default_capabilities
        self._capabilities_source = capabilities
        self._capability_resolver = capability_resolver
        # Per-provider caches for prepare(): resolving a model name and its capabilities are pure
        # functions of the configuration fixed here, so each is computed once. Only used when the
        # subclass keeps the base resolve()/capabilities() and the capabilities are one immutable
        # value (no table, no resolver callable: those are asked on every call).
        cls = type(self)
        self._resolved_cache: dict[str, ResolvedModel] = {}
        self._cache_resolve = cls.resolve is BaseModelProvider.resolve
        fixed = capabilities if capabilities is not None else default_capabilities
        self._fixed_capabilities: ModelCapabilities | None = (
            fixed
            if isinstance(fixed, ModelCapabilities)
            and capability_resolver is None
            and cls.capabilities is BaseModelProvider.capabilities
            else None
        )

    @property
    def id(self) -> str:
        """The provider instance id."""
        return self._id

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self._id!r})"

    async def resolve(self, ref: str | ModelRefParts | ResolvedModel) -> ResolvedModel:
        """Resolve ``ref`` (a bare model name means this provider).

        Raises:
            ModelOwnershipError: the reference names another provider.
        """
        if isinstance(ref, ResolvedModel):
            if ref.provider_id != self._id:
                raise ModelOwnershipError(
                    f"Resolved model belongs to {ref.provider_id}, not provider {self._id}."
                )
            return ref
        parts = model_ref_parts(ref, self._id)
        if parts.provider != self._id:
            raise ModelOwnershipError(
                f"Provider {self._id} cannot resolve model owned by provider {parts.provider}."
            )
        return ResolvedModel(provider_id=self._id, model_id=parts.model, ref=parts)

    async def capabilities(self, model: ResolvedModel) -> ModelCapabilities:
        """Declared capabilities: adapter default, model table, caller resolver."""
        if model.provider_id != self._id:
            raise ModelOwnershipError(
                f"Resolved model belongs to {model.provider_id}, not provider {self._id}."
            )
        return await resolve_model_capabilities(
            self._capabilities_source,
            self._default_capabilities,
            model,
            self._capability_resolver,
        )

    async def prepare(
        self, request: ModelRequest, context: ModelCallContext, *, streaming: bool
    ) -> PreparedCall:
        """Preflight in the reference order: availability, resolve, ownership, capabilities."""
        check_call_available(context)
        ref = request.model
        if isinstance(ref, ResolvedModel):
            model = ref
        elif isinstance(ref, str) and self._cache_resolve:
            cached = self._resolved_cache.get(ref)
            if cached is None:
                cached = await self.resolve(ref)
                cache = self._resolved_cache
                if len(cache) >= _RESOLVED_CACHE_LIMIT:
                    cache.clear()
                cache[ref] = cached
            model = cached
        else:
            model = await self.resolve(ref)
        if model.provider_id != self._id:
            raise ModelOwnershipError(
                f"Request model belongs to {model.provider_id}, not provider {self._id}."
            )
        caps = self._fixed_capabilities
        if caps is None:
            caps = await self.capabilities(model)
        assert_request_capabilities(self._id, model, caps, request, streaming=streaming)
        return PreparedCall(model=model, capabilities=caps, request=_with_model(request, model))

    async def generate(
        self, request: ModelRequest, context: ModelCallContext | None = None
    ) -> ModelResponse:
        """Preflight, then one provider call."""
        context = context or ModelCallContext()
        prepared = await self.prepare(request, context, streaming=False)
        return await self._generate(prepared, context)

    def stream(self, request: ModelRequest, context: ModelCallContext | None = None) -> ModelStream:
        """A lazy stream; preflight runs on first use, before the provider is contacted."""
        mapper_holder: list[StreamMapper] = []

        async def start(stream_context: ModelCallContext) -> AsyncIterator[Any]:
            prepared = await self.prepare(request, stream_context, streaming=True)
            mapper_holder.append(self._stream_mapper(prepared))
            return await self._open_stream(prepared, stream_context)

        return ModelStream(context=context, start=start, mapper=_LateMapper(mapper_holder))

    # -- subclass hooks ---------------------------------------------------------------------------

    async def _generate(self, prepared: PreparedCall, context: ModelCallContext) -> ModelResponse:
        raise NotImplementedError

    def _stream_mapper(self, prepared: PreparedCall) -> StreamMapper:
        raise NotImplementedError

    async def _open_stream(
        self, prepared: PreparedCall, context: ModelCallContext
    ) -> AsyncIterator[Any]:
        raise NotImplementedError


class _LateMapper:
    """Delegates to the mapper created once preflight resolved the model."""

    def __init__(self, holder: list[StreamMapper]) -> None:
        self._holder = holder

    def map(self, event: Any) -> Any:
        return self._holder[0].map(event)

    def finalize(self) -> ModelResponse:
        return self._holder[0].finalize()
