"""The Anthropic Messages adapter on the official ``anthropic`` SDK (extra ``[anthropic]``).

The SDK client takes an optional ``http_client`` of its own type (``httpx2.AsyncClient``).
"""

import anthropic  # noqa: F401  # pyright: ignore[reportUnusedImport]  (needs the extra)
import httpx2  # noqa: F401  # pyright: ignore[reportUnusedImport]  (the SDK HTTP layer)

from actoviq.providers.anthropic._adapter import AnthropicProvider

__all__ = ["AnthropicProvider"]
