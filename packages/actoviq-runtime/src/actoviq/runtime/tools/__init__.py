"""Tools for the Actoviq runtime: descriptors, ``@tool``, registry, policy, runner, pending state.

Example:
    >>> from actoviq.runtime.tools import ToolRegistry, ToolRunner, tool
    >>> @tool(effect="read")
    ... def double(x: int) -> int:
    ...     '''Double a number.'''
    ...     return x * 2
    >>> runner = ToolRunner(ToolRegistry([double]))
"""

from actoviq.runtime.tools.batches import is_parallel_safe, run_in_call_order
from actoviq.runtime.tools.decorator import FunctionTool, tool
from actoviq.runtime.tools.descriptor import (
    DEFAULT_TOOL_MAX_RETRIES,
    RuntimeTool,
    ToolApproval,
    ToolArtifact,
    ToolBehavior,
    ToolDescriptor,
    ToolEffect,
    ToolExecuteFn,
    ToolExecutionContext,
    ToolOutput,
    ToolProgressSink,
    ToolResumption,
    ToolSchema,
    tool_effect,
)
from actoviq.runtime.tools.errors import (
    ToolCallDenied,
    ToolDefinitionError,
    ToolErrorFormatter,
    ToolExecutionError,
    ToolFailure,
    ToolFailureKind,
    ToolInterruptionRequiredError,
    ToolProgressError,
    ToolRegistryError,
    ToolRetry,
    ToolSuspension,
    format_failure,
)
from actoviq.runtime.tools.frozen import FrozenJson, freeze_json, thaw_json
from actoviq.runtime.tools.policy import (
    AllowDecision,
    DenyDecision,
    InterruptDecision,
    RuleToolPolicy,
    ToolAuthorizationRequest,
    ToolDecision,
    ToolPolicy,
    approval_interruption_id,
    idempotency_key_for,
    reconciliation_interruption_id,
)
from actoviq.runtime.tools.registry import ToolRegistry
from actoviq.runtime.tools.results import denial_result, failure_result, success_result
from actoviq.runtime.tools.runner import (
    LOGGER,
    MAX_DETAIL_CHARS,
    PreparedToolCall,
    ToolRunner,
    epoch_ms,
    runs_on_loop,
    to_tool_json,
)
from actoviq.runtime.tools.schema import (
    ToolInputInvalidError,
    compile_json_schema,
    json_schema_input,
    schema_from_type,
)
from actoviq.runtime.tools.state import (
    DecisionOutcome,
    InterruptionDecision,
    PendingTool,
    PendingToolState,
    PendingToolTransitionError,
    ReconciliationDecisionError,
    ResumeAction,
    plan_resume,
    reconciliation_result,
    settled_state,
)

__all__ = [
    "DEFAULT_TOOL_MAX_RETRIES",
    "LOGGER",
    "MAX_DETAIL_CHARS",
    "AllowDecision",
    "DecisionOutcome",
    "DenyDecision",
    "FrozenJson",
    "FunctionTool",
    "InterruptDecision",
    "InterruptionDecision",
    "PendingTool",
    "PendingToolState",
    "PendingToolTransitionError",
    "PreparedToolCall",
    "ReconciliationDecisionError",
    "ResumeAction",
    "RuleToolPolicy",
    "RuntimeTool",
    "ToolApproval",
    "ToolArtifact",
    "ToolAuthorizationRequest",
    "ToolBehavior",
    "ToolCallDenied",
    "ToolDecision",
    "ToolDefinitionError",
    "ToolDescriptor",
    "ToolEffect",
    "ToolErrorFormatter",
    "ToolExecuteFn",
    "ToolExecutionContext",
    "ToolExecutionError",
    "ToolFailure",
    "ToolFailureKind",
    "ToolInputInvalidError",
    "ToolInterruptionRequiredError",
    "ToolOutput",
    "ToolPolicy",
    "ToolProgressError",
    "ToolProgressSink",
    "ToolRegistry",
    "ToolRegistryError",
    "ToolResumption",
    "ToolRetry",
    "ToolRunner",
    "ToolSchema",
    "ToolSuspension",
    "approval_interruption_id",
    "compile_json_schema",
    "denial_result",
    "epoch_ms",
    "failure_result",
    "format_failure",
    "freeze_json",
    "idempotency_key_for",
    "is_parallel_safe",
    "json_schema_input",
    "plan_resume",
    "reconciliation_interruption_id",
    "reconciliation_result",
    "run_in_call_order",
    "runs_on_loop",
    "schema_from_type",
    "settled_state",
    "success_result",
    "thaw_json",
    "to_tool_json",
    "tool",
    "tool_effect",
]
