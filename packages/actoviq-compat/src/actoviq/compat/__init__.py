"""actoviq.compat: the 0.x API shape on the one ``AgentRuntime``, for migrating in small steps.

* :func:`create_agent_sdk` → :class:`AgentClient` (``run``, ``stream``, sessions, ``close``), a
  thin façade over one :class:`~actoviq.runtime.AgentRuntime` (never a second engine);
* :class:`AgentRunStream` of legacy ``AgentEvent`` s (exact 0.x type strings, bounded buffer,
  delta coalescing, cancel on early exit) and the 0.x :class:`AgentRunResult`;
* the legacy ``ModelApi`` protocol and its bridges (:class:`LegacyModelApiProvider`,
  :class:`ModelProviderLegacyAdapter`);
* the legacy event adapters of :mod:`actoviq.surfaces` (:class:`LegacyAgentEventRunEventAdapter`,
  :class:`RunEventLegacyCompatAdapter`, :class:`LegacySurfaceEventPipeline`);
* :class:`LegacyJsonV1SessionStore`: JSON v1 session files (CAS, lock files, atomic writes),
  also usable as the runtime's session store until cutover;
* diagnostics: every public name here records its use (:func:`get_compat_diagnostics`) and warns
  once (:class:`CompatDeprecationWarning`). Functions and classes record each call or
  instantiation; names that only serve as types record when read from this package.

Example:
    >>> async def main() -> None:  # doctest: +SKIP
    ...     async with await create_agent_sdk(provider="openai", model="gpt-4.1-mini") as sdk:
    ...         async for event in sdk.stream("hello"):
    ...             if event["type"] == "response.text.delta":
    ...                 print(event["delta"], end="")

Migrating off the façade: ``docs/migration.md``.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any, Final

from actoviq.compat.client import create_agent_sdk
from actoviq.compat.diagnostics import (
    CompatDeprecationWarning,
    CompatDiagnostic,
    configure_compat_diagnostics,
    get_compat_diagnostics,
    record_compat_usage,
    register_replacement,
)
from actoviq.compat.legacy_store import LegacyJsonV1SessionJournal, LegacyJsonV1SessionStore
from actoviq.compat.model_api import LegacyModelApiProvider, ModelProviderLegacyAdapter
from actoviq.compat.surfaces import (
    LegacyAgentEventRunEventAdapter,
    LegacySurfaceEventPipeline,
    RunEventLegacyCompatAdapter,
)

if TYPE_CHECKING:
    from actoviq.compat.client import AgentClient, AgentSession, AgentStreamOptions
    from actoviq.compat.errors import (
        AgentRunStreamOverflowError,
        CompatConfigurationError,
        CompatRunInterruptedError,
        SessionBusyError,
        SessionConflictError,
        SessionDataError,
        SessionNotFoundError,
        UnsafeSessionIdError,
    )
    from actoviq.compat.events import (
        AGENT_EVENT_TYPES,
        AgentEvent,
        AgentExecutionEvent,
        AgentToolCallPayload,
        AgentToolCallRecord,
        CheckpointCreatedEvent,
        CheckpointRestoreEvent,
        ConversationCompactedEvent,
        ErrorEvent,
        HookLifecycleEvent,
        ModelFallbackEvent,
        PermissionDecision,
        RequestInterruptedEvent,
        RequestPromptCacheEvent,
        RequestStartedEvent,
        ResponseCompletedEvent,
        ResponseContentEvent,
        ResponseMessageEvent,
        ResponseTextDeltaEvent,
        ResponseThinkingDeltaEvent,
        ResponseToolInputDeltaEvent,
        RunStartedEvent,
        SandboxEvent,
        SessionCompactedEvent,
        StepDoneEvent,
        StepStartEvent,
        ToolCallEvent,
        ToolPermissionEvent,
        ToolProgressEvent,
        ToolResultEvent,
        WorkflowAgentDoneEvent,
        WorkflowAgentStartEvent,
        WorkflowDoneEvent,
        WorkflowLogEvent,
        WorkflowPhaseStartEvent,
        WorkflowScriptDoneEvent,
        WorkflowScriptStartEvent,
        WorkflowStartEvent,
    )
    from actoviq.compat.legacy_store import (
        JOURNAL_KEY,
        SessionCheckpoint,
        SessionCheckpointSummary,
        SessionSummary,
        StoredRunSummary,
        StoredSession,
    )
    from actoviq.compat.options import AgentRunOptions, CreateAgentSdkOptions
    from actoviq.compat.permissions import PermissionMode, PermissionRule
    from actoviq.compat.results import AgentRequestSummary, AgentRunResult
    from actoviq.compat.stream import DEFAULT_MAX_BUFFERED_EVENTS, AgentRunStream, OverflowStrategy
    from actoviq.providers.legacy import (
        ContentBlock,
        LegacyModelRequest,
        LegacyTool,
        LegacyToolChoice,
        LegacyUsage,
        Message,
        MessageParam,
        MessageStreamEvent,
        ModelApi,
        ModelStreamHandle,
    )

_IMPORTLIB_BOOTSTRAP: Final = "<frozen importlib._bootstrap>"
_EVENTS: Final = "actoviq.compat.events"
_ERRORS: Final = "actoviq.compat.errors"
_LEGACY: Final = "actoviq.providers.legacy"
_STORE: Final = "actoviq.compat.legacy_store"
_EVENT_NAMES: Final = (
    "AGENT_EVENT_TYPES",
    "AgentEvent",
    "AgentExecutionEvent",
    "AgentToolCallPayload",
    "AgentToolCallRecord",
    "CheckpointCreatedEvent",
    "CheckpointRestoreEvent",
    "ConversationCompactedEvent",
    "ErrorEvent",
    "HookLifecycleEvent",
    "ModelFallbackEvent",
    "PermissionDecision",
    "RequestInterruptedEvent",
    "RequestPromptCacheEvent",
    "RequestStartedEvent",
    "ResponseCompletedEvent",
    "ResponseContentEvent",
    "ResponseMessageEvent",
    "ResponseTextDeltaEvent",
    "ResponseThinkingDeltaEvent",
    "ResponseToolInputDeltaEvent",
    "RunStartedEvent",
    "SandboxEvent",
    "SessionCompactedEvent",
    "StepDoneEvent",
    "StepStartEvent",
    "ToolCallEvent",
    "ToolPermissionEvent",
    "ToolProgressEvent",
    "ToolResultEvent",
    "WorkflowAgentDoneEvent",
    "WorkflowAgentStartEvent",
    "WorkflowDoneEvent",
    "WorkflowLogEvent",
    "WorkflowPhaseStartEvent",
    "WorkflowScriptDoneEvent",
    "WorkflowScriptStartEvent",
    "WorkflowStartEvent",
)
_ERROR_NAMES: Final = (
    "AgentRunStreamOverflowError",
    "CompatConfigurationError",
    "CompatRunInterruptedError",
    "SessionBusyError",
    "SessionConflictError",
    "SessionDataError",
    "SessionNotFoundError",
    "UnsafeSessionIdError",
)
_LEGACY_NAMES: Final = (
    "ContentBlock",
    "LegacyModelRequest",
    "LegacyTool",
    "LegacyToolChoice",
    "LegacyUsage",
    "Message",
    "MessageParam",
    "MessageStreamEvent",
    "ModelApi",
    "ModelStreamHandle",
)
_STORE_NAMES: Final = (
    "JOURNAL_KEY",
    "SessionCheckpoint",
    "SessionCheckpointSummary",
    "SessionSummary",
    "StoredRunSummary",
    "StoredSession",
)
_TYPE_ONLY: Final[dict[str, tuple[str, str]]] = {
    **dict.fromkeys(_EVENT_NAMES, (_EVENTS, "RunEvent (actoviq.events) from AgentRuntime.stream")),
    **dict.fromkeys(_ERROR_NAMES, (_ERRORS, "the runtime's typed errors (actoviq.runtime)")),
    **dict.fromkeys(
        _LEGACY_NAMES,
        (_LEGACY, "ModelProvider and canonical items (actoviq.providers, actoviq.core)"),
    ),
    **dict.fromkeys(
        _STORE_NAMES, (_STORE, "SqliteStorage sessions after a JsonV1Migrator cutover")
    ),
    "AgentClient": ("actoviq.compat.client", "AgentRuntime (actoviq.runtime)"),
    "AgentSession": ("actoviq.compat.client", "AgentRuntime.run(agent, input, session_id=...)"),
    "AgentStreamOptions": ("actoviq.compat.client", "AgentRuntime.stream options"),
    "AgentRunOptions": ("actoviq.compat.options", "AgentRuntime.run options (RunOptions)"),
    "CreateAgentSdkOptions": ("actoviq.compat.options", "AgentRuntime and AgentSpec arguments"),
    "PermissionMode": ("actoviq.compat.permissions", "a ToolPolicy (actoviq.runtime)"),
    "PermissionRule": ("actoviq.compat.permissions", "RuleToolPolicy (actoviq.runtime)"),
    "AgentRunResult": ("actoviq.compat.results", "RunResult (actoviq.core)"),
    "AgentRequestSummary": ("actoviq.compat.results", "model.* RunEvents and RunResult.usage"),
    "AgentRunStream": ("actoviq.compat.stream", "RunHandle from AgentRuntime.stream"),
    "OverflowStrategy": ("actoviq.compat.stream", "BufferPolicy of AgentRuntime"),
    "DEFAULT_MAX_BUFFERED_EVENTS": ("actoviq.compat.stream", "RunLimits.stream_buffer_size"),
}
_MODULE_OF: Final = {name: module for name, (module, _) in _TYPE_ONLY.items()}
for _name, (_, _replacement) in _TYPE_ONLY.items():
    register_replacement(_name, _replacement)

__all__ = [
    "AGENT_EVENT_TYPES",
    "DEFAULT_MAX_BUFFERED_EVENTS",
    "JOURNAL_KEY",
    "AgentClient",
    "AgentEvent",
    "AgentExecutionEvent",
    "AgentRequestSummary",
    "AgentRunOptions",
    "AgentRunResult",
    "AgentRunStream",
    "AgentRunStreamOverflowError",
    "AgentSession",
    "AgentStreamOptions",
    "AgentToolCallPayload",
    "AgentToolCallRecord",
    "CheckpointCreatedEvent",
    "CheckpointRestoreEvent",
    "CompatConfigurationError",
    "CompatDeprecationWarning",
    "CompatDiagnostic",
    "CompatRunInterruptedError",
    "ContentBlock",
    "ConversationCompactedEvent",
    "CreateAgentSdkOptions",
    "ErrorEvent",
    "HookLifecycleEvent",
    "LegacyAgentEventRunEventAdapter",
    "LegacyJsonV1SessionJournal",
    "LegacyJsonV1SessionStore",
    "LegacyModelApiProvider",
    "LegacyModelRequest",
    "LegacySurfaceEventPipeline",
    "LegacyTool",
    "LegacyToolChoice",
    "LegacyUsage",
    "Message",
    "MessageParam",
    "MessageStreamEvent",
    "ModelApi",
    "ModelFallbackEvent",
    "ModelProviderLegacyAdapter",
    "ModelStreamHandle",
    "OverflowStrategy",
    "PermissionDecision",
    "PermissionMode",
    "PermissionRule",
    "RequestInterruptedEvent",
    "RequestPromptCacheEvent",
    "RequestStartedEvent",
    "ResponseCompletedEvent",
    "ResponseContentEvent",
    "ResponseMessageEvent",
    "ResponseTextDeltaEvent",
    "ResponseThinkingDeltaEvent",
    "ResponseToolInputDeltaEvent",
    "RunEventLegacyCompatAdapter",
    "RunStartedEvent",
    "SandboxEvent",
    "SessionBusyError",
    "SessionCheckpoint",
    "SessionCheckpointSummary",
    "SessionCompactedEvent",
    "SessionConflictError",
    "SessionDataError",
    "SessionNotFoundError",
    "SessionSummary",
    "StepDoneEvent",
    "StepStartEvent",
    "StoredRunSummary",
    "StoredSession",
    "ToolCallEvent",
    "ToolPermissionEvent",
    "ToolProgressEvent",
    "ToolResultEvent",
    "UnsafeSessionIdError",
    "WorkflowAgentDoneEvent",
    "WorkflowAgentStartEvent",
    "WorkflowDoneEvent",
    "WorkflowLogEvent",
    "WorkflowPhaseStartEvent",
    "WorkflowScriptDoneEvent",
    "WorkflowScriptStartEvent",
    "WorkflowStartEvent",
    "configure_compat_diagnostics",
    "create_agent_sdk",
    "get_compat_diagnostics",
    "record_compat_usage",
]

DIAGNOSTICS_API: Final = frozenset(
    {
        "CompatDeprecationWarning",
        "CompatDiagnostic",
        "configure_compat_diagnostics",
        "get_compat_diagnostics",
        "record_compat_usage",
    }
)
"""The names that measure compat use instead of being compat API (they record nothing)."""


if not TYPE_CHECKING:  # type checkers see the names above, and flag any other name

    def __getattr__(name: str) -> Any:
        """Serve a type-only compat name and record that the host read it."""
        module = _MODULE_OF.get(name)
        if module is None:
            raise AttributeError(f"module 'actoviq.compat' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        # ``from actoviq.compat import X`` reads X twice: once in the import machinery's own
        # ``hasattr`` check (not a use), once for the binding (the use that counts).
        if sys._getframe(1).f_code.co_filename != _IMPORTLIB_BOOTSTRAP:
            record_compat_usage(name, stacklevel=3)
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
