"""The Anthropic Messages adapter on the official ``anthropic`` SDK (extra ``[anthropic]``).

The SDK client takes an optional ``http_client`` of its own type (``httpx2.AsyncClient``).
Importing this module without the extra raises :class:`~actoviq.providers.MissingExtraError`
(an ``ImportError``) whose message is the ``pip install`` line to run.
"""

from actoviq.providers.errors import MissingExtraError

try:
    import anthropic  # noqa: F401  # pyright: ignore[reportUnusedImport]  (needs the extra)
    import httpx2  # noqa: F401  # pyright: ignore[reportUnusedImport]  (the SDK HTTP layer)
except ImportError as error:  # the extra is not installed (or only part of it)
    raise MissingExtraError(extra="anthropic", missing=error.name or "anthropic") from error

from actoviq.providers.anthropic._adapter import AnthropicProvider

__all__ = ["AnthropicProvider"]
