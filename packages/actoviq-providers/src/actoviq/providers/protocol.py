"""The behaviour every model provider implements (spec 02 §2.1)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from actoviq.core import ModelRefParts
from actoviq.providers.capabilities import ModelCapabilities
from actoviq.providers.stream import ModelStream
from actoviq.providers.types import ModelCallContext, ModelRequest, ModelResponse, ResolvedModel

__all__ = ["ModelProvider"]


@runtime_checkable
class ModelProvider(Protocol):
    """A source of model responses.

    ``generate`` and ``stream`` both run capability preflight before any network call; ``stream``
    is synchronous and lazy (preflight errors surface on first iteration or in
    ``final_response()``).
    """

    @property
    def id(self) -> str:
        """The provider instance id (the key for routing and ``provider_options``)."""
        ...

    async def resolve(self, ref: str | ModelRefParts | ResolvedModel) -> ResolvedModel:
        """Accept a model reference this provider owns (ownership error otherwise)."""
        ...

    async def capabilities(self, model: ResolvedModel) -> ModelCapabilities:
        """The declared capabilities of ``model``."""
        ...

    async def generate(
        self, request: ModelRequest, context: ModelCallContext | None = None
    ) -> ModelResponse:
        """Run one non-streaming call."""
        ...

    def stream(self, request: ModelRequest, context: ModelCallContext | None = None) -> ModelStream:
        """Open a lazy stream for one call."""
        ...

    async def aclose(self) -> None:
        """Release held resources (HTTP clients the provider created)."""
        ...
