"""actoviq.workflow: trusted and untrusted workflow executors (spec 04 §2, decision D8).

Scripts are Python source defining ``main(context)`` (sync or ``async``) that returns a JSON value.

Example:
    >>> import asyncio
    >>> router = WorkflowExecutorRouter()
    >>> request = UntrustedWorkflowRequest(source="def main(c): return 1", workspace_dir="/tmp")
    >>> try:
    ...     asyncio.run(router.execute(request))
    ... except UntrustedWorkflowRejectedError as error:
    ...     print(error.code)
    UNTRUSTED_WORKFLOW_REJECTED
"""

from actoviq.workflow.bubblewrap import BubblewrapWorkflowExecutor, bubblewrap_argv
from actoviq.workflow.capabilities import (
    CAPABILITY_NAME_PATTERN,
    clone_json_within,
    resolve_capability_handlers,
    resolve_requested_capabilities,
    validate_capability_name,
)
from actoviq.workflow.errors import (
    CAPABILITY_FAILED_CODE,
    UntrustedWorkflowRejectedError,
    WorkflowAbortedError,
    WorkflowCapabilityNotAllowedError,
    WorkflowConfigurationError,
    WorkflowExecutionError,
    WorkflowExecutorError,
    WorkflowMessageLimitError,
    WorkflowOutputLimitError,
    WorkflowPermissionError,
    WorkflowProtocolError,
    WorkflowResourceLimitError,
    WorkflowTimeoutError,
    WorkflowTrustTierError,
    WorkflowWorkspaceError,
)
from actoviq.workflow.limits import (
    HARD_MAX_MESSAGE_BYTES,
    ProcessResourceLimits,
    WorkflowExecutorLimits,
    resolve_workflow_executor_limits,
)
from actoviq.workflow.local_process import (
    LocalIsolatedProcessWorkflowExecutor,
    ProcessWorkflowExecutorBase,
)
from actoviq.workflow.policy import (
    MIN_LANDLOCK_ABI,
    LayerMode,
    SandboxPolicy,
    resolve_sandbox_user,
)
from actoviq.workflow.router import WorkflowExecutorRouter, execute_workflow
from actoviq.workflow.trusted import TrustedInProcessWorkflowExecutor
from actoviq.workflow.types import (
    CapabilityCallContext,
    CapabilityHandler,
    SandboxCapabilities,
    SandboxIsolation,
    SandboxWorkflowExecutor,
    TrustedWorkflowExecutor,
    TrustedWorkflowRequest,
    TrustTier,
    UntrustedWorkflowRequest,
    WorkflowExecutionRequest,
    WorkflowExecutionResult,
    workflow_request_from_json,
)
from actoviq.workflow.workspace import DEFAULT_MAX_READ_BYTES, read_workspace_file

__all__ = [
    "CAPABILITY_FAILED_CODE",
    "CAPABILITY_NAME_PATTERN",
    "DEFAULT_MAX_READ_BYTES",
    "HARD_MAX_MESSAGE_BYTES",
    "MIN_LANDLOCK_ABI",
    "BubblewrapWorkflowExecutor",
    "CapabilityCallContext",
    "CapabilityHandler",
    "LayerMode",
    "LocalIsolatedProcessWorkflowExecutor",
    "ProcessResourceLimits",
    "ProcessWorkflowExecutorBase",
    "SandboxCapabilities",
    "SandboxIsolation",
    "SandboxPolicy",
    "SandboxWorkflowExecutor",
    "TrustTier",
    "TrustedInProcessWorkflowExecutor",
    "TrustedWorkflowExecutor",
    "TrustedWorkflowRequest",
    "UntrustedWorkflowRejectedError",
    "UntrustedWorkflowRequest",
    "WorkflowAbortedError",
    "WorkflowCapabilityNotAllowedError",
    "WorkflowConfigurationError",
    "WorkflowExecutionError",
    "WorkflowExecutionRequest",
    "WorkflowExecutionResult",
    "WorkflowExecutorError",
    "WorkflowExecutorLimits",
    "WorkflowExecutorRouter",
    "WorkflowMessageLimitError",
    "WorkflowOutputLimitError",
    "WorkflowPermissionError",
    "WorkflowProtocolError",
    "WorkflowResourceLimitError",
    "WorkflowTimeoutError",
    "WorkflowTrustTierError",
    "WorkflowWorkspaceError",
    "bubblewrap_argv",
    "clone_json_within",
    "execute_workflow",
    "read_workspace_file",
    "resolve_capability_handlers",
    "resolve_requested_capabilities",
    "resolve_sandbox_user",
    "resolve_workflow_executor_limits",
    "validate_capability_name",
    "workflow_request_from_json",
]
