"""The Anthropic Messages adapter on the official ``anthropic`` SDK (extra ``[anthropic]``).

The SDK client takes an optional ``http_client`` of its own type (``httpx2.AsyncClient``).
"""

import anthropic as _anthropic  # noqa: F401  (fail at import when the extra is missing)
import httpx2 as _httpx2  # noqa: F401  (the SDK's HTTP layer; injected clients are of this type)

from actoviq.providers.anthropic._adapter import AnthropicProvider

__all__ = ["AnthropicProvider"]
