"""The catalogue of run events: one typed class per event type the runtime emits (issue 14 §4).

Every event of a catalogued type *is* an instance of its class (a :class:`RunEvent` subclass,
chosen by ``type`` however the event was built: by the runtime, from JSON, by ``attrs.evolve``),
and its ``data`` is typed by a ``TypedDict`` with the wire (camelCase) keys. So ``isinstance``,
``match`` and ``event.type == ...`` on :data:`RuntimeEvent` narrow ``data`` for the type checker,
while the wire format is unchanged: the classes add no field and no key. Types the catalogue does
not know (a host's own events) stay plain :class:`RunEvent` with JSON ``data``.

Example:
    >>> from actoviq.events import RunEvent
    >>> event = RunEvent(
    ...     event_id="e1", sequence=1, run_id="r1", trace_id="0" * 32, span_id="1" * 16,
    ...     type="model.text.delta", timestamp="2026-01-01T00:00:00.000Z", data={"delta": "Hi"},
    ... )
    >>> isinstance(event, ModelTextDeltaEvent), event.data["delta"]
    (True, 'Hi')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal, NotRequired, TypeAlias, TypedDict

from actoviq.core import JsonValue
from actoviq.events.envelope import RunEvent, register_event_class
from actoviq.events.types import (
    EVENT_TYPES,
    EventTypeInfo,
    ModelCompletedData,
    ModelProviderEventData,
    ModelReasoningDeltaData,
    ModelRequestedData,
    ModelResponseCompletedData,
    ModelTextDeltaData,
    ModelToolCallDeltaData,
    ModelUsageData,
    RunCancelledData,
    RunCompletedData,
    RunFailedData,
    RunInterruptedData,
    RunResumedData,
    RunStartedData,
    SessionCommittedData,
    SessionLoadedData,
    ToolCompletedData,
    ToolFailedData,
    ToolProgressData,
    ToolRejectedData,
    ToolStartedData,
)

__all__ = [
    "EVENT_CLASSES",
    "EVENT_PAYLOADS",
    "HandoffPreparedData",
    "HandoffPreparedEvent",
    "HandoffRequestedData",
    "HandoffRequestedEvent",
    "ModelCompletedEvent",
    "ModelProviderEventEvent",
    "ModelReasoningDeltaEvent",
    "ModelRefusalDeltaData",
    "ModelRefusalDeltaEvent",
    "ModelRequestedEvent",
    "ModelResponseCompletedEvent",
    "ModelTextDeltaEvent",
    "ModelToolCallDeltaEvent",
    "ModelUsageEvent",
    "RunCancelledEvent",
    "RunCompletedEvent",
    "RunFailedEvent",
    "RunInterruptedEvent",
    "RunResumedEvent",
    "RunStartedEvent",
    "RuntimeEvent",
    "SessionCommittedEvent",
    "SessionLoadedEvent",
    "StreamDroppedData",
    "StreamDroppedEvent",
    "TerminalEvent",
    "ToolCompletedEvent",
    "ToolEvent",
    "ToolFailedEvent",
    "ToolProgressEvent",
    "ToolReconciledData",
    "ToolReconciledEvent",
    "ToolRejectedEvent",
    "ToolStartedEvent",
    "ToolSuspendedData",
    "ToolSuspendedEvent",
]


class ModelRefusalDeltaData(TypedDict):
    """``model.refusal.delta``: streamed refusal text."""

    delta: str
    outputIndex: NotRequired[int]


class ToolReconciledData(TypedDict):
    """``tool.reconciled``: a resume decided an ``unknown`` call (``committed`` or ``failed``)."""

    callId: str
    name: str
    outcome: str


class ToolSuspendedData(TypedDict):
    """``tool.suspended``: a running tool paused for decisions raised below it."""

    callId: str
    name: str
    interruptionIds: list[str]


class HandoffPreparedData(TypedDict):
    """``handoff.prepared``: ``beforeHandoff`` produced the target's input."""

    handoffId: str
    sourceAgentId: str
    targetAgentId: str
    itemCount: int


class HandoffRequestedData(TypedDict):
    """``handoff.requested``: the model handed the conversation to another agent."""

    handoffId: JsonValue
    callId: str
    sourceAgentId: str
    targetAgentId: str


class StreamDroppedData(TypedDict):
    """``stream.dropped``: deltas the handle's buffer dropped under pressure (handle only)."""

    count: int
    firstSequence: int
    lastSequence: int


# One class per type. ``type`` and ``data`` are re-declared for the type checker only: at run
# time the classes are the RunEvent envelope (no new slot, field or wire key).


class RunStartedEvent(RunEvent):
    """``run.started``: a fresh execution began (also for a run cancelled while queued)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["run.started"]
        data: RunStartedData  # pyright: ignore[reportIncompatibleVariableOverride]


class RunResumedEvent(RunEvent):
    """``run.resumed``: a resumed execution began (instead of ``run.started``)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["run.resumed"]
        data: RunResumedData  # pyright: ignore[reportIncompatibleVariableOverride]


class SessionLoadedEvent(RunEvent):
    """``session.loaded``: the session history was loaded (turn 0)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["session.loaded"]
        data: SessionLoadedData  # pyright: ignore[reportIncompatibleVariableOverride]


class ModelRequestedEvent(RunEvent):
    """``model.requested``: before each model call."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["model.requested"]
        data: ModelRequestedData  # pyright: ignore[reportIncompatibleVariableOverride]


class ModelTextDeltaEvent(RunEvent):
    """``model.text.delta``: streamed assistant text (streaming runs only)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["model.text.delta"]
        data: ModelTextDeltaData  # pyright: ignore[reportIncompatibleVariableOverride]


class ModelToolCallDeltaEvent(RunEvent):
    """``model.tool_call.delta``: a streamed tool call (arguments redacted by default)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["model.tool_call.delta"]
        data: ModelToolCallDeltaData  # pyright: ignore[reportIncompatibleVariableOverride]


class ModelReasoningDeltaEvent(RunEvent):
    """``model.reasoning.delta``: streamed reasoning (streaming runs only)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["model.reasoning.delta"]
        data: ModelReasoningDeltaData  # pyright: ignore[reportIncompatibleVariableOverride]


class ModelRefusalDeltaEvent(RunEvent):
    """``model.refusal.delta``: streamed refusal text (streaming runs only)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["model.refusal.delta"]
        data: ModelRefusalDeltaData  # pyright: ignore[reportIncompatibleVariableOverride]


class ModelUsageEvent(RunEvent):
    """``model.usage``: usage the provider streamed (informational, not accumulated)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["model.usage"]
        data: ModelUsageData  # pyright: ignore[reportIncompatibleVariableOverride]


class ModelProviderEventEvent(RunEvent):
    """``model.provider.event``: a raw provider stream event (only when the host opts in)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["model.provider.event"]
        data: ModelProviderEventData  # pyright: ignore[reportIncompatibleVariableOverride]


class ModelResponseCompletedEvent(RunEvent):
    """``model.response.completed``: the provider finished a streamed response."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["model.response.completed"]
        data: ModelResponseCompletedData  # pyright: ignore[reportIncompatibleVariableOverride]


class ModelCompletedEvent(RunEvent):
    """``model.completed``: a model response was applied (``turn`` is the new value)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["model.completed"]
        data: ModelCompletedData  # pyright: ignore[reportIncompatibleVariableOverride]


class ToolStartedEvent(RunEvent):
    """``tool.started``: a tool call begins."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["tool.started"]
        data: ToolStartedData  # pyright: ignore[reportIncompatibleVariableOverride]


class ToolProgressEvent(RunEvent):
    """``tool.progress``: a running tool reported progress."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["tool.progress"]
        data: ToolProgressData  # pyright: ignore[reportIncompatibleVariableOverride]


class ToolCompletedEvent(RunEvent):
    """``tool.completed``: a tool call committed its output."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["tool.completed"]
        data: ToolCompletedData  # pyright: ignore[reportIncompatibleVariableOverride]


class ToolFailedEvent(RunEvent):
    """``tool.failed``: a tool call ended without output (the model sees an error result)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["tool.failed"]
        data: ToolFailedData  # pyright: ignore[reportIncompatibleVariableOverride]


class ToolRejectedEvent(RunEvent):
    """``tool.rejected``: an approval was rejected on resume."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["tool.rejected"]
        data: ToolRejectedData  # pyright: ignore[reportIncompatibleVariableOverride]


class ToolReconciledEvent(RunEvent):
    """``tool.reconciled``: a resume decision settled an ``unknown`` call."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["tool.reconciled"]
        data: ToolReconciledData  # pyright: ignore[reportIncompatibleVariableOverride]


class ToolSuspendedEvent(RunEvent):
    """``tool.suspended``: a tool paused for decisions its own work raised (agent tools)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["tool.suspended"]
        data: ToolSuspendedData  # pyright: ignore[reportIncompatibleVariableOverride]


class SessionCommittedEvent(RunEvent):
    """``session.committed``: the run's items were appended to its session."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["session.committed"]
        data: SessionCommittedData  # pyright: ignore[reportIncompatibleVariableOverride]


class HandoffPreparedEvent(RunEvent):
    """``handoff.prepared``: the explicit handoff lifecycle prepared the target's input."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["handoff.prepared"]
        data: HandoffPreparedData  # pyright: ignore[reportIncompatibleVariableOverride]


class HandoffRequestedEvent(RunEvent):
    """``handoff.requested``: the run completed by handing off (just before ``run.completed``)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["handoff.requested"]
        data: HandoffRequestedData  # pyright: ignore[reportIncompatibleVariableOverride]


class StreamDroppedEvent(RunEvent):
    """``stream.dropped``: the handle dropped deltas under pressure (never reaches sinks)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["stream.dropped"]
        data: StreamDroppedData  # pyright: ignore[reportIncompatibleVariableOverride]


class RunCompletedEvent(RunEvent):
    """``run.completed``: terminal; the run completed."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["run.completed"]
        data: RunCompletedData  # pyright: ignore[reportIncompatibleVariableOverride]


class RunInterruptedEvent(RunEvent):
    """``run.interrupted``: terminal; the run waits for decisions (resume it)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["run.interrupted"]
        data: RunInterruptedData  # pyright: ignore[reportIncompatibleVariableOverride]


class RunCancelledEvent(RunEvent):
    """``run.cancelled``: terminal; the run was cancelled (its checkpoint is kept)."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["run.cancelled"]
        data: RunCancelledData  # pyright: ignore[reportIncompatibleVariableOverride]


class RunFailedEvent(RunEvent):
    """``run.failed``: terminal; the run failed with a typed error."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: Literal["run.failed"]
        data: RunFailedData  # pyright: ignore[reportIncompatibleVariableOverride]


ToolEvent: TypeAlias = (
    ToolStartedEvent
    | ToolProgressEvent
    | ToolCompletedEvent
    | ToolFailedEvent
    | ToolRejectedEvent
    | ToolReconciledEvent
    | ToolSuspendedEvent
)
"""Every ``tool.*`` event (what ``RunHandle.tool_events()`` yields)."""

TerminalEvent: TypeAlias = (
    RunCompletedEvent | RunInterruptedEvent | RunCancelledEvent | RunFailedEvent
)
"""The events that end a run."""

RuntimeEvent: TypeAlias = (
    RunStartedEvent
    | RunResumedEvent
    | SessionLoadedEvent
    | ModelRequestedEvent
    | ModelTextDeltaEvent
    | ModelToolCallDeltaEvent
    | ModelReasoningDeltaEvent
    | ModelRefusalDeltaEvent
    | ModelUsageEvent
    | ModelProviderEventEvent
    | ModelResponseCompletedEvent
    | ModelCompletedEvent
    | ToolEvent
    | SessionCommittedEvent
    | HandoffPreparedEvent
    | HandoffRequestedEvent
    | StreamDroppedEvent
    | TerminalEvent
)
"""Every event type the runtime emits, discriminated by ``type`` (``match`` / ``isinstance``)."""

EVENT_CLASSES: Final[dict[str, type[RunEvent]]] = {
    "run.started": RunStartedEvent,
    "run.resumed": RunResumedEvent,
    "session.loaded": SessionLoadedEvent,
    "model.requested": ModelRequestedEvent,
    "model.text.delta": ModelTextDeltaEvent,
    "model.tool_call.delta": ModelToolCallDeltaEvent,
    "model.reasoning.delta": ModelReasoningDeltaEvent,
    "model.refusal.delta": ModelRefusalDeltaEvent,
    "model.usage": ModelUsageEvent,
    "model.provider.event": ModelProviderEventEvent,
    "model.response.completed": ModelResponseCompletedEvent,
    "model.completed": ModelCompletedEvent,
    "tool.started": ToolStartedEvent,
    "tool.progress": ToolProgressEvent,
    "tool.completed": ToolCompletedEvent,
    "tool.failed": ToolFailedEvent,
    "tool.rejected": ToolRejectedEvent,
    "tool.reconciled": ToolReconciledEvent,
    "tool.suspended": ToolSuspendedEvent,
    "session.committed": SessionCommittedEvent,
    "handoff.prepared": HandoffPreparedEvent,
    "handoff.requested": HandoffRequestedEvent,
    "stream.dropped": StreamDroppedEvent,
    "run.completed": RunCompletedEvent,
    "run.interrupted": RunInterruptedEvent,
    "run.cancelled": RunCancelledEvent,
    "run.failed": RunFailedEvent,
}
"""The typed class of every catalogued event type."""

EVENT_PAYLOADS: Final[dict[str, type[Any]]] = {
    "run.started": RunStartedData,
    "run.resumed": RunResumedData,
    "session.loaded": SessionLoadedData,
    "model.requested": ModelRequestedData,
    "model.text.delta": ModelTextDeltaData,
    "model.tool_call.delta": ModelToolCallDeltaData,
    "model.reasoning.delta": ModelReasoningDeltaData,
    "model.refusal.delta": ModelRefusalDeltaData,
    "model.usage": ModelUsageData,
    "model.provider.event": ModelProviderEventData,
    "model.response.completed": ModelResponseCompletedData,
    "model.completed": ModelCompletedData,
    "tool.started": ToolStartedData,
    "tool.progress": ToolProgressData,
    "tool.completed": ToolCompletedData,
    "tool.failed": ToolFailedData,
    "tool.rejected": ToolRejectedData,
    "tool.reconciled": ToolReconciledData,
    "tool.suspended": ToolSuspendedData,
    "session.committed": SessionCommittedData,
    "handoff.prepared": HandoffPreparedData,
    "handoff.requested": HandoffRequestedData,
    "stream.dropped": StreamDroppedData,
    "run.completed": RunCompletedData,
    "run.interrupted": RunInterruptedData,
    "run.cancelled": RunCancelledData,
    "run.failed": RunFailedData,
}
"""The ``data`` TypedDict of every catalogued type (what the run-event JSON Schema is made from)."""

_EXTRA_TYPES: Final = {
    "model.refusal.delta": EventTypeInfo(
        name="model.refusal.delta", stream_only=True, description="streamed refusal"
    ),
    "tool.reconciled": EventTypeInfo(
        name="tool.reconciled", description="a resume decision settled an unknown call"
    ),
    "tool.suspended": EventTypeInfo(
        name="tool.suspended", description="a tool paused for decisions raised below it"
    ),
    "handoff.prepared": EventTypeInfo(
        name="handoff.prepared", description="beforeHandoff prepared the target's input"
    ),
    "handoff.requested": EventTypeInfo(
        name="handoff.requested", description="the model handed the conversation off"
    ),
    "stream.dropped": EventTypeInfo(
        name="stream.dropped", stream_only=True, description="deltas dropped by a handle buffer"
    ),
}

for _type, _cls in EVENT_CLASSES.items():
    register_event_class(_type, _cls)
for _info in _EXTRA_TYPES.values():
    if _info.name not in EVENT_TYPES:
        EVENT_TYPES.register(_info)
