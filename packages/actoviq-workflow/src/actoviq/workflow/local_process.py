"""The local isolated-process executor (spec 04 §2.6, decision D8, §8.3).

**What it is:** ambient-capability prevention for code you do not fully trust. Each run is a fresh
``python -I -S -B`` process with an **empty environment**, its cwd in the workspace, its own
session and process group (SIGKILLed as a whole on timeout, abort, cancellation or any other
settle), rlimits on CPU seconds, address space, open files, processes and file size, bounded
NDJSON JSON-RPC messages over pipes, bounded diagnostics, a bounded result, and an audit-hook
deny list (network, process creation, signals, ctypes, files outside the workspace).

**What it is not:** an adversarial multi-tenant sandbox. The child runs as the host's user and sees
the host's filesystem namespace; the audit hook lives in the same interpreter as the script and
can be defeated by interpreter bugs or clever introspection; ``RLIMIT_NPROC`` does not bind root.
For hostile code use :class:`~actoviq.workflow.BubblewrapWorkflowExecutor` or a container/remote
:class:`~actoviq.workflow.SandboxWorkflowExecutor`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import TracebackType

from actoviq.core import JsonValue, JsonValueError
from actoviq.workflow._process import (
    ChildRun,
    ProcessRegistry,
    bootstrap_argv,
    default_python,
    execute_message,
    monotonic_ms,
    resolve_workspace,
    run_child,
)
from actoviq.workflow.capabilities import (
    clone_json_within,
    resolve_capability_handlers,
    resolve_requested_capabilities,
)
from actoviq.workflow.errors import (
    WorkflowAbortedError,
    WorkflowConfigurationError,
    WorkflowExecutionError,
    WorkflowTrustTierError,
)
from actoviq.workflow.limits import (
    ProcessResourceLimits,
    WorkflowExecutorLimits,
    resolve_request_timeout_ms,
)
from actoviq.workflow.types import (
    CapabilityHandler,
    SandboxCapabilities,
    WorkflowExecutionRequest,
    WorkflowExecutionResult,
)

__all__ = ["LocalIsolatedProcessWorkflowExecutor", "ProcessWorkflowExecutorBase"]


class ProcessWorkflowExecutorBase:
    """Validation, bookkeeping and lifecycle shared by the process-based sandbox executors.

    Subclasses provide :meth:`capabilities` and :meth:`_argv`.
    """

    kind: str = "process"
    isolation: str = "local-process"

    def __init__(
        self,
        *,
        limits: WorkflowExecutorLimits | None = None,
        resource_limits: ProcessResourceLimits | None = None,
        capabilities: Mapping[str, CapabilityHandler] | None = None,
        python_executable: str | None = None,
        audit_hook: bool = True,
    ) -> None:
        if sys.platform == "win32":  # pragma: no cover - POSIX only
            raise WorkflowConfigurationError("Process workflow executors need a POSIX system.")
        self._limits = limits or WorkflowExecutorLimits()
        self._resource_limits = resource_limits or ProcessResourceLimits()
        self._handlers = resolve_capability_handlers(capabilities)
        self._python = python_executable or default_python()
        self._audit_hook = audit_hook
        self._registry = ProcessRegistry()
        self._closed = False

    @property
    def limits(self) -> WorkflowExecutorLimits:
        """The resolved protocol limits."""
        return self._limits

    @property
    def resource_limits(self) -> ProcessResourceLimits:
        """The rlimits each child applies to itself."""
        return self._resource_limits

    @property
    def active_process_count(self) -> int:
        """Children started and not yet reaped."""
        return len(self._registry)

    def capabilities(self) -> SandboxCapabilities:
        """Whether this executor can run here (overridden by subclasses)."""
        raise NotImplementedError

    def _argv(self, workspace: str) -> list[str]:
        raise NotImplementedError

    def _python_argv(self, workspace: str) -> list[str]:
        return bootstrap_argv(
            self._python,
            workspace=workspace,
            resource_limits=self._resource_limits,
            max_message_bytes=self._limits.max_message_bytes,
            audit_hook=self._audit_hook,
        )

    async def execute(self, request: WorkflowExecutionRequest) -> WorkflowExecutionResult:
        """Run an untrusted request in a child process.

        Everything up to the spawn is validated first, so these failures never start a process.

        Raises:
            WorkflowTrustTierError: ``trust`` is not ``"untrusted"``.
            WorkflowAbortedError: the signal fired (before or during the run).
            WorkflowExecutionError: empty source, or the script failed.
            WorkflowConfigurationError: bad workspace, input, or the executor is closed/unavailable.
            WorkflowCapabilityNotAllowedError: a requested capability is not configured.
            WorkflowMessageLimitError: the execute message (source + input) is too large.
            WorkflowTimeoutError: the wall-clock deadline passed.
            WorkflowExecutorError: any other typed failure (limits, protocol, permissions).
        """
        started = monotonic_ms()
        if self._closed:
            raise WorkflowConfigurationError(f"The {self.kind} executor is closed.")
        if request.trust != "untrusted":
            raise WorkflowTrustTierError("untrusted", request.trust)
        signal = request.signal
        if signal is not None and signal.aborted:
            raise WorkflowAbortedError(signal.reason)
        if not request.source.strip():
            raise WorkflowExecutionError("Workflow source must be a non-empty string.")
        workspace = resolve_workspace(getattr(request, "workspace_dir", None))
        if signal is not None and signal.aborted:
            raise WorkflowAbortedError(signal.reason)
        timeout_ms = resolve_request_timeout_ms(request.timeout_ms, self._limits)
        granted = resolve_requested_capabilities(request.capabilities, self._handlers)
        try:
            value: JsonValue = clone_json_within(
                request.input, limit=self._limits.max_message_bytes, label="Workflow input"
            )
        except JsonValueError as error:
            raise WorkflowConfigurationError(error.message) from None
        run = ChildRun(
            argv=self._argv(workspace),
            cwd=workspace,
            workspace=workspace,
            executor_kind=self.kind,
            source=request.source,
            input=value,
            capabilities=granted,
            handlers=self._handlers,
            limits=self._limits,
            timeout_ms=timeout_ms,
            signal=signal,
        )
        first = execute_message(run)
        status = self.capabilities()
        if not status.available:
            raise WorkflowConfigurationError(
                f"The {self.kind} executor is not available here: {status.reason}"
            )
        result, calls = await run_child(run, registry=self._registry, first_message=first)
        return WorkflowExecutionResult(
            value=result,
            trust="untrusted",
            executor=self.kind,
            duration_ms=max(0, round(monotonic_ms() - started)),
            capability_calls=calls,
        )

    async def aclose(self) -> None:
        """Refuse new runs and SIGKILL the process group of every live child."""
        self._closed = True
        self._registry.kill_all()

    async def __aenter__(self) -> ProcessWorkflowExecutorBase:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class LocalIsolatedProcessWorkflowExecutor(ProcessWorkflowExecutorBase):
    """Run untrusted scripts in a local ``python -I`` child (isolation ``local-process``).

    Reduces ambient access; **not** an adversarial multi-tenant sandbox (see the module docs).

    Args:
        limits: protocol limits (§2.3); defaults apply when None.
        resource_limits: rlimits applied by the child to itself.
        capabilities: host handlers a run may be granted by name.
        python_executable: the interpreter (default: the real binary of ``sys.executable``).
        audit_hook: keep True. False disables the in-child deny list, leaving rlimits, the empty
            environment and the process-group kill; it exists to test those layers alone.

    Example:
        >>> executor = LocalIsolatedProcessWorkflowExecutor()
        >>> executor.capabilities().isolation
        'local-process'
    """

    kind: str = "local-isolated-process"
    isolation: str = "local-process"

    def capabilities(self) -> SandboxCapabilities:
        """Always available on POSIX; reports that no OS boundary is involved."""
        return SandboxCapabilities(
            kind=self.kind,
            isolation=self.isolation,
            available=True,
            network=False,
            filesystem=(
                "audit hook: read/write inside the workspace, read the standard library; "
                "same user and mount namespace as the host"
            ),
            os_boundary=False,
        )

    def _argv(self, workspace: str) -> list[str]:
        return self._python_argv(workspace)

    async def __aenter__(self) -> LocalIsolatedProcessWorkflowExecutor:
        return self
