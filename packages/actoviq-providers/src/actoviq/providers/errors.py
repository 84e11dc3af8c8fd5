"""Errors of the provider layer, all rooted in core's :class:`~actoviq.core.ActoviqError`.

Core owns the shared hierarchy (``CapabilityError``, ``UnsupportedItemError``, ``ProviderError``,
``ProviderTransportError``, ``ProviderResponseError``, ``ModelRegistryError``); this module adds the
few cases only the provider layer raises.
"""

from __future__ import annotations

from typing import ClassVar

from actoviq.core import AbortError, ActoviqError, ModelRegistryError, RunError

__all__ = [
    "InvalidModelRequestError",
    "ModelCallAbortedError",
    "ModelCallTimeoutError",
    "ModelOwnershipError",
    "ProviderOptionsError",
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
