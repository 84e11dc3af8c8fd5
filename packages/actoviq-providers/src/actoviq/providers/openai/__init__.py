"""OpenAI adapters on the official ``openai`` SDK (extra ``actoviq-providers[openai]``).

:class:`OpenAIResponsesProvider` speaks the Responses API; :class:`OpenAIChatProvider` speaks Chat
Completions and works with any OpenAI-compatible server through ``base_url`` (with an
:class:`OpenAICompat` profile for servers that differ from the official API). The SDK client takes
an optional ``http_client`` of its own type (``httpx2.AsyncClient``).

Importing this module without the extra raises :class:`~actoviq.providers.MissingExtraError`
(an ``ImportError``) whose message is the ``pip install`` line to run.
"""

from actoviq.providers.errors import MissingExtraError

try:
    import httpx2  # noqa: F401  # pyright: ignore[reportUnusedImport]  (the SDK HTTP layer)
    import openai  # noqa: F401  # pyright: ignore[reportUnusedImport]  (needs the extra)
except ImportError as error:  # the extra is not installed (or only part of it)
    raise MissingExtraError(extra="openai", missing=error.name or "openai") from error

from actoviq.providers.mapping.chat_compat import OpenAICompat
from actoviq.providers.openai._adapters import OpenAIChatProvider, OpenAIResponsesProvider

__all__ = ["OpenAIChatProvider", "OpenAICompat", "OpenAIResponsesProvider"]
