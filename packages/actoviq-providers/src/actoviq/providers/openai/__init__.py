"""OpenAI adapters on the official ``openai`` SDK (extra ``actoviq-providers[openai]``).

:class:`OpenAIResponsesProvider` speaks the Responses API; :class:`OpenAIChatProvider` speaks Chat
Completions and works with any OpenAI-compatible server through ``base_url``. The SDK client takes
an optional ``http_client`` of its own type (``httpx2.AsyncClient``).
"""

import httpx2 as _httpx2  # noqa: F401  (the SDK's HTTP layer; injected clients are of this type)
import openai as _openai  # noqa: F401  (fail at import when the extra is missing)

from actoviq.providers.openai._adapters import OpenAIChatProvider, OpenAIResponsesProvider

__all__ = ["OpenAIChatProvider", "OpenAIResponsesProvider"]
