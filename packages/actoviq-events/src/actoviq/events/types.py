"""Known event types (spec 03 §5.2) and their payload shapes.

``RunEvent.type`` is an open string: readers must accept types they do not know. The registry
records what this SDK emits, which types end a run and which are emitted only when streaming;
higher packages add their own types with :func:`register_event_type`.

The payload ``TypedDict``s use the wire (camelCase) keys, so a payload is built directly:

Example:
    >>> RunStartedData(agentId="concise")
    {'agentId': 'concise'}
    >>> EVENT_TYPES["run.completed"].terminal
    True
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final, Literal, NotRequired, TypedDict

import attrs

from actoviq.core import ActoviqError, JsonObject, JsonValue
from actoviq.events.errors import EventValidationError

__all__ = [
    "EVENT_TYPES",
    "TERMINAL_EVENT_TYPES",
    "ErrorData",
    "EventTypeInfo",
    "EventTypeRegistry",
    "InterruptionData",
    "KnownEventType",
    "ModelCompletedData",
    "ModelProviderEventData",
    "ModelReasoningDeltaData",
    "ModelRequestedData",
    "ModelResponseCompletedData",
    "ModelTextDeltaData",
    "ModelToolCallDeltaData",
    "ModelUsageData",
    "RunCancelledData",
    "RunCompletedData",
    "RunFailedData",
    "RunInterruptedData",
    "RunResumedData",
    "RunStartedData",
    "SessionCommittedData",
    "SessionLoadedData",
    "ToolCompletedData",
    "ToolFailedData",
    "ToolFailureCauseData",
    "ToolFailureData",
    "ToolProgressData",
    "ToolRejectedData",
    "ToolStartedData",
    "error_data",
    "is_terminal_event_type",
    "register_event_type",
]

KnownEventType = Literal[
    "run.started",
    "run.resumed",
    "session.loaded",
    "model.requested",
    "model.text.delta",
    "model.tool_call.delta",
    "model.reasoning.delta",
    "model.usage",
    "model.provider.event",
    "model.response.completed",
    "model.completed",
    "tool.started",
    "tool.progress",
    "tool.completed",
    "tool.failed",
    "tool.rejected",
    "session.committed",
    "run.completed",
    "run.interrupted",
    "run.cancelled",
    "run.failed",
]
"""Every event type the SDK itself emits (hosts may add their own namespaced types)."""


@attrs.frozen(kw_only=True, slots=True)
class EventTypeInfo:
    """What the SDK knows about one event type.

    Attributes:
        name: the ``type`` string.
        terminal: the event ends its run (no further events of that run follow).
        stream_only: emitted only in streaming model mode.
        description: one line for docs.
    """

    name: str
    terminal: bool = False
    stream_only: bool = False
    description: str = ""


class EventTypeRegistry(Mapping[str, EventTypeInfo]):
    """A read-mostly mapping of known types; ``register`` adds a type (duplicates are errors)."""

    def __init__(self, infos: tuple[EventTypeInfo, ...] = ()) -> None:
        self._infos: dict[str, EventTypeInfo] = {}
        for info in infos:
            self.register(info)

    def register(self, info: EventTypeInfo) -> EventTypeInfo:
        """Add a type.

        Raises:
            EventValidationError: the name is blank or already registered with other properties.
        """
        if not info.name.strip():
            raise EventValidationError("Run event type must not be empty.")
        known = self._infos.get(info.name)
        if known is not None and known != info:
            raise EventValidationError(f'Event type "{info.name}" is already registered.')
        self._infos[info.name] = info
        return info

    def __getitem__(self, key: str) -> EventTypeInfo:
        return self._infos[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._infos)

    def __len__(self) -> int:
        return len(self._infos)


def _info(name: KnownEventType, description: str, **flags: bool) -> EventTypeInfo:
    return EventTypeInfo(name=name, description=description, **flags)


EVENT_TYPES: Final = EventTypeRegistry(
    (
        _info("run.started", "start of a fresh execution"),
        _info("run.resumed", "start of a resumed execution"),
        _info("session.loaded", "session history loaded on turn 0"),
        _info("model.requested", "before each model call"),
        _info("model.text.delta", "streamed text", stream_only=True),
        _info("model.tool_call.delta", "streamed tool-call arguments", stream_only=True),
        _info("model.reasoning.delta", "streamed reasoning", stream_only=True),
        _info("model.usage", "informational streamed usage", stream_only=True),
        _info("model.provider.event", "raw provider event (opt-in)", stream_only=True),
        _info("model.response.completed", "the provider finished a response", stream_only=True),
        _info("model.completed", "after a model response was applied"),
        _info("tool.started", "a tool call begins"),
        _info("tool.progress", "a running tool reported progress"),
        _info("tool.completed", "a tool call committed"),
        _info("tool.failed", "a tool call failed"),
        _info("tool.rejected", "an approval was rejected"),
        _info("session.committed", "session appended at completion"),
        _info("run.completed", "terminal: the run completed", terminal=True),
        _info("run.interrupted", "terminal: the run waits for a decision", terminal=True),
        _info("run.cancelled", "terminal: the run was cancelled", terminal=True),
        _info("run.failed", "terminal: the run failed", terminal=True),
    )
)
"""The registry of known event types (open: unknown types are still valid events)."""

TERMINAL_EVENT_TYPES: Final = frozenset(
    {"run.completed", "run.interrupted", "run.cancelled", "run.failed", "run.error"}
)
"""Types that end a run (``run.error`` is a legacy terminal some adapters still emit)."""


def register_event_type(
    name: str, *, terminal: bool = False, stream_only: bool = False, description: str = ""
) -> EventTypeInfo:
    """Register an additional event type in :data:`EVENT_TYPES` (idempotent for equal infos)."""
    return EVENT_TYPES.register(
        EventTypeInfo(
            name=name, terminal=terminal, stream_only=stream_only, description=description
        )
    )


def is_terminal_event_type(name: str) -> bool:
    """True when ``name`` ends a run."""
    if name in TERMINAL_EVENT_TYPES:
        return True
    info = EVENT_TYPES.get(name)
    return info is not None and info.terminal


class ErrorData(TypedDict):
    """A JSON-safe error: never a traceback or a raw exception object (S12)."""

    name: str
    message: str
    code: NotRequired[str]


def error_data(error: BaseException) -> ErrorData:
    """Describe an exception safely for event data: ``{name, message, code?}``, no traceback.

    Messages may still hold secrets; the redaction processor (with text scanning) cleans them.

    Example:
        >>> error_data(ValueError("bad input"))
        {'name': 'ValueError', 'message': 'bad input'}
    """
    data = ErrorData(name=type(error).__name__, message=str(error))
    if isinstance(error, ActoviqError):
        data["code"] = error.code
    return data


class RunStartedData(TypedDict):
    """``run.started``."""

    agentId: str


class RunResumedData(TypedDict):
    """``run.resumed``."""

    agentId: str


class SessionLoadedData(TypedDict):
    """``session.loaded``."""

    sessionId: str
    revision: str
    itemCount: int


class ModelRequestedData(TypedDict):
    """``model.requested``: ``turn`` is the upcoming 1-based turn."""

    turn: int
    model: str | JsonObject


class ModelTextDeltaData(TypedDict):
    """``model.text.delta``."""

    delta: str
    outputIndex: NotRequired[int]


class ModelToolCallDeltaData(TypedDict):
    """``model.tool_call.delta``.

    As emitted, ``argumentsDelta`` is a raw piece of the call's JSON arguments. The default
    redaction processor withholds it (it is JSON text a key-based engine cannot redact):
    delivered events carry ``argumentsLength`` instead, and the delta that completes the call's
    arguments also carries them parsed and redacted as ``arguments``.
    ``RedactionPolicy(raw_argument_deltas=True)`` delivers ``argumentsDelta`` as it came.
    """

    callId: str
    name: NotRequired[str]
    argumentsDelta: NotRequired[str]
    argumentsLength: NotRequired[int]
    arguments: NotRequired[JsonObject]
    outputIndex: NotRequired[int]


class ModelReasoningDeltaData(TypedDict):
    """``model.reasoning.delta`` (``opaque`` is a provider blob)."""

    delta: NotRequired[str]
    opaque: NotRequired[JsonValue]
    outputIndex: NotRequired[int]


class ModelUsageData(TypedDict):
    """``model.usage`` (informational; ``usage`` is ``Usage.to_json()``)."""

    usage: JsonObject


class ModelProviderEventData(TypedDict):
    """``model.provider.event`` (opt-in raw provider event)."""

    provider: str
    event: JsonValue


class ModelResponseCompletedData(TypedDict):
    """``model.response.completed``."""

    responseId: NotRequired[str]
    finishReason: str


class ModelCompletedData(TypedDict):
    """``model.completed``: ``turn`` is the new value."""

    turn: int
    finishReason: str
    usage: JsonObject


class ToolStartedData(TypedDict):
    """``tool.started``."""

    callId: str
    name: str
    effect: str


class ToolProgressData(TypedDict):
    """``tool.progress``: ``progress`` is ``{type, progress, total?, message?, data?}``."""

    callId: str
    name: str
    progress: JsonObject


class ToolCompletedData(TypedDict):
    """``tool.completed``."""

    callId: str
    name: str
    artifacts: NotRequired[list[JsonValue]]


class ToolFailureCauseData(TypedDict):
    """The exception behind a tool failure: its type name and message (no traceback)."""

    type: str
    message: str


class ToolFailureData(TypedDict):
    """A tool failure (``ToolFailure.to_json()``): why a call produced no output.

    ``kind`` is ``not_found``, ``validation``, ``denied``, ``timeout``, ``cancelled``,
    ``execution`` or ``retry``; ``message`` is what the model is shown (bounded, redacted).
    """

    kind: str
    toolName: str
    callId: str
    message: str
    retryable: bool
    cause: NotRequired[ToolFailureCauseData]


class ToolFailedData(TypedDict):
    """``tool.failed``: ``failure`` is JSON-safe (see :class:`ToolFailureData`)."""

    callId: str
    name: str
    failure: ToolFailureData


class ToolRejectedData(TypedDict):
    """``tool.rejected``."""

    callId: str
    name: str


class SessionCommittedData(TypedDict):
    """``session.committed``."""

    sessionId: str
    revision: str


class RunCompletedData(TypedDict):
    """``run.completed``: ``checkpoint`` (``{deleted: false, error}``) if cleanup failed."""

    status: str
    usage: JsonObject
    checkpoint: NotRequired[JsonObject]


class InterruptionData(TypedDict):
    """One open interruption of ``run.interrupted`` (``kind``: approval or reconciliation)."""

    id: str
    kind: str
    reason: str
    callId: NotRequired[str]
    toolName: NotRequired[str]


class RunInterruptedData(TypedDict):
    """``run.interrupted``: the first interruption's id and reason, and every open one."""

    interruptionId: str
    reason: str
    interruptions: NotRequired[list[InterruptionData]]


class RunCancelledData(TypedDict):
    """``run.cancelled``: ``code`` when the reason was an Actoviq error (e.g. a deadline)."""

    reason: str
    code: NotRequired[str]


class RunFailedData(TypedDict):
    """``run.failed``: the typed error and, with a store, what the checkpoint holds."""

    error: ErrorData | JsonObject
    checkpoint: NotRequired[JsonObject]
