"""Decisions about tool calls: a policy's verdict and the host's answer to an interruption.

A leaf module (core only), so the descriptor, the errors, the policy and the pending state can all
name these values without importing each other.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeAlias, cast

import attrs

from actoviq.core import (
    UNSET,
    Interruption,
    ItemValidationError,
    JsonObject,
    JsonValue,
    Unset,
    json_value_error,
    register_wire_class,
)
from actoviq.runtime.tools.effects import ToolEffect

__all__ = [
    "AllowDecision",
    "DecisionOutcome",
    "DenyDecision",
    "InterruptDecision",
    "InterruptionDecision",
    "ToolDecision",
    "approval_interruption_id",
    "idempotency_key_for",
    "reconciliation_interruption_id",
]


def approval_interruption_id(run_id: str, call_id: str) -> str:
    """The approval interruption id the runner uses: ``"<runId>:<callId>"``."""
    return f"{run_id}:{call_id}"


def reconciliation_interruption_id(run_id: str, call_id: str) -> str:
    """The reconciliation interruption id: ``"<runId>:<callId>:reconcile"``."""
    return f"{run_id}:{call_id}:reconcile"


def idempotency_key_for(run_id: str, call_id: str, effect: ToolEffect) -> str | None:
    """``"<runId>:<callId>"`` for ``idempotent-write`` tools, None otherwise (ADR-010)."""
    return f"{run_id}:{call_id}" if effect == "idempotent-write" else None


@attrs.frozen(kw_only=True, slots=True)
class AllowDecision:
    """Run the tool."""

    type: ClassVar[Literal["allow"]] = "allow"


@attrs.frozen(kw_only=True, slots=True)
class DenyDecision:
    """Do not run the tool; the model sees a ``denied`` error result with ``reason``."""

    type: ClassVar[Literal["deny"]] = "deny"
    reason: str


@attrs.frozen(kw_only=True, slots=True)
class InterruptDecision:
    """Pause the run for an approval (the "ask" case)."""

    type: ClassVar[Literal["interrupt"]] = "interrupt"
    interruption_id: str
    reason: str
    metadata: JsonObject | None = None


ToolDecision: TypeAlias = AllowDecision | DenyDecision | InterruptDecision
"""What a tool policy decided for one call: allow, deny, or interrupt for approval."""


DecisionOutcome: TypeAlias = Literal["approve", "reject", "committed", "failed", "retry"]
"""What became of a tool approval decision."""
_OUTCOMES: tuple[DecisionOutcome, ...] = ("approve", "reject", "committed", "failed", "retry")


def _check_outcome(_: object, __: object, value: object) -> None:
    if value not in _OUTCOMES:
        raise ItemValidationError(
            f"InterruptionDecision.outcome must be one of {', '.join(_OUTCOMES)}.", field="outcome"
        )


def _check_text(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    optional = attribute.name == "reason"
    if optional and value is None:
        return
    if (
        type(value) is not str
        or (not optional and not value)
        or json_value_error(value) is not None  # a lone surrogate
    ):
        shown = "a string" if optional else "a non-empty string"
        raise ItemValidationError(
            f"InterruptionDecision.{attribute.name} must be {shown} of valid Unicode, "
            f"got {type(value).__name__}.",
            field=attribute.name,
        )


def _check_metadata(_: object, __: object, value: object) -> None:
    if value is None:
        return
    if type(value) is not dict:
        raise ItemValidationError(
            f"InterruptionDecision.metadata must be a JSON object, got {type(value).__name__}.",
            field="metadata",
        )
    found = json_value_error(cast(object, value), "InterruptionDecision.metadata")
    if found is not None:
        raise ItemValidationError(
            found.message, field="metadata", path=found.path, reason=found.reason
        )


def _check_output(_: object, __: object, value: object) -> None:
    if isinstance(value, Unset):
        return
    error = json_value_error(value, "InterruptionDecision.output")
    if error is not None:
        raise ItemValidationError(
            error.message, field="output", path=error.path, reason=error.reason
        )


@attrs.frozen(kw_only=True, slots=True)
class InterruptionDecision:
    """The host's answer to one interruption.

    ``approve`` / ``reject`` answer approvals. ``committed`` (with the ``output`` the effect
    produced), ``failed`` (with a ``reason``) and ``retry`` (read / idempotent-write only) answer
    reconciliations.

    Example:
        >>> InterruptionDecision.approve("run-1:call-1").outcome
        'approve'
    """

    interruption_id: str = attrs.field(validator=_check_text)
    outcome: DecisionOutcome = attrs.field(validator=_check_outcome)
    reason: str | None = attrs.field(default=None, validator=_check_text)
    output: JsonValue | Unset = attrs.field(default=UNSET, validator=_check_output)
    metadata: JsonObject | None = attrs.field(default=None, validator=_check_metadata)

    @classmethod
    def approve(
        cls, interruption_id: str | Interruption, metadata: JsonObject | None = None
    ) -> InterruptionDecision:
        """Approve a pending approval (give its id, or the :class:`Interruption` itself)."""
        return cls(interruption_id=_id(interruption_id), outcome="approve", metadata=metadata)

    @classmethod
    def reject(
        cls, interruption_id: str | Interruption, reason: str | None = None
    ) -> InterruptionDecision:
        """Reject a pending approval (the model sees a ``denied`` result)."""
        return cls(interruption_id=_id(interruption_id), outcome="reject", reason=reason)

    @classmethod
    def committed(
        cls, interruption_id: str | Interruption, output: JsonValue
    ) -> InterruptionDecision:
        """Reconcile an unknown call as done, with the output it produced."""
        return cls(interruption_id=_id(interruption_id), outcome="committed", output=output)

    @classmethod
    def failed(cls, interruption_id: str | Interruption, reason: str) -> InterruptionDecision:
        """Reconcile an unknown call as failed (it had no effect)."""
        return cls(interruption_id=_id(interruption_id), outcome="failed", reason=reason)

    @classmethod
    def retry(cls, interruption_id: str | Interruption) -> InterruptionDecision:
        """Run an unknown read / idempotent-write call again (same idempotency key)."""
        return cls(interruption_id=_id(interruption_id), outcome="retry")


def _id(value: str | Interruption) -> str:
    return value.id if isinstance(value, Interruption) else value


register_wire_class(InterruptionDecision)
