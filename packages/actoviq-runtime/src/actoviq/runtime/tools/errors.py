"""Tool failures and the errors of the tool layer (spec 03 §4.4, D5, Q24).

A :class:`ToolExecutionError` is an *expected* tool outcome: the runtime turns it into an error
``tool_result`` and the run continues. :class:`ToolInterruptionRequiredError` pauses the run for an
approval. :class:`ToolSuspension`, raised by a running tool, pauses the run until the host decides
the interruptions it carries (a child agent's approval). :class:`ToolCallDenied` is what a
``beforeToolCall`` middleware raises to deny a call gracefully. Everything else (definition and
registry errors) is a programming error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from actoviq.core import (
    ActoviqError,
    Interruption,
    ToolExecutionError,
    ToolFailure,
    ToolFailureKind,
)

if TYPE_CHECKING:
    from actoviq.runtime.tools.decisions import InterruptDecision

__all__ = [
    "ToolCallDenied",
    "ToolDefinitionError",
    "ToolErrorFormatter",
    "ToolExecutionError",
    "ToolFailure",
    "ToolFailureKind",
    "ToolInterruptionRequiredError",
    "ToolOutputTooLargeError",
    "ToolProgressError",
    "ToolRegistryError",
    "ToolRetry",
    "ToolSuspension",
    "format_failure",
]

# ToolFailure / ToolExecutionError live in actoviq.core (every layer catches them); re-exported.


class ToolOutputTooLargeError(ActoviqError):
    """A tool returned more than its ``max_output_chars`` (the cause of a ``validation`` failure).

    ``details``: ``toolName``, ``size`` (characters counted, at least ``limit + 1``; counting
    stops there) and ``limit``.
    """

    default_code: ClassVar[str] = "TOOL_OUTPUT_TOO_LARGE"

    def __init__(self, tool_name: str, size: int, limit: int) -> None:
        super().__init__(
            f'Tool "{tool_name}" returned more than {limit:,} characters of output (its '
            f"max_output_chars); the result was discarded, nothing of it was recorded. Return "
            "less (a summary, a page, an artifact) or raise the tool's limit.",
            details={"toolName": tool_name, "size": size, "limit": limit},
        )
        self.tool_name = tool_name
        self.size = size
        self.limit = limit


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


class ToolSuspension(ActoviqError):
    """Raised by a running tool to pause the run until the host decides ``interruptions``.

    The call becomes ``awaiting_approval``; the run ends ``interrupted`` with these interruptions
    (their ``metadata`` gains ``suspendedCallId``/``suspendedToolName``) and the state keeps them.
    ``resume()`` with decisions for any of them invokes the tool **again** with
    ``ctx.resumption`` (the interruptions and the decisions), skipping the policy and approval
    gate it already passed; without a decision the run interrupts again. Agent-as-tool uses it
    so a child's approval surfaces in, and resumes through, the manager's run.
    """

    default_code: ClassVar[str] = "TOOL_SUSPENDED"

    def __init__(self, interruptions: Sequence[Interruption]) -> None:
        super().__init__(
            interruptions[0].reason if interruptions else "Tool suspended.",
            details={"interruptionIds": [entry.id for entry in interruptions]},
        )
        self.interruptions = tuple(interruptions)


class ToolCallDenied(ActoviqError):
    """Raise in ``beforeToolCall`` middleware to deny a call; the run records a denied result."""

    default_code: ClassVar[str] = "TOOL_CALL_DENIED"

    def __init__(self, reason: str = "Tool call denied by middleware.") -> None:
        super().__init__(reason)
        self.reason = reason


class ToolRetry(ActoviqError):
    """Raise inside a tool to ask the model to call it again, e.g. with corrected arguments.

    The model sees ``message`` in the call's error result (kind ``retry``). A tool accepts at
    most its ``max_retries`` consecutive retries and invalid-argument calls per run (a success
    resets the count); one more fails the run with ``RunError`` ``TOOL_RETRIES_EXCEEDED``.

    Example:
        >>> # @tool(max_retries=2)
        >>> # def book(day: str) -> str:
        >>> #     if day < today():
        >>> #         raise ToolRetry(f"{day} is in the past; pick a day from {today()} on.")
    """

    default_code: ClassVar[str] = "TOOL_RETRY"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolDefinitionError(ActoviqError, TypeError, ValueError):
    """A tool, schema or behaviour declaration is invalid (caught at definition time)."""

    default_code: ClassVar[str] = "TOOL_DEFINITION_INVALID"


class ToolProgressError(ActoviqError, ValueError):
    """A tool reported progress that is not a finite number (or a bad message or data)."""

    default_code: ClassVar[str] = "TOOL_PROGRESS_INVALID"


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
