"""The model registry: routing model references to providers (spec 02 §2.5).

Routing forms: a :class:`~actoviq.providers.types.ResolvedModel` (its ``provider_id``),
``"provider:model"``, ``ModelRefParts(provider, model)``, ``{"provider", "model"}`` or a bare
``"model"`` (the default provider: the configured one, or the only registered one).

Both :meth:`ModelRegistry.generate` and :meth:`ModelRegistry.stream` run preflight in the registry
(the stream lazily, on first use) before the provider is called.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, Self, cast

import attrs

from actoviq.core import ModelRefParts, ModelRegistryError, model_ref_parts
from actoviq.providers._lifecycle import AsyncCloseable
from actoviq.providers.capabilities import ModelCapabilities, assert_request_capabilities
from actoviq.providers.protocol import ModelProvider
from actoviq.providers.stream import ModelStream, check_call_available
from actoviq.providers.types import (
    ModelCallContext,
    ModelRequest,
    ModelResponse,
    ModelStreamEvent,
    ResolvedModel,
)

__all__ = ["ModelRegistry", "PreparedModelCall"]

RefLike = str | ModelRefParts | ResolvedModel | Mapping[str, str]


@attrs.frozen(kw_only=True, slots=True)
class PreparedModelCall:
    """A request ready to send: ``request.model is model`` (identity is part of the contract)."""

    provider: ModelProvider
    model: ResolvedModel
    capabilities: ModelCapabilities
    request: ModelRequest


_ROUTES_LIMIT = 256  # distinct model strings whose provider is remembered


class ModelRegistry(AsyncCloseable):
    """Providers by id, with a default provider for bare model names.

    Example:
        >>> from actoviq.providers.testing import ScriptedProvider
        >>> registry = ModelRegistry([ScriptedProvider(id="scripted")])
        >>> registry.default_provider_id()
        'scripted'

    Args:
        providers: registered in order.
        default_provider_id: used for bare model names; must be registered when providers are given.
        default_model: the model used when a request names none (``ModelRegistry.default_model``).
    """

    def __init__(
        self,
        providers: Iterable[ModelProvider] = (),
        *,
        default_provider_id: str | None = None,
        default_model: str | ModelRefParts | None = None,
    ) -> None:
        self._providers: dict[str, ModelProvider] = {}
        # provider_for() of a string reference, which depends only on the registered providers
        # (cleared whenever they change; bounded by the distinct model strings routed).
        self._routes: dict[str, ModelProvider] = {}
        for provider in providers:
            self.register(provider)
        if (
            default_provider_id is not None
            and self._providers
            and default_provider_id not in self._providers
        ):
            raise ModelRegistryError(
                f"Default model provider {default_provider_id} is not registered."
            )
        self._default_provider_id = default_provider_id
        self._default_model = default_model

    # -- membership -------------------------------------------------------------------------------

    def register(self, provider: ModelProvider, *, replace: bool = False) -> Self:
        """Add ``provider``; a duplicate id needs ``replace=True``."""
        provider_id = provider.id
        if not provider_id:
            raise ModelRegistryError("A model provider must have a non-empty id.")
        if provider_id in self._providers and not replace:
            raise ModelRegistryError(f"Model provider {provider_id} is already registered.")
        self._providers[provider_id] = provider
        self._routes.clear()
        return self

    def unregister(self, provider_id: str) -> bool:
        """Remove a provider; False when it was not registered."""
        self._routes.clear()
        return self._providers.pop(provider_id, None) is not None

    def has(self, provider_id: str) -> bool:
        """True when ``provider_id`` is registered."""
        return provider_id in self._providers

    def get(self, provider_id: str) -> ModelProvider:
        """The provider with that id (``ModelRegistryError`` listing the registered ids if none)."""
        provider = self._providers.get(provider_id)
        if provider is None:
            known = ", ".join(sorted(self._providers)) or "(none)"
            raise ModelRegistryError(
                f"Unknown model provider {provider_id}. Registered providers: {known}."
            )
        return provider

    def list(self) -> list[ModelProvider]:
        """Providers in registration order."""
        return list(self._providers.values())

    def default_provider_id(self) -> str | None:
        """The configured default, else the only registered provider, else None."""
        if self._default_provider_id is not None:
            return self._default_provider_id
        if len(self._providers) == 1:
            return next(iter(self._providers))
        return None

    @property
    def default_model(self) -> str | ModelRefParts | None:
        """The model used for requests that name none (runtime convenience)."""
        return self._default_model

    # -- routing ----------------------------------------------------------------------------------

    def parts(self, ref: RefLike) -> ModelRefParts:
        """Split ``ref`` into provider and model with the default provider applied."""
        if isinstance(ref, ResolvedModel):
            return ModelRefParts(provider=ref.provider_id, model=ref.model_id)
        return model_ref_parts(ref, self.default_provider_id())

    def provider_for(self, ref: RefLike) -> ModelProvider:
        """The provider that owns ``ref``."""
        if ref.__class__ is not str:
            return self.get(self.parts(ref).provider)
        routes = self._routes
        provider = routes.get(ref)  # type: ignore[arg-type]
        if provider is None:
            provider = self.get(self.parts(ref).provider)
            if len(routes) >= _ROUTES_LIMIT:
                routes.clear()
            routes[ref] = provider  # type: ignore[index]
        return provider

    async def resolve(self, ref: RefLike) -> ResolvedModel:
        """Resolve through the owning provider (always passing the ``{provider, model}`` form)."""
        if isinstance(ref, ResolvedModel):
            return await self.get(ref.provider_id).resolve(ref)
        parts = self.parts(ref)
        return await self.get(parts.provider).resolve(parts)

    async def capabilities(self, ref: RefLike) -> ModelCapabilities:
        """Declared capabilities of the model ``ref`` names."""
        resolved = ref if isinstance(ref, ResolvedModel) else await self.resolve(ref)
        return await self.get(resolved.provider_id).capabilities(resolved)

    async def prepare(self, request: ModelRequest, *, streaming: bool = False) -> PreparedModelCall:
        """Resolve, check ownership and capabilities; raises before any provider call."""
        model_ref = request.model
        resolved = await self.resolve(model_ref)
        provider = self.get(resolved.provider_id)
        caps = await provider.capabilities(resolved)
        assert_request_capabilities(provider.id, resolved, caps, request, streaming=streaming)
        return PreparedModelCall(
            provider=provider,
            model=resolved,
            capabilities=caps,
            request=attrs.evolve(request, model=resolved),
        )

    async def generate(
        self, request: ModelRequest, context: ModelCallContext | None = None
    ) -> ModelResponse:
        """Preflight in the registry, then the provider (which checks again)."""
        context = context or ModelCallContext()
        check_call_available(context)
        prepared = await self.prepare(request)
        return await prepared.provider.generate(prepared.request, context)

    def stream(self, request: ModelRequest, context: ModelCallContext | None = None) -> ModelStream:
        """A lazy stream whose first use runs registry preflight, then opens the provider stream."""

        async def start(stream_context: ModelCallContext) -> AsyncIterator[Any]:
            prepared = await self.prepare(request, streaming=True)
            inner = prepared.provider.stream(prepared.request, stream_context)
            return _forward(inner)

        return ModelStream(context=context, start=start, mapper=_PassThrough())

    async def aclose(self) -> None:
        """Close every registered provider."""
        for provider in self._providers.values():
            await provider.aclose()


async def _forward(inner: ModelStream) -> AsyncIterator[ModelStreamEvent]:
    async with inner:
        async for event in inner:
            yield event


class _PassThrough:
    """Mapper for an already-mapped inner stream."""

    def map(self, event: Any) -> list[ModelStreamEvent]:
        return [cast(ModelStreamEvent, event)]

    def finalize(self) -> ModelResponse:  # pragma: no cover - inner streams always complete
        raise ModelRegistryError("The provider stream ended without a final response.")
