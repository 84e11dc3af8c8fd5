"""Errors of the provider layer, all rooted in core's :class:`~actoviq.core.ActoviqError`.

Core owns the shared hierarchy (``CapabilityError``, ``UnsupportedItemError``, ``ProviderError``,
``ProviderTransportError``, ``ProviderResponseError``, ``ModelRegistryError``); this module adds the
few cases only the provider layer raises.
"""

from __future__ import annotations

from typing import ClassVar

from actoviq.core import (
    AbortError,
    ActoviqError,
    ModelRegistryError,
    ProviderResponseError,
    RunError,
)

__all__ = [
    "InvalidModelRequestError",
    "MissingAPIKeyError",
    "MissingExtraError",
    "ModelCallAbortedError",
    "ModelCallTimeoutError",
    "ModelOwnershipError",
    "ProviderConfigurationError",
    "ProviderOptionsError",
    "ProviderStreamError",
    "StreamConsumedError",
]


class ModelOwnershipError(ModelRegistryError, TypeError):
    """A model reference or resolved model belongs to another provider.

    It is also a ``TypeError`` (the reference raises a plain ``TypeError`` for ownership problems).
    """

    default_code: ClassVar[str] = "MODEL_OWNERSHIP_ERROR"


class ModelCallAbortedError(RunError, AbortError):
    """A model call or stream was aborted before it completed (the reference ``AbortError``).

    Raised only when the abort signal carries no exception of its own; otherwise that reason is
    raised as-is.
    """

    default_code: ClassVar[str] = "MODEL_CALL_ABORTED"

    def __init__(self, message: str = "Model call aborted.", *, reason: object = None) -> None:
        super().__init__(message, phase="model_call")
        self.reason = reason

    @property
    def name(self) -> str:
        """``AbortError``: the name the reference gives every abort."""
        return "AbortError"


class ModelCallTimeoutError(ModelCallAbortedError):
    """The call's deadline passed (``MODEL_CALL_TIMEOUT``, decision D5)."""

    default_code: ClassVar[str] = "MODEL_CALL_TIMEOUT"

    def __init__(
        self, message: str = "Model call deadline exceeded.", *, retryable: bool = False
    ) -> None:
        super().__init__(message)
        # A provider's HTTP timeout is worth retrying; the call's own deadline passing is not.
        self.retryable = retryable


class StreamConsumedError(ActoviqError, RuntimeError):
    """A model stream was iterated twice: streams have exactly one consumer."""

    default_code: ClassVar[str] = "STREAM_ALREADY_CONSUMED"


class ProviderOptionsError(ActoviqError, ValueError):
    """``provider_options`` tried to set a key the adapter owns (02 §6.8 item 15)."""

    default_code: ClassVar[str] = "PROVIDER_OPTIONS_INVALID"


class InvalidModelRequestError(ActoviqError, ValueError):
    """A request field has a value the target provider API cannot accept (e.g. metadata shape)."""

    default_code: ClassVar[str] = "INVALID_MODEL_REQUEST"


class ProviderStreamError(ProviderResponseError):
    """A provider stream ended without its terminal event (``PROVIDER_STREAM_ERROR``).

    A stream that closes early (the server answered 200 and then closed, or the connection
    ended between events) is a failure, never an empty success. ``retryable`` is True only when
    no event was delivered before the end (repeating the call cannot duplicate output anyone
    saw); ``details["eventsDelivered"]`` says how many mapped events were.
    """

    default_code: ClassVar[str] = "PROVIDER_STREAM_ERROR"


class ProviderConfigurationError(ActoviqError, ValueError):
    """A provider was built with settings it cannot work with (``PROVIDER_CONFIGURATION_ERROR``).

    Raised at construction, before any network call; the message says what to change.
    """

    default_code: ClassVar[str] = "PROVIDER_CONFIGURATION_ERROR"


class MissingAPIKeyError(ProviderConfigurationError):
    """No API key was given and its environment variable is unset (``PROVIDER_API_KEY_MISSING``).

    Attributes:
        env_var: the environment variable the provider reads the key from.
    """

    default_code: ClassVar[str] = "PROVIDER_API_KEY_MISSING"

    def __init__(self, message: str, *, env_var: str) -> None:
        super().__init__(message, details={"envVar": env_var})
        self.env_var = env_var


# ``name`` is ActoviqError's (the class name), not ImportError's module name: see ``missing``.
class MissingExtraError(ActoviqError, ImportError):  # pyright: ignore[reportIncompatibleVariableOverride]
    """An adapter module was imported without its extra's dependencies (``PROVIDER_EXTRA_MISSING``).

    The message carries the ``pip install`` line that fixes it. It is also an ``ImportError``,
    so ``except ImportError`` keeps working.

    Attributes:
        extra: the extra to install (``"openai"`` or ``"anthropic"``).
        missing: the module that failed to import.
    """

    default_code: ClassVar[str] = "PROVIDER_EXTRA_MISSING"

    def __init__(self, *, extra: str, missing: str) -> None:
        install = f'pip install "actoviq-providers[{extra}]"'
        ActoviqError.__init__(
            self,
            f"actoviq.providers.{extra} needs the optional dependency {missing!r}, which is not "
            f"installed. Install the extra: {install}",
            details={"extra": extra, "missing": missing, "install": install},
        )
        self.extra = extra
        self.missing = missing
