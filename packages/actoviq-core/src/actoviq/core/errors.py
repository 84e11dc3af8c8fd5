"""The Actoviq error hierarchy (decision D3, spec 02 §1.6 and §6.6).

Every error the SDK raises on purpose is an :class:`ActoviqError` with a stable ``code``.
Errors that stand for bad input also subclass the matching builtin (``TypeError`` or
``ValueError``) so generic ``except ValueError`` code keeps working.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, TypeAlias

__all__ = [
    "ActoviqError",
    "AgentSpecError",
    "CapabilityError",
    "ItemValidationError",
    "JsonValueError",
    "ModelRefError",
    "ModelRegistryError",
    "ProviderError",
    "ProviderResponseError",
    "ProviderTransportError",
    "RunError",
    "RunPhase",
    "UnknownItemTypeError",
    "UnsupportedItemError",
    "UsageValueError",
]

RunPhase: TypeAlias = Literal[
    "prepare_input",
    "before_run",
    "model_call",
    "tool_call",
    "handoff",
    "finalize_output",
    "after_run",
    "runtime",
    "persistence",
]
"""Where a run failed. ``persistence`` (ours, not the reference's): writing the run's checkpoint,
session or events failed; the error's ``code`` and ``details["step"]`` name the step."""

# Details are JSON objects; kept as Any-valued mapping here because errors sit below json.py.
_Details: TypeAlias = "dict[str, Any]"


class ActoviqError(Exception):
    """Root of every error Actoviq raises deliberately.

    Attributes:
        code: a stable machine-readable code (``SCREAMING_SNAKE``).
        retryable: whether repeating the same operation may succeed.
        details: JSON-safe context for logs and events (never secrets).
        last_event_sequence: on the error a failed run raises, the sequence of its last event
            (``run.failed``); a retried attempt of the same run id continues after it (the
            runtime's ``event_sequence_start``). Not part of :meth:`to_json`.
        run_usage: on the error a failed run raises, the run's total
            :class:`~actoviq.core.Usage` when it failed (what its model calls spent before the
            failure, so a caller's budget can still charge it). Not part of :meth:`to_json`.
    """

    default_code: ClassVar[str] = "ACTOVIQ_ERROR"
    last_event_sequence: int | None = None
    run_usage: object | None = None  # a Usage (usage.py sits above this module)

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        retryable: bool = False,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code if code is not None else self.default_code
        self.retryable = retryable
        self.details: _Details | None = dict(details) if details is not None else None

    @property
    def name(self) -> str:
        """The concrete class name (what the reference calls ``error.name``)."""
        return type(self).__name__

    def to_json(self) -> dict[str, Any]:
        """Serialise to ``{name, message, code, retryable, details?}`` (never the cause)."""
        data: dict[str, Any] = {
            "name": self.name,
            "message": self.message,
            "code": self.code,
            "retryable": self.retryable,
        }
        if self.details is not None:
            data["details"] = dict(self.details)
        return data

    def __repr__(self) -> str:
        return f"{self.name}(code={self.code!r}, message={self.message!r})"


class RunError(ActoviqError):
    """An error that ends or refuses a run, tagged with the phase it happened in.

    Example:
        >>> RunError("Agent needs a model.", code="MODEL_REQUIRED", phase="model_call").to_json()
        {'name': 'RunError', 'message': 'Agent needs a model.', 'code': 'MODEL_REQUIRED', \
'phase': 'model_call', 'retryable': False}
    """

    default_code: ClassVar[str] = "RUN_ERROR"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        run_id: str | None = None,
        phase: RunPhase | None = None,
        retryable: bool = False,
        details: Mapping[str, Any] | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message, code=code, retryable=retryable, details=details)
        self.run_id = run_id
        self.phase: RunPhase | None = phase
        if cause is not None:
            self.__cause__ = cause

    @property
    def cause(self) -> BaseException | None:
        """The underlying exception, if any (never serialised)."""
        return self.__cause__

    def to_json(self) -> dict[str, Any]:
        """Serialise to the reference ``SerializedRunError`` (absent optionals omitted)."""
        data: dict[str, Any] = {"name": self.name, "message": self.message, "code": self.code}
        if self.run_id is not None:
            data["runId"] = self.run_id
        if self.phase is not None:
            data["phase"] = self.phase
        data["retryable"] = self.retryable
        if self.details is not None:
            data["details"] = dict(self.details)
        return data


class CapabilityError(RunError):
    """A request needs capabilities the model does not declare; raised before any network call."""

    default_code: ClassVar[str] = "CAPABILITY_ERROR"

    def __init__(
        self,
        message: str,
        *,
        provider_id: str | None = None,
        model: str | None = None,
        capability: str | Sequence[str] | None = None,
        cause: BaseException | None = None,
        code: str | None = None,
    ) -> None:
        if isinstance(capability, str) or capability is None:
            capabilities: tuple[str, ...] = tuple(capability.split(",")) if capability else ()
            joined = capability
        else:
            capabilities = tuple(capability)
            joined = ",".join(capabilities)
        details: dict[str, Any] = {}
        if provider_id is not None:
            details["providerId"] = provider_id
        if model is not None:
            details["model"] = model
        if joined is not None:
            details["capability"] = joined
        super().__init__(
            message,
            code=code,
            phase="model_call",
            retryable=False,
            details=details,
            cause=cause,
        )
        self.provider_id = provider_id
        self.model = model
        self.capability = joined
        self.capabilities = capabilities


class UnsupportedItemError(CapabilityError):
    """An adapter has no mapping for a canonical item type (ADR-001: map or refuse)."""

    default_code: ClassVar[str] = "UNSUPPORTED_ITEM"

    def __init__(
        self,
        message: str,
        *,
        item_type: str,
        provider_id: str | None = None,
        model: str | None = None,
        capability: str | None = None,
    ) -> None:
        super().__init__(message, provider_id=provider_id, model=model, capability=capability)
        self.item_type = item_type
        assert self.details is not None
        self.details["itemType"] = item_type


class ProviderError(RunError):
    """A provider call failed (phase ``model_call``)."""

    default_code: ClassVar[str] = "PROVIDER_ERROR"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        provider_id: str | None = None,
        status: int | None = None,
        retryable: bool = False,
        details: Mapping[str, Any] | None = None,
        cause: BaseException | None = None,
    ) -> None:
        merged: dict[str, Any] = dict(details or {})
        if provider_id is not None:
            merged.setdefault("providerId", provider_id)
        if status is not None:
            merged.setdefault("status", status)
        super().__init__(
            message,
            code=code,
            phase="model_call",
            retryable=retryable,
            details=merged or None,
            cause=cause,
        )
        self.provider_id = provider_id
        self.status = status


class ProviderTransportError(ProviderError):
    """The request did not get a usable answer: HTTP status errors, timeouts, connection errors."""

    default_code: ClassVar[str] = "PROVIDER_TRANSPORT_ERROR"


class ProviderResponseError(ProviderError):
    """The provider answered something we cannot accept (bad envelope, stream ``error``)."""

    default_code: ClassVar[str] = "PROVIDER_RESPONSE_ERROR"


class ModelRegistryError(RunError):
    """Model registry misuse: unknown provider, duplicate id, ambiguous reference."""

    default_code: ClassVar[str] = "MODEL_REGISTRY_ERROR"


class JsonValueError(ActoviqError, TypeError):
    """A value is not strict JSON (see :mod:`actoviq.core.json` for the rules).

    For the reference's own violations (a type JSON cannot hold, a non-finite number, a cycle)
    the message keeps the reference text ``"<label> must be a finite, acyclic JSON value."``; the
    rules this SDK adds say what was expected and where (``"metadata must be an integer within
    ±(2^53 - 1), larger ones sent as strings (invalid at $.n)."``).

    Attributes:
        label: what the value is (``"metadata"``, ``"run event data"``).
        path: where inside the value the first violation is (``$.a.b[1]``).
        reason: ``not-json``, ``non-finite``, ``unsafe-integer``, ``lone-surrogate``,
            ``non-string-key``, ``cycle``, ``too-deep`` or None (a shape error such as "a JSON
            object").
    """

    default_code: ClassVar[str] = "INVALID_JSON_VALUE"

    def __init__(
        self,
        label: str,
        path: str = "$",
        *,
        expected: str | None = None,
        reason: str | None = None,
    ) -> None:
        if expected is None:
            message = f"{label} must be a finite, acyclic JSON value."
        elif reason is None or path == "$":
            message = f"{label} must be {expected}."
        else:
            shown = path if len(path) <= 120 else f"{path[:60]}...{path[-40:]}"
            message = f"{label} must be {expected} (invalid at {shown})."
        details: dict[str, Any] = {"label": label, "path": path}
        if reason is not None:
            details["reason"] = reason
        super().__init__(message, details=details)
        self.label = label
        self.path = path
        self.expected = expected
        self.reason = reason


class ItemValidationError(ActoviqError, TypeError):
    """A canonical item (or another wire value) has a missing or wrongly typed field.

    Attributes:
        field: the wire name of the field.
        item_type: the item ``type`` (or class name).
        path: for a JSON field that is not strict JSON, where inside it (``$.a[0]``).
        reason: for such a field, the :class:`JsonValueError` reason (``unsafe-integer``...).
    """

    default_code: ClassVar[str] = "ITEM_INVALID"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        item_type: str | None = None,
        path: str | None = None,
        reason: str | None = None,
    ):
        details: dict[str, Any] = {}
        if field is not None:
            details["field"] = field
        if item_type is not None:
            details["itemType"] = item_type
        if path is not None:
            details["path"] = path
        if reason is not None:
            details["reason"] = reason
        super().__init__(message, details=details)
        self.field = field
        self.item_type = item_type
        self.path = path
        self.reason = reason


class UnknownItemTypeError(ItemValidationError):
    """An item ``type`` this version does not know; the original mapping is kept on :attr:`data`."""

    default_code: ClassVar[str] = "UNKNOWN_ITEM_TYPE"

    def __init__(self, item_type: object, data: Mapping[str, Any]) -> None:
        super().__init__(
            f"Unknown canonical item type {item_type!r}; keep it with preserve_unknown=True "
            "or reject it explicitly.",
            field="type",
            item_type=str(item_type),
        )
        self.data = dict(data)


class UsageValueError(ActoviqError, ValueError):
    """A usage counter is negative, non-finite, fractional or not a number (a RangeError)."""

    default_code: ClassVar[str] = "USAGE_INVALID"

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message, details={"field": field})
        self.field = field


class AgentSpecError(ActoviqError, ValueError):
    """An ``AgentSpec`` (or ``RunLimits``) declaration is invalid; :attr:`field` names the field."""

    default_code: ClassVar[str] = "AGENT_SPEC_INVALID"

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message, details={"field": field})
        self.field = field


class ModelRefError(ActoviqError, ValueError):
    """A model reference string or object cannot be parsed."""

    default_code: ClassVar[str] = "MODEL_REF_INVALID"


class FieldReplacerError(ActoviqError, TypeError):
    """:func:`~actoviq.core.field_replacer` cannot copy that class or field faithfully."""

    default_code: ClassVar[str] = "FIELD_REPLACER_INVALID"

    def __init__(self, message: str, *, cls: str, field: str) -> None:
        super().__init__(message, details={"class": cls, "field": field})
        self.field = field
