"""The workflow executor error taxonomy (spec 04 §2.7).

Every error an executor raises on purpose is a :class:`WorkflowExecutorError` (itself an
:class:`~actoviq.core.ActoviqError`) with one of the stable reference codes. Two codes are Python
additions, because the Python executors enforce limits the reference does not have (spec 04 §8.3):
``WORKFLOW_RESOURCE_LIMIT_EXCEEDED`` (an rlimit such as CPU seconds or address space was hit) and
``WORKFLOW_PERMISSION_DENIED`` (a sandbox layer refused an operation), and one for the host-side
workspace reader: ``WORKFLOW_WORKSPACE_FILE_REFUSED``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from actoviq.core import ActoviqError

__all__ = [
    "CAPABILITY_FAILED_CODE",
    "MAX_REMOTE_MESSAGE_CHARS",
    "UntrustedWorkflowRejectedError",
    "WorkflowAbortedError",
    "WorkflowCapabilityNotAllowedError",
    "WorkflowConfigurationError",
    "WorkflowExecutionError",
    "WorkflowExecutorError",
    "WorkflowMessageLimitError",
    "WorkflowOutputLimitError",
    "WorkflowPermissionError",
    "WorkflowProtocolError",
    "WorkflowResourceLimitError",
    "WorkflowTimeoutError",
    "WorkflowTrustTierError",
    "WorkflowWorkspaceError",
    "error_from_remote",
]

CAPABILITY_FAILED_CODE = "WORKFLOW_CAPABILITY_FAILED"
"""Wire-only code: a capability handler raised something that is not a workflow error."""

MAX_REMOTE_MESSAGE_CHARS = 2048
"""Messages that cross the process boundary are truncated to this many characters."""


class WorkflowExecutorError(ActoviqError):
    """Root of every workflow executor error; ``code`` is one of the §2.7 codes."""

    default_code: ClassVar[str] = "WORKFLOW_EXECUTOR_ERROR"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: Mapping[str, Any] | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message, code=code, retryable=False, details=details)
        if cause is not None:
            self.__cause__ = cause


class UntrustedWorkflowRejectedError(WorkflowExecutorError):
    """An untrusted request reached a router that has no sandbox executor (fail closed)."""

    default_code: ClassVar[str] = "UNTRUSTED_WORKFLOW_REJECTED"

    def __init__(self) -> None:
        super().__init__(
            "Untrusted workflow execution is disabled until a SandboxWorkflowExecutor is supplied."
        )


class WorkflowTrustTierError(WorkflowExecutorError):
    """A request's ``trust`` does not match the executor's tier."""

    default_code: ClassVar[str] = "WORKFLOW_TRUST_TIER_MISMATCH"

    def __init__(self, expected: str, received: object) -> None:
        super().__init__(
            f"This executor requires trust={expected}; received {received}.",
            details={"expected": expected, "received": str(received)},
        )
        self.expected = expected
        self.received = received


class WorkflowTimeoutError(WorkflowExecutorError):
    """The wall-clock deadline (``timeoutMs``) passed before the workflow produced a result."""

    default_code: ClassVar[str] = "WORKFLOW_TIMEOUT"

    def __init__(self, timeout_ms: int) -> None:
        super().__init__(
            f"Workflow exceeded its wall-clock deadline of {timeout_ms}ms.",
            details={"timeoutMs": timeout_ms},
        )
        self.timeout_ms = timeout_ms


def _abort_message(reason: object) -> str:
    if isinstance(reason, BaseException) and str(reason):
        return str(reason)
    if isinstance(reason, str) and reason.strip():
        return reason
    return "Workflow execution was aborted."


class WorkflowAbortedError(WorkflowExecutorError):
    """The caller aborted the run (its signal fired); the message is taken from the reason."""

    default_code: ClassVar[str] = "WORKFLOW_ABORTED"

    def __init__(self, reason: object = None) -> None:
        super().__init__(
            _abort_message(reason),
            cause=reason if isinstance(reason, BaseException) else None,
        )
        self.reason = reason


class WorkflowOutputLimitError(WorkflowExecutorError):
    """The result (compact UTF-8 JSON) is larger than ``maxOutputBytes``."""

    default_code: ClassVar[str] = "WORKFLOW_OUTPUT_LIMIT_EXCEEDED"

    def __init__(self, max_output_bytes: int, message: str | None = None) -> None:
        super().__init__(
            message or f"Workflow output exceeded the {max_output_bytes}-byte limit.",
            details={"maxOutputBytes": max_output_bytes},
        )
        self.max_output_bytes = max_output_bytes


class WorkflowMessageLimitError(WorkflowExecutorError):
    """A protocol message, the message count or the child's diagnostics exceeded a limit."""

    default_code: ClassVar[str] = "WORKFLOW_MESSAGE_LIMIT_EXCEEDED"

    def __init__(self, detail: str, limit: int, *, message: str | None = None) -> None:
        super().__init__(
            message or f"{detail} exceeded the {limit}-byte limit.",
            details={"maxMessageBytes": limit},
        )
        self.max_message_bytes = limit


class WorkflowProtocolError(WorkflowExecutorError):
    """The child broke the NDJSON JSON-RPC protocol, could not start, or died before a result."""

    default_code: ClassVar[str] = "WORKFLOW_PROTOCOL_ERROR"


class WorkflowCapabilityNotAllowedError(WorkflowExecutorError):
    """A run asked for a capability the executor was not configured with."""

    default_code: ClassVar[str] = "WORKFLOW_CAPABILITY_NOT_ALLOWED"

    def __init__(self, capability: str) -> None:
        super().__init__(
            f"Workflow capability is not allowed: {capability}.",
            details={"capability": capability},
        )
        self.capability = capability


class WorkflowExecutionError(WorkflowExecutorError):
    """The script failed (raised, returned a non-JSON value...); ``remote_code`` is the child's."""

    default_code: ClassVar[str] = "WORKFLOW_EXECUTION_FAILED"

    def __init__(
        self,
        message: str,
        *,
        remote_code: str | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(
            message,
            details={"remoteCode": remote_code} if remote_code is not None else None,
            cause=cause,
        )
        self.remote_code = remote_code


class WorkflowConfigurationError(WorkflowExecutorError, ValueError):
    """Invalid executor configuration or request shape (limits, names, workspace, trust tier)."""

    default_code: ClassVar[str] = "WORKFLOW_CONFIGURATION_ERROR"


class WorkflowResourceLimitError(WorkflowExecutorError):
    """[PY] A resource limit stopped the child: ``resource`` is cpu, memory, fileSize or disk.

    ``disk`` is the host's workspace quota (``ProcessResourceLimits.workspace_bytes``).
    """

    default_code: ClassVar[str] = "WORKFLOW_RESOURCE_LIMIT_EXCEEDED"

    def __init__(self, resource: str, message: str) -> None:
        super().__init__(message, details={"resource": resource})
        self.resource = resource


class WorkflowPermissionError(WorkflowExecutorError):
    """[PY] A sandbox layer refused an operation of the script.

    Attributes:
        operation: what was refused (the audit event, e.g. ``os.fork``, or for a kernel refusal
            the error and path, e.g. ``EACCES /etc/passwd``).
        layer: ``audit-hook`` (the in-child deny list), ``kernel`` (an ``EPERM``/``EACCES``/
            ``EROFS`` from Landlock, seccomp, the uid or a read-only mount) or ``seccomp`` (the
            filter killed the child).
    """

    default_code: ClassVar[str] = "WORKFLOW_PERMISSION_DENIED"

    def __init__(self, operation: str, message: str, *, layer: str = "audit-hook") -> None:
        super().__init__(message, details={"operation": operation, "layer": layer})
        self.operation = operation
        self.layer = layer


class WorkflowWorkspaceError(WorkflowExecutorError):
    """[PY] :func:`~actoviq.workflow.read_workspace_file` refused a path.

    Attributes:
        path: the path as given.
        reason: ``outside`` (absolute, ``..`` or escaping the workspace), ``symlink``,
            ``hard-link`` (more than one link: the inode may be shared with a file outside),
            ``not-regular`` (FIFO, socket, device, directory), ``missing``, ``too-large`` or
            ``unreadable``.
    """

    default_code: ClassVar[str] = "WORKFLOW_WORKSPACE_FILE_REFUSED"

    def __init__(self, path: str, reason: str, message: str) -> None:
        super().__init__(message, details={"path": path, "reason": reason})
        self.path = path
        self.reason = reason


def error_from_remote(
    code: str,
    message: str,
    *,
    max_output_bytes: int,
    max_message_bytes: int,
    timeout_ms: int,
    data: Mapping[str, Any] | None = None,
) -> WorkflowExecutorError:
    """Map an error the child reported over the protocol to the host's typed error (§2.6)."""
    text = message[:MAX_REMOTE_MESSAGE_CHARS]
    extra = data or {}
    if code == "WORKFLOW_TIMEOUT":
        return WorkflowTimeoutError(timeout_ms)
    if code == "WORKFLOW_OUTPUT_LIMIT_EXCEEDED":
        return WorkflowOutputLimitError(max_output_bytes, text or None)
    if code == "WORKFLOW_MESSAGE_LIMIT_EXCEEDED":
        return WorkflowMessageLimitError(
            "Workflow message", max_message_bytes, message=text or None
        )
    if code == "WORKFLOW_RESOURCE_LIMIT_EXCEEDED":
        resource = extra.get("resource")
        return WorkflowResourceLimitError(
            resource if isinstance(resource, str) else "unknown", text
        )
    if code == "WORKFLOW_PERMISSION_DENIED":
        operation = extra.get("operation")
        layer = extra.get("layer")
        return WorkflowPermissionError(
            operation if isinstance(operation, str) else "unknown",
            text,
            layer=layer if layer in ("audit-hook", "kernel") else "audit-hook",
        )
    return WorkflowExecutionError(text, remote_code=code)
