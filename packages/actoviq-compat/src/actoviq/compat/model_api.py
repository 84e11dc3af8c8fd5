"""The legacy ``ModelApi`` bridges, as compat symbols (spec 04 §5.2 item 4, spec 02 §4).

The implementations live in :mod:`actoviq.providers.legacy`; these subclasses only record their
use in the compat diagnostics. ``ModelApi`` itself (and the message shapes) are re-exported by
the package unchanged.
"""

from __future__ import annotations

from typing import Any

from actoviq.compat.diagnostics import compat_symbol
from actoviq.providers import legacy as _legacy

__all__ = ["LegacyModelApiProvider", "ModelProviderLegacyAdapter"]


@compat_symbol(
    "LegacyModelApiProvider",
    "actoviq.providers.legacy.LegacyModelApiProvider (the same class, outside the façade), then "
    "a native provider (actoviq.providers.openai / .anthropic)",
)
class LegacyModelApiProvider(_legacy.LegacyModelApiProvider):
    """An old ``ModelApi`` (``create_message`` / ``stream_message``) as a provider v2.

    See :class:`actoviq.providers.legacy.LegacyModelApiProvider`.

    Example:
        >>> provider = LegacyModelApiProvider(model_api=existing_model_api)  # doctest: +SKIP
        >>> runtime = AgentRuntime(models=ModelRegistry([provider]))  # doctest: +SKIP
    """

    def __init__(self, model_api: _legacy.ModelApi, **options: Any) -> None:
        """Wrap ``model_api`` (positional, as the 0.x constructor took it, or by keyword).

        Args:
            model_api: the legacy model client.
            **options: the other keyword arguments of
                :class:`actoviq.providers.legacy.LegacyModelApiProvider` (``id``,
                ``capabilities``, ...).
        """
        super().__init__(model_api=model_api, **options)


@compat_symbol(
    "ModelProviderLegacyAdapter",
    "the provider itself: AgentRuntime(models=ModelRegistry([provider]))",
)
class ModelProviderLegacyAdapter(_legacy.ModelProviderLegacyAdapter):
    """A provider v2 as an old ``ModelApi``, e.g. ``create_agent_sdk(modelApi=...)``.

    See :class:`actoviq.providers.legacy.ModelProviderLegacyAdapter`. Given to
    :func:`~actoviq.compat.create_agent_sdk`, the façade calls the wrapped provider directly
    (no legacy round trip).

    Example:
        >>> sdk = await create_agent_sdk(  # doctest: +SKIP
        ...     modelApi=ModelProviderLegacyAdapter(OpenAIResponsesProvider()), model="gpt-4.1"
        ... )
    """
