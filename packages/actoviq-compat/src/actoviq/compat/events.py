"""The legacy ``AgentEvent`` union: 33 members, 37 ``type`` strings (spec 03 §6.5, 04 §5.1).

Events are plain JSON objects with the reference's camelCase keys, typed here as ``TypedDict`` s
discriminated on ``type``, so a host's 0.x event handling keeps working::

    async for event in client.stream("hello"):
        if event["type"] == "response.text.delta":
            print(event["delta"], end="")

Every event has ``runId`` and ``timestamp`` (ISO-8601 UTC). The mapping from the runtime's
``RunEvent`` s is :class:`~actoviq.surfaces.RunEventLegacyCompatAdapter`; this module only names
the shapes.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from actoviq.surfaces import LEGACY_AGENT_EVENT_TYPES

__all__ = [
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
]

AGENT_EVENT_TYPES: tuple[str, ...] = LEGACY_AGENT_EVENT_TYPES
"""Every legacy ``type`` string, in the reference order."""


class _Envelope(TypedDict):
    runId: str
    timestamp: str


class AgentToolCallPayload(TypedDict):
    """A tool call as the legacy events describe it."""

    id: str
    name: str
    publicName: str
    provider: Literal["local", "mcp"]
    mcpServerName: NotRequired[str]
    input: Any
    startedAt: str


class AgentToolCallRecord(AgentToolCallPayload):
    """A finished tool call (``tool.result`` and ``AgentRunResult.tool_calls``)."""

    outputText: str
    output: NotRequired[Any]
    isError: bool
    completedAt: str
    durationMs: float


class PermissionDecision(TypedDict):
    """A legacy permission decision (``tool.permission`` and ``permission_decisions``)."""

    toolName: str
    publicName: str
    behavior: Literal["allow", "deny"]
    reason: str
    source: Literal["mode", "rule", "classifier", "approver", "canUseTool"]
    matchedRule: NotRequired[str]
    timestamp: str


class RunStartedEvent(_Envelope):
    """``run.started``."""

    type: Literal["run.started"]
    sessionId: NotRequired[str]
    model: str
    input: Any


class RequestStartedEvent(_Envelope):
    """``request.started``: one model request of the run begins."""

    type: Literal["request.started"]
    iteration: int
    requestTokenEstimate: NotRequired[int]
    requestByteLength: NotRequired[int]
    localMicrocompact: NotRequired[dict[str, Any]]


class RequestPromptCacheEvent(_Envelope):
    """``request.prompt_cache``."""

    type: Literal["request.prompt_cache"]
    iteration: int
    prefixSignature: str
    prefixChanged: bool
    breakpoints: dict[str, Any]


class ResponseTextDeltaEvent(_Envelope):
    """``response.text.delta``: ``snapshot`` is the text of this request so far."""

    type: Literal["response.text.delta"]
    iteration: int
    delta: str
    snapshot: str


class ResponseThinkingDeltaEvent(_Envelope):
    """``response.thinking.delta`` (the signature is never re-emitted)."""

    type: Literal["response.thinking.delta"]
    iteration: int
    index: int
    delta: str
    snapshot: str
    signature: NotRequired[str]


class ResponseToolInputDeltaEvent(_Envelope):
    """``response.tool_input.delta``."""

    type: Literal["response.tool_input.delta"]
    iteration: int
    index: int
    toolUseId: NotRequired[str | None]
    toolName: NotRequired[str | None]
    delta: str
    snapshot: str


class ResponseContentEvent(_Envelope):
    """``response.content``: one content block."""

    type: Literal["response.content"]
    iteration: int
    content: dict[str, Any]


class ResponseMessageEvent(_Envelope):
    """``response.message``: the Anthropic-style message of one model request."""

    type: Literal["response.message"]
    iteration: int
    message: dict[str, Any]


class ToolCallEvent(_Envelope):
    """``tool.call``."""

    type: Literal["tool.call"]
    iteration: int
    call: AgentToolCallPayload


class ToolPermissionEvent(_Envelope):
    """``tool.permission``."""

    type: Literal["tool.permission"]
    iteration: int
    decision: PermissionDecision


class ToolResultEvent(_Envelope):
    """``tool.result``."""

    type: Literal["tool.result"]
    iteration: int
    result: AgentToolCallRecord


class ToolProgressEvent(_Envelope):
    """``tool.progress``."""

    type: Literal["tool.progress"]
    iteration: int
    toolUseId: str
    data: dict[str, Any]


class SessionCompactedEvent(_Envelope):
    """``session.compacted``."""

    type: Literal["session.compacted"]
    sessionId: str
    trigger: str
    result: dict[str, Any]


class CheckpointCreatedEvent(_Envelope):
    """``checkpoint.created``."""

    type: Literal["checkpoint.created"]
    sessionId: str
    checkpointId: str


class CheckpointRestoreEvent(_Envelope):
    """``checkpoint.restore.requested``, ``.completed`` and ``.conflicted``."""

    type: Literal[
        "checkpoint.restore.requested",
        "checkpoint.restore.completed",
        "checkpoint.restore.conflicted",
    ]
    sessionId: str
    checkpointId: str


class SandboxEvent(_Envelope):
    """``sandbox.applied``, ``sandbox.degraded``, ``sandbox.violation``."""

    type: Literal["sandbox.applied", "sandbox.degraded", "sandbox.violation"]
    sessionId: NotRequired[str]
    capability: str
    violation: NotRequired[Any]


class HookLifecycleEvent(_Envelope):
    """``hook.lifecycle``."""

    type: Literal["hook.lifecycle"]
    sessionId: NotRequired[str]
    lifecycleEvent: str
    outputs: Any


class ConversationCompactedEvent(_Envelope):
    """``conversation.compacted``."""

    type: Literal["conversation.compacted"]
    iteration: int
    trigger: NotRequired[Literal["auto", "reactive"]]
    tokenEstimateBefore: float
    tokenEstimateAfter: float
    messagesSummarized: int
    preservedMessages: int
    clearedToolResults: int


class ModelFallbackEvent(_Envelope):
    """``model.fallback``."""

    type: Literal["model.fallback"]
    iteration: int
    fromModel: str
    toModel: str
    reason: str


class RequestInterruptedEvent(_Envelope):
    """``request.interrupted``."""

    type: Literal["request.interrupted"]
    iteration: int
    retry: int
    maxRetries: int
    reason: str


class ResponseCompletedEvent(_Envelope):
    """``response.completed``: ``result`` is the legacy ``AgentRunResult`` JSON."""

    type: Literal["response.completed"]
    result: dict[str, Any]


class ErrorEvent(_Envelope):
    """``error``: ``{message, code?}`` (a stack is never emitted)."""

    type: Literal["error"]
    error: dict[str, Any]


class AgentExecutionEvent(_Envelope):
    """``agent.execution``."""

    type: Literal["agent.execution"]
    rootExecutionId: str
    event: Any
    snapshot: Any


class WorkflowStartEvent(_Envelope):
    """``workflow.start``."""

    type: Literal["workflow.start"]
    workflowName: str
    stepCount: int


class StepStartEvent(_Envelope):
    """``step.start``."""

    type: Literal["step.start"]
    workflowName: str
    stepId: str
    stepName: str


class StepDoneEvent(_Envelope):
    """``step.done``."""

    type: Literal["step.done"]
    workflowName: str
    stepId: str
    status: Literal["completed", "failed", "skipped"]
    durationMs: float


class WorkflowDoneEvent(_Envelope):
    """``workflow.done``."""

    type: Literal["workflow.done"]
    workflowName: str
    status: Literal["completed", "partial", "failed"]
    durationMs: float
    errors: NotRequired[list[Any]]


class WorkflowScriptStartEvent(_Envelope):
    """``workflow.script.start``."""

    type: Literal["workflow.script.start"]
    workflowName: str
    phases: list[Any]


class WorkflowPhaseStartEvent(_Envelope):
    """``workflow.phase.start``."""

    type: Literal["workflow.phase.start"]
    phase: str


class WorkflowAgentStartEvent(_Envelope):
    """``workflow.agent.start``."""

    type: Literal["workflow.agent.start"]
    agentId: str
    label: NotRequired[str]
    phase: NotRequired[str]
    cached: bool


class WorkflowAgentDoneEvent(_Envelope):
    """``workflow.agent.done``."""

    type: Literal["workflow.agent.done"]
    agentId: str
    phase: NotRequired[str]
    cached: bool
    durationMs: float
    tokens: NotRequired[int]
    error: NotRequired[str]


class WorkflowLogEvent(_Envelope):
    """``workflow.log``."""

    type: Literal["workflow.log"]
    message: str


class WorkflowScriptDoneEvent(_Envelope):
    """``workflow.script.done``."""

    type: Literal["workflow.script.done"]
    workflowName: str
    status: Literal["completed", "failed", "stopped"]
    durationMs: float
    agentCount: int
    totalTokens: int
    errors: NotRequired[list[Any]]


AgentEvent = (
    RunStartedEvent
    | RequestStartedEvent
    | RequestPromptCacheEvent
    | ResponseTextDeltaEvent
    | ResponseThinkingDeltaEvent
    | ResponseToolInputDeltaEvent
    | ResponseContentEvent
    | ResponseMessageEvent
    | ToolCallEvent
    | ToolPermissionEvent
    | ToolResultEvent
    | ToolProgressEvent
    | SessionCompactedEvent
    | CheckpointCreatedEvent
    | CheckpointRestoreEvent
    | SandboxEvent
    | HookLifecycleEvent
    | ConversationCompactedEvent
    | ModelFallbackEvent
    | RequestInterruptedEvent
    | ResponseCompletedEvent
    | ErrorEvent
    | AgentExecutionEvent
    | WorkflowStartEvent
    | StepStartEvent
    | StepDoneEvent
    | WorkflowDoneEvent
    | WorkflowScriptStartEvent
    | WorkflowPhaseStartEvent
    | WorkflowAgentStartEvent
    | WorkflowAgentDoneEvent
    | WorkflowLogEvent
    | WorkflowScriptDoneEvent
)
"""One legacy event (33 members); narrow on ``event["type"]``."""
