"""Options of :class:`~actoviq.mcp.server.McpServer`: restart policy, keywords, progress."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypedDict

import attrs

from actoviq.mcp.errors import McpConfigurationError

__all__ = ["McpServerOptions", "ProgressCallback", "RestartPolicy", "check_timeout"]


ProgressCallback = Callable[[float, "float | None", "str | None"], Awaitable[None]]
"""``(progress, total, message)``: one ``notifications/progress`` of a call."""


def _positive_int(_: object, attribute: attrs.Attribute[Any], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise McpConfigurationError(f"RestartPolicy.{attribute.name} must be an integer >= 0.")


def _positive_ms(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)  # pyright: ignore[reportUnnecessaryIsInstance]
        or not math.isfinite(value)
        or value < 0
    ):
        raise McpConfigurationError(f"{attribute.name} must be a finite number >= 0.")


@attrs.frozen(kw_only=True, slots=True)
class RestartPolicy:
    """How a crashed server is restarted: on next use, after a backoff, a bounded number of times.

    ``max_restarts`` consecutive restarts without a successful request in between are allowed;
    the next crash makes the server unavailable (:class:`McpServerUnavailableError`) until
    :meth:`McpServer.reset`. Restart ``n`` waits ``initial_backoff_ms * multiplier**(n-1)``
    (capped at ``max_backoff_ms``) first.
    """

    max_restarts: int = attrs.field(default=3, validator=_positive_int)
    initial_backoff_ms: float = attrs.field(default=100.0, validator=_positive_ms)
    max_backoff_ms: float = attrs.field(default=5_000.0, validator=_positive_ms)
    multiplier: float = attrs.field(default=2.0, validator=_positive_ms)

    def backoff_ms(self, restart: int) -> float:
        """The wait before restart number ``restart`` (1-based)."""
        delay = self.initial_backoff_ms * self.multiplier ** max(restart - 1, 0)
        return min(delay, self.max_backoff_ms)


class McpServerOptions(TypedDict, total=False):
    """Keyword options shared by every :class:`McpServer` constructor."""

    name: str | None
    mode: Literal["auto", "legacy"] | str
    connect_timeout_ms: float
    call_timeout_ms: float
    restart: RestartPolicy | None


def check_timeout(value: float, label: str) -> float:
    """``value`` as a float when positive, finite milliseconds; else a typed error."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise McpConfigurationError(f"{label} must be a positive finite number of milliseconds.")
    if value <= 0:
        raise McpConfigurationError(f"{label} must be a positive finite number of milliseconds.")
    return float(value)
