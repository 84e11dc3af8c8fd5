"""Tool failures and the errors of the tool layer (spec 03 §4.4, D5, Q24).

A :class:`ToolExecutionError` is an *expected* tool outcome: the runtime turns it into an error
``tool_result`` and the run continues. :class:`ToolInterruptionRequiredError` pauses the run for an
approval. :class:`ToolCallDenied` is what a ``beforeToolCall`` middleware raises to deny a call
gracefully. Everything else (definition and registry errors) is a programming error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, TypeAlias

import attrs

from actoviq.core import ActoviqError, JsonObject

if TYPE_CHECKING:
    from actoviq.runtime.tools.policy import InterruptDecision

__all__ = [
    "ToolCallDenied",
    "ToolDefinitionError",
    "ToolErrorFormatter",
    "ToolExecutionError",
    "ToolFailure",
    "ToolFailureKind",
    "ToolInterruptionRequiredError",
    "ToolRegistryError",
    "format_failure",
]

ToolFailureKind: TypeAlias = Literal[
    "not_found", "validation", "denied", "timeout", "cancelled", "execution"
]


@attrs.frozen(kw_only=True, slots=True)
class ToolFailure:
    """Why one tool invocation did not produce an output.

    ``retryable`` is diagnostic only; it never authorises a retry (ADR-010).
    """

    kind: ToolFailureKind
    tool_name: str
    call_id: str
    message: str
    retryable: bool = False
    cause: BaseException | None = attrs.field(default=None, eq=False, repr=False)

    def to_json(self) -> JsonObject:
        """The ``tool.failed`` payload: camelCase, the cause as ``{type, message}`` only (S12)."""
        data: JsonObject = {
            "kind": self.kind,
            "toolName": self.tool_name,
            "callId": self.call_id,
            "message": self.message,
            "retryable": self.retryable,
        }
        if self.cause is not None:
            data["cause"] = {"type": type(self.cause).__name__, "message": str(self.cause)}
        return data


class ToolExecutionError(ActoviqError):
    """A tool invocation failed in an expected way; carries the :class:`ToolFailure`.

    Example:
        >>> failure = ToolFailure(kind="denied", tool_name="rm", call_id="c1", message="no")
        >>> str(ToolExecutionError(failure))
        'no'
    """

    default_code: ClassVar[str] = "TOOL_EXECUTION_ERROR"

    def __init__(self, failure: ToolFailure) -> None:
        super().__init__(
            failure.message,
            retryable=failure.retryable,
            details={
                "kind": failure.kind,
                "toolName": failure.tool_name,
                "callId": failure.call_id,
            },
        )
        self.failure = failure
        if failure.cause is not None:
            self.__cause__ = failure.cause

    @property
    def kind(self) -> ToolFailureKind:
        """The failure kind."""
        return self.failure.kind


class ToolInterruptionRequiredError(ActoviqError):
    """The call needs a decision from outside (an approval) before it may run."""

    default_code: ClassVar[str] = "TOOL_INTERRUPTION_REQUIRED"

    def __init__(self, decision: InterruptDecision, tool_name: str, call_id: str) -> None:
        super().__init__(
            decision.reason,
            details={
                "interruptionId": decision.interruption_id,
                "toolName": tool_name,
                "callId": call_id,
            },
        )
        self.decision = decision
        self.tool_name = tool_name
        self.call_id = call_id

    @property
    def interruption_id(self) -> str:
        """The id an ``InterruptionDecision`` must name."""
        return self.decision.interruption_id


class ToolCallDenied(ActoviqError):
    """Raise in ``beforeToolCall`` middleware to deny a call; the run records a denied result."""

    default_code: ClassVar[str] = "TOOL_CALL_DENIED"

    def __init__(self, reason: str = "Tool call denied by middleware.") -> None:
        super().__init__(reason)
        self.reason = reason


class ToolDefinitionError(ActoviqError, TypeError, ValueError):
    """A tool, schema or behaviour declaration is invalid (caught at definition time)."""

    default_code: ClassVar[str] = "TOOL_DEFINITION_INVALID"


class ToolRegistryError(ActoviqError, ValueError):
    """Registry misuse, e.g. a duplicate tool name."""

    default_code: ClassVar[str] = "TOOL_REGISTRY_ERROR"


class ToolErrorFormatter(Protocol):
    """Turns a failure into the text the model sees in the error ``tool_result``."""

    def format(self, failure: ToolFailure) -> str:
        """Return the message for ``failure``."""
        ...


def format_failure(
    error: ToolExecutionError | ToolFailure, formatter: ToolErrorFormatter | None = None
) -> str:
    """Format a failure: ``formatter.format(failure)``, or the default ``"<kind>: <message>"``.

    Example:
        >>> format_failure(ToolFailure(kind="timeout", tool_name="t", call_id="c", message="slow"))
        'timeout: slow'
    """
    failure = error.failure if isinstance(error, ToolExecutionError) else error
    if formatter is not None:
        return formatter.format(failure)
    return f"{failure.kind}: {failure.message}"
