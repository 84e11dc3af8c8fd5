"""actoviq.events: the RunEvent envelope, processors, sinks, redaction and OpenTelemetry export.

Example:
    >>> from actoviq.events import (
    ...     EventDispatcher, EventEmitter, InMemoryEventSink, ManualClock, SequentialIdFactory,
    ...     create_root_trace_context, default_processors,
    ... )
    >>> import asyncio
    >>> async def main() -> list[str]:
    ...     ids = SequentialIdFactory()
    ...     sink = InMemoryEventSink()
    ...     async with EventDispatcher(default_processors(), [sink]) as dispatcher:
    ...         emitter = EventEmitter(
    ...             create_root_trace_context("run-1", ids=ids), dispatcher, ids=ids,
    ...             clock=ManualClock(),
    ...         )
    ...         await emitter.emit("run.started", {"agentId": "a", "apiKey": "sk-secret"})
    ...     return [str(event.data) for event in sink.events]
    >>> asyncio.run(main())
    ["{'agentId': 'a', 'apiKey': '[REDACTED]'}"]
"""

from typing import TYPE_CHECKING

from actoviq.events.context import (
    Clock,
    IdFactory,
    ManualClock,
    RandomIdFactory,
    SequentialIdFactory,
    SystemClock,
    TraceContext,
    create_child_trace_context,
    create_root_trace_context,
    current_trace_context,
    use_trace_context,
)
from actoviq.events.dispatcher import (
    DEFAULT_SINK_TIMEOUT,
    DeliveryFailure,
    EventDispatcher,
    EventProcessor,
    EventSink,
    FailureMode,
    FailureStage,
    default_processors,
)
from actoviq.events.emitter import EventData, EventEmitter, RunEventSequencer
from actoviq.events.envelope import (
    SCHEMA_VERSION,
    RunEvent,
    run_event_dumps,
    run_event_from_json,
    run_event_to_json,
    run_events_from_json,
    run_events_to_json,
)
from actoviq.events.errors import (
    EventDispatcherClosedError,
    EventError,
    EventOrderError,
    EventSchemaVersionError,
    EventSinkTimeoutError,
    EventValidationError,
    RedactionError,
)
from actoviq.events.memory import InMemoryEventSink
from actoviq.events.redaction import (
    DEFAULT_KEY_CACHE_LIMIT,
    DEFAULT_REPLACEMENT,
    DEFAULT_SENSITIVE_KEY_PATTERNS,
    REDACTION_PROCESSOR_ID,
    RedactionPolicy,
    RedactionProcessor,
    Redactor,
    SensitiveKeyMatcher,
    normalize_key,
    redact_text,
    redact_value,
)
from actoviq.events.types import (
    EVENT_TYPES,
    TERMINAL_EVENT_TYPES,
    ErrorData,
    EventTypeInfo,
    EventTypeRegistry,
    KnownEventType,
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
    error_data,
    is_terminal_event_type,
    register_event_type,
)

__all__ = [
    "DEFAULT_KEY_CACHE_LIMIT",
    "DEFAULT_REPLACEMENT",
    "DEFAULT_SENSITIVE_KEY_PATTERNS",
    "DEFAULT_SINK_TIMEOUT",
    "EVENT_TYPES",
    "INSTRUMENTATION_NAME",
    "REDACTION_PROCESSOR_ID",
    "SCHEMA_VERSION",
    "TERMINAL_EVENT_TYPES",
    "Clock",
    "DeliveryFailure",
    "ErrorData",
    "EventData",
    "EventDispatcher",
    "EventDispatcherClosedError",
    "EventEmitter",
    "EventError",
    "EventOrderError",
    "EventProcessor",
    "EventSchemaVersionError",
    "EventSink",
    "EventSinkTimeoutError",
    "EventTypeInfo",
    "EventTypeRegistry",
    "EventValidationError",
    "FailureMode",
    "FailureStage",
    "IdFactory",
    "InMemoryEventSink",
    "KnownEventType",
    "ManualClock",
    "ModelCompletedData",
    "ModelProviderEventData",
    "ModelReasoningDeltaData",
    "ModelRequestedData",
    "ModelResponseCompletedData",
    "ModelTextDeltaData",
    "ModelToolCallDeltaData",
    "ModelUsageData",
    "OpenTelemetrySink",
    "RandomIdFactory",
    "RedactionError",
    "RedactionPolicy",
    "RedactionProcessor",
    "Redactor",
    "RunCancelledData",
    "RunCompletedData",
    "RunEvent",
    "RunEventSequencer",
    "RunFailedData",
    "RunInterruptedData",
    "RunResumedData",
    "RunStartedData",
    "SensitiveKeyMatcher",
    "SequentialIdFactory",
    "SessionCommittedData",
    "SessionLoadedData",
    "SystemClock",
    "ToolCompletedData",
    "ToolFailedData",
    "ToolProgressData",
    "ToolRejectedData",
    "ToolStartedData",
    "TraceContext",
    "create_child_trace_context",
    "create_root_trace_context",
    "current_trace_context",
    "default_processors",
    "error_data",
    "is_terminal_event_type",
    "normalize_key",
    "redact_text",
    "redact_value",
    "register_event_type",
    "run_event_dumps",
    "run_event_from_json",
    "run_event_to_json",
    "run_events_from_json",
    "run_events_to_json",
    "use_trace_context",
]

if TYPE_CHECKING:
    from actoviq.events.otel import INSTRUMENTATION_NAME, OpenTelemetrySink

_LAZY = frozenset({"INSTRUMENTATION_NAME", "OpenTelemetrySink"})


def __getattr__(name: str) -> object:
    # OpenTelemetry is imported on first use so `import actoviq.events` stays fast.
    if name in _LAZY:
        from actoviq.events import otel

        return getattr(otel, name)
    raise AttributeError(f"module 'actoviq.events' has no attribute {name!r}")
