"""Executor limits (spec 04 §2.3) and the POSIX resource limits of the child process.

Byte sizes are UTF-8 bytes of compact JSON. Every limit is a positive "safe integer" (at most
``2**53 - 1``, so a TypeScript peer can read it); ``maxMessageBytes`` has a hard ceiling of 16 MiB.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from actoviq.workflow.errors import WorkflowConfigurationError

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_MAX_PROTOCOL_MESSAGES",
    "DEFAULT_TIMEOUT_MS",
    "HARD_MAX_MESSAGE_BYTES",
    "MAX_SAFE_INTEGER",
    "ProcessResourceLimits",
    "WorkflowExecutorLimits",
    "check_option",
    "resolve_request_timeout_ms",
    "resolve_workflow_executor_limits",
]

MAX_SAFE_INTEGER: Final = 2**53 - 1
DEFAULT_TIMEOUT_MS: Final = 60_000
DEFAULT_MAX_OUTPUT_BYTES: Final = 262_144
DEFAULT_MAX_MESSAGE_BYTES: Final = 1_048_576
DEFAULT_MAX_PROTOCOL_MESSAGES: Final = 1_024
HARD_MAX_MESSAGE_BYTES: Final = 16_777_216
"""The largest protocol message any executor accepts, whatever the configuration (16 MiB)."""


def check_option(value: object, kind: type[Any], name: str) -> None:
    """Refuse an executor option of the wrong type (``None`` means the default).

    Raises:
        WorkflowConfigurationError: ``value`` is neither None nor a ``kind``.
    """
    if value is not None and not isinstance(value, kind):
        raise WorkflowConfigurationError(
            f"{name} must be a {kind.__name__}; got {type(value).__name__}."
        )


def _positive_safe_int(value: object, name: str) -> int:
    if type(value) is not int or not 0 < value <= MAX_SAFE_INTEGER:
        raise WorkflowConfigurationError(f"{name} must be a positive safe integer.")
    return value


def _non_negative_int(value: object, name: str) -> int:
    if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
        raise WorkflowConfigurationError(f"{name} must be a non-negative safe integer.")
    return value


@attrs.frozen(kw_only=True)
class WorkflowExecutorLimits:
    """Resolved limits of one executor (wire names in brackets).

    Attributes:
        timeout_ms: wall-clock deadline per run [``timeoutMs``].
        max_output_bytes: size of the result [``maxOutputBytes``].
        max_message_bytes: size of any one protocol line and of the child's total stderr, and
            the clone limit for inputs and capability values [``maxMessageBytes``].
        max_protocol_messages: messages sent plus received per run [``maxProtocolMessages``].
    """

    timeout_ms: int = DEFAULT_TIMEOUT_MS
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_protocol_messages: int = DEFAULT_MAX_PROTOCOL_MESSAGES

    def __attrs_post_init__(self) -> None:
        _positive_safe_int(self.timeout_ms, "timeoutMs")
        _positive_safe_int(self.max_output_bytes, "maxOutputBytes")
        _positive_safe_int(self.max_message_bytes, "maxMessageBytes")
        _positive_safe_int(self.max_protocol_messages, "maxProtocolMessages")
        if self.max_message_bytes > HARD_MAX_MESSAGE_BYTES:
            raise WorkflowConfigurationError(
                f"maxMessageBytes cannot exceed {HARD_MAX_MESSAGE_BYTES}."
            )


def resolve_workflow_executor_limits(
    *,
    timeout_ms: int | None = None,
    max_output_bytes: int | None = None,
    max_message_bytes: int | None = None,
    max_protocol_messages: int | None = None,
) -> WorkflowExecutorLimits:
    """Fill in the §2.3 defaults and validate.

    Raises:
        WorkflowConfigurationError: ``"<name> must be a positive safe integer."`` or
            ``"maxMessageBytes cannot exceed 16777216."``.

    Example:
        >>> resolve_workflow_executor_limits(timeout_ms=500).max_message_bytes
        1048576
    """
    return WorkflowExecutorLimits(
        timeout_ms=DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms,
        max_output_bytes=DEFAULT_MAX_OUTPUT_BYTES if max_output_bytes is None else max_output_bytes,
        max_message_bytes=(
            DEFAULT_MAX_MESSAGE_BYTES if max_message_bytes is None else max_message_bytes
        ),
        max_protocol_messages=(
            DEFAULT_MAX_PROTOCOL_MESSAGES
            if max_protocol_messages is None
            else max_protocol_messages
        ),
    )


def resolve_request_timeout_ms(
    request_timeout_ms: int | None, limits: WorkflowExecutorLimits
) -> int:
    """The per-request ``timeoutMs`` overrides the executor default (validated as such)."""
    if request_timeout_ms is None:
        return limits.timeout_ms
    return _positive_safe_int(request_timeout_ms, "request.timeoutMs")


@attrs.frozen(kw_only=True)
class ProcessResourceLimits:
    """POSIX rlimits the child applies to itself before it reads the script (soft = hard).

    Attributes:
        cpu_seconds: ``RLIMIT_CPU``; the kernel sends SIGXCPU, reported as
            :class:`~actoviq.workflow.WorkflowResourceLimitError` (resource ``cpu``).
        address_space_bytes: ``RLIMIT_AS``; allocations fail with ``MemoryError`` (resource
            ``memory``). Must leave room for the interpreter and asyncio (about 60 MB).
        open_files: ``RLIMIT_NOFILE``.
        max_processes: ``RLIMIT_NPROC``. The kernel counts every process and thread of the
            child's real user, and exempts root (``CAP_SYS_RESOURCE``): as root this limit binds
            nothing and fork is stopped only by the audit hook (and, under bubblewrap, contained
            by the PID namespace).
        file_size_bytes: ``RLIMIT_FSIZE``; writing past it fails with ``EFBIG`` (CPython ignores
            SIGXFSZ), reported as resource ``fileSize`` unless the script handles it.
        workspace_bytes: the most one run may add to its workspace, summed over every file and
            directory (each counted as at least 4 KiB). Enforced by the host, which measures
            the workspace before, during (every 25-500 ms) and after the run and kills the
            child once it is over: resource ``disk``. Between two measurements a script may
            overshoot by what it can write in that time (each file still bounded by
            ``file_size_bytes``). Not sent to the child.
    """

    cpu_seconds: int = 10
    address_space_bytes: int = 512 * 1024 * 1024
    open_files: int = 64
    max_processes: int = 0
    file_size_bytes: int = 16 * 1024 * 1024
    workspace_bytes: int = 256 * 1024 * 1024

    def __attrs_post_init__(self) -> None:
        _positive_safe_int(self.cpu_seconds, "cpuSeconds")
        _positive_safe_int(self.address_space_bytes, "addressSpaceBytes")
        _positive_safe_int(self.open_files, "openFiles")
        _non_negative_int(self.max_processes, "maxProcesses")
        _non_negative_int(self.file_size_bytes, "fileSizeBytes")
        _positive_safe_int(self.workspace_bytes, "workspaceBytes")

    def to_wire(self) -> dict[str, int]:
        """The camelCase form passed to the child bootstrap."""
        return {
            "cpuSeconds": self.cpu_seconds,
            "addressSpaceBytes": self.address_space_bytes,
            "openFiles": self.open_files,
            "maxProcesses": self.max_processes,
            "fileSizeBytes": self.file_size_bytes,
        }
