"""OpenAI adapters on the official ``openai`` SDK (extra ``actoviq-providers[openai]``).

:class:`OpenAIResponsesProvider` speaks the Responses API; :class:`OpenAIChatProvider` speaks Chat
Completions and works with any OpenAI-compatible server through ``base_url``. The SDK client takes
an optional ``http_client`` of its own type (``httpx2.AsyncClient``).
"""

import httpx2  # noqa: F401  # pyright: ignore[reportUnusedImport]  (the SDK HTTP layer)
import openai  # noqa: F401  # pyright: ignore[reportUnusedImport]  (needs the extra)

from actoviq.providers.openai._adapters import OpenAIChatProvider, OpenAIResponsesProvider

__all__ = ["OpenAIChatProvider", "OpenAIResponsesProvider"]
