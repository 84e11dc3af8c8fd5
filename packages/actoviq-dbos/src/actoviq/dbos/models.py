"""Model calls as DBOS steps: a provider wrapper whose responses DBOS records and replays.

Inside a durable run every ``generate`` (and every ``stream``, which a resumed run uses) is one
DBOS step named ``actoviq.model``: the step calls the wrapped provider once and DBOS records the
response as wire JSON (D2). When DBOS replays the workflow after a crash, the step returns the
recorded response and the provider is not called again. Outside a DBOS workflow the wrapper calls
the provider directly.

A durable stream is not a live stream: the step runs a non-streaming call and the stream yields
the recorded response's completion only (text deltas are not durable; the run events are).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any, cast

from actoviq.core import JsonObject, ModelRefParts, from_json, to_json
from actoviq.providers import (
    ModelCallContext,
    ModelCapabilities,
    ModelProvider,
    ModelRegistry,
    ModelRequest,
    ModelResponse,
    ModelStream,
    ModelStreamEvent,
    ResolvedModel,
    ResponseCompleted,
)
from dbos import DBOS

__all__ = ["MODEL_STEP_NAME", "DurableModelProvider", "durable_models"]

MODEL_STEP_NAME = "actoviq.model"
"""The DBOS step name of a model call (visible in DBOS's workflow steps)."""


def in_workflow() -> bool:
    """True when the caller runs inside a DBOS workflow (not inside one of its steps)."""
    return DBOS.workflow_id is not None and DBOS.step_id is None


class DurableModelProvider:
    """A :class:`~actoviq.providers.ModelProvider` whose calls are DBOS steps in a workflow.

    Args:
        inner: the provider that really answers; its ``id`` is kept, so model references route
            unchanged.
    """

    __slots__ = ("_inner",)

    def __init__(self, inner: ModelProvider) -> None:
        self._inner = inner

    @property
    def inner(self) -> ModelProvider:
        """The wrapped provider."""
        return self._inner

    @property
    def id(self) -> str:
        """The wrapped provider's id."""
        return self._inner.id

    async def resolve(self, ref: str | ModelRefParts | ResolvedModel) -> ResolvedModel:
        """Delegated to the wrapped provider."""
        return await self._inner.resolve(ref)

    async def capabilities(self, model: ResolvedModel) -> ModelCapabilities:
        """Delegated to the wrapped provider."""
        return await self._inner.capabilities(model)

    async def generate(
        self, request: ModelRequest, context: ModelCallContext | None = None
    ) -> ModelResponse:
        """One model call; inside a workflow a recorded DBOS step (replayed, never repeated)."""
        if not in_workflow():
            return await self._inner.generate(request, context)
        inner = self._inner

        async def call() -> JsonObject:
            response = await inner.generate(request, context)
            return cast(JsonObject, to_json(response))

        recorded = await DBOS.run_step_async({"name": MODEL_STEP_NAME}, call)
        return from_json(ModelResponse, recorded)

    def stream(self, request: ModelRequest, context: ModelCallContext | None = None) -> ModelStream:
        """A stream; inside a workflow it yields the recorded step's completion only."""
        if not in_workflow():
            return self._inner.stream(request, context)

        async def start(stream_context: ModelCallContext) -> AsyncIterator[Any]:
            response = await self.generate(request, stream_context)
            return _single(ResponseCompleted(response=response))

        return ModelStream(context=context, start=start, mapper=_Completed())

    async def aclose(self) -> None:
        """Close the wrapped provider."""
        await self._inner.aclose()


async def _single(event: ModelStreamEvent) -> AsyncIterator[Any]:
    yield event


class _Completed:
    """Pass-through mapper for a stream that carries one ``ResponseCompleted``."""

    def map(self, event: Any) -> list[ModelStreamEvent]:
        return [cast(ModelStreamEvent, event)]

    def finalize(self) -> ModelResponse:  # pragma: no cover - the one event always completes
        raise RuntimeError("A durable model stream ended without its recorded response.")


def durable_models(models: ModelRegistry | Iterable[ModelProvider]) -> ModelRegistry:
    """A registry with every provider of ``models`` wrapped in :class:`DurableModelProvider`.

    The default provider and default model carry over.
    """
    if isinstance(models, ModelRegistry):
        providers = models.list()
        default_provider = models.default_provider_id()
        default_model = models.default_model
    else:
        providers = list(models)
        default_provider = None
        default_model = None
    wrapped = [
        provider if isinstance(provider, DurableModelProvider) else DurableModelProvider(provider)
        for provider in providers
    ]
    return ModelRegistry(wrapped, default_provider_id=default_provider, default_model=default_model)
