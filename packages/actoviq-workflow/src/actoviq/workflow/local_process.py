"""The local isolated-process executor (spec 04 §2.6, decisions D8 and D10, §8.3).

Each run is a fresh ``python -I -S -B`` process with an **empty environment**, its cwd in the
workspace, its own session and process group (SIGKILLed as a whole on timeout, abort, cancellation
or any other settle), rlimits, bounded NDJSON JSON-RPC messages over pipes, a bounded result, and
**kernel layers** applied by the child to itself before it reads the script
(:class:`~actoviq.workflow.SandboxPolicy`):

* ``PR_SET_NO_NEW_PRIVS``;
* when the host is root, an unprivileged uid/gid (``nobody`` by default), so ``RLIMIT_NPROC``
  binds, file permissions apply and host processes cannot be signalled; the workspace is lent to
  that uid for the run, and a private mount namespace keeps the workspace and the interpreter
  reachable when their parent directories are closed to it;
* a Landlock domain: read-only interpreter prefix and system libraries, read-write workspace,
  nothing else; no TCP bind/connect; signals and abstract unix sockets scoped to the sandbox;
* a seccomp filter (no ptrace, process_vm_*, pidfd_*, namespaces, mounts, sockets, mknod, ...).

A required layer that the machine lacks makes :meth:`execute` refuse (fail closed). The audit-hook
deny list stays inside the child as defence in depth; it is not the boundary. What remains: the
child shares the host's kernel, network namespace (sockets are refused by seccomp) and PID
namespace (other processes are visible, not reachable). Bubblewrap adds namespaces on top.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncGenerator, Mapping
from types import TracebackType
from typing import Any, cast

from actoviq.core import JsonValue, JsonValueError
from actoviq.workflow._landlock import python_prefix
from actoviq.workflow._lease import lend_workspace
from actoviq.workflow._process import (
    ChildRun,
    ProcessRegistry,
    bootstrap_argv,
    default_python,
    execute_message_for,
    monotonic_ms,
    resolve_workspace,
    run_child,
)
from actoviq.workflow._sandbox import (
    KernelLayers,
    child_kernel_spec,
    probe_kernel_layers,
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
    check_option,
    resolve_request_timeout_ms,
)
from actoviq.workflow.policy import SandboxPolicy
from actoviq.workflow.types import (
    CapabilityHandler,
    SandboxCapabilities,
    WorkflowExecutionRequest,
    WorkflowExecutionResult,
)

__all__ = ["LocalIsolatedProcessWorkflowExecutor", "ProcessWorkflowExecutorBase"]


class ProcessWorkflowExecutorBase:
    """Validation, kernel layers, bookkeeping and lifecycle shared by the process executors.

    Subclasses provide :meth:`capabilities` and :meth:`_child`.
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
        sandbox: SandboxPolicy | None = None,
    ) -> None:
        if sys.platform == "win32":  # pragma: no cover - POSIX only
            raise WorkflowConfigurationError("Process workflow executors need a POSIX system.")
        check_option(limits, WorkflowExecutorLimits, "limits")
        check_option(resource_limits, ProcessResourceLimits, "resource_limits")
        check_option(sandbox, SandboxPolicy, "sandbox")
        check_option(python_executable, str, "python_executable")
        if not isinstance(audit_hook, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise WorkflowConfigurationError("audit_hook must be a bool.")
        self._limits = limits or WorkflowExecutorLimits()
        self._resource_limits = resource_limits or ProcessResourceLimits()
        self._handlers = resolve_capability_handlers(capabilities)
        self._python = python_executable or default_python()
        self._audit_hook = audit_hook
        self._policy = sandbox or SandboxPolicy()
        self._layers: KernelLayers | None = None
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
    def sandbox_policy(self) -> SandboxPolicy:
        """The kernel layers this executor applies and requires."""
        return self._policy

    @property
    def active_process_count(self) -> int:
        """Children started and not yet reaped."""
        return len(self._registry)

    def capabilities(self) -> SandboxCapabilities:
        """Whether this executor can run here (overridden by subclasses)."""
        raise NotImplementedError

    def _kernel_layers(self) -> KernelLayers:
        if self._layers is None:
            self._layers = probe_kernel_layers(self._policy)
        return self._layers

    def _layer_names(self, layers: KernelLayers) -> list[str]:
        names = ["no-new-privs"]
        if layers.drop is not None or layers.host_uid != 0:
            names.append("uid")
        if layers.landlock_abi:
            names.append("landlock")
        if layers.seccomp_program is not None:
            names.append("seccomp")
        names.append("rlimits")
        if self._audit_hook:
            names.append("audit-hook")
        return names

    def _child(
        self, workspace: str
    ) -> contextlib.AbstractAsyncContextManager[tuple[list[str], tuple[int, ...]]]:
        raise NotImplementedError

    def _python_argv(self, workspace: str, sandbox: Mapping[str, Any] | None) -> list[str]:
        return bootstrap_argv(
            self._python,
            workspace=workspace,
            resource_limits=self._resource_limits,
            max_message_bytes=self._limits.max_message_bytes,
            audit_hook=self._audit_hook,
            sandbox=sandbox,
        )

    @contextlib.asynccontextmanager
    async def _lent(self, workspace: str, owner: tuple[int, int] | None) -> AsyncGenerator[None]:
        """Lend the workspace to the sandbox uid (when the policy says so) for the block."""
        if owner is None or not self._policy.lend_workspace:
            yield
            return
        prefix = python_prefix(self._python)
        async with lend_workspace(workspace, owner[0], owner[1], protected=(prefix,)):
            yield

    async def execute(self, request: WorkflowExecutionRequest) -> WorkflowExecutionResult:
        """Run an untrusted request in a child process.

        Everything up to the spawn is validated first, so these failures never start a process.

        Raises:
            WorkflowTrustTierError: ``trust`` is not ``"untrusted"``.
            WorkflowAbortedError: the signal fired (before or during the run).
            WorkflowExecutionError: empty source, or the script failed.
            WorkflowConfigurationError: bad workspace or input, the executor is closed, or a
                required sandbox layer is missing here (fail closed; the message says which).
            WorkflowCapabilityNotAllowedError: a requested capability is not configured.
            WorkflowMessageLimitError: the execute message (source + input) is too large.
            WorkflowTimeoutError: the wall-clock deadline passed.
            WorkflowPermissionError: a sandbox layer refused an operation of the script.
            WorkflowExecutorError: any other typed failure (limits, protocol).
        """
        started = monotonic_ms()
        if self._closed:
            raise WorkflowConfigurationError(f"The {self.kind} executor is closed.")
        if request.trust != "untrusted":
            raise WorkflowTrustTierError("untrusted", request.trust)
        signal = request.signal
        if signal is not None and signal.aborted:
            raise WorkflowAbortedError(signal.reason)
        source = cast("object", request.source)  # a caller may pass anything
        if not isinstance(source, str) or not source.strip():
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
        first = execute_message_for(
            source=request.source,
            value=value,
            capabilities=granted,
            limits=self._limits,
            timeout_ms=timeout_ms,
        )
        status = self.capabilities()
        if not status.available:
            raise WorkflowConfigurationError(
                f"The {self.kind} executor refuses to run untrusted code here: {status.reason}"
            )
        async with self._child(workspace) as (argv, pass_fds):
            run = ChildRun(
                argv=argv,
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
                pass_fds=pass_fds,
                workspace_quota_bytes=self._resource_limits.workspace_bytes,
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
    """Run untrusted scripts in a local ``python -I`` child behind kernel layers.

    Isolation ``local-process``: no-new-privs, an unprivileged uid (when the host is root),
    Landlock and seccomp, as :class:`~actoviq.workflow.SandboxPolicy` requires (see the module
    docs for what each layer covers and what remains).

    Args:
        limits: protocol limits (§2.3); defaults apply when None.
        resource_limits: rlimits applied by the child to itself.
        capabilities: host handlers a run may be granted by name.
        python_executable: the interpreter (default: the real binary of ``sys.executable``).
        audit_hook: keep True. False disables the in-child deny list, leaving the kernel layers,
            rlimits, the empty environment and the process-group kill (tests use it to show that
            the kernel layers alone hold).
        sandbox: the kernel layers and which are required (default: all required).

    Example:
        >>> executor = LocalIsolatedProcessWorkflowExecutor()
        >>> executor.capabilities().isolation
        'local-process'
    """

    kind: str = "local-isolated-process"
    isolation: str = "local-process"

    def capabilities(self) -> SandboxCapabilities:
        """The active layers, and whether every required layer is available here."""
        layers = self._kernel_layers()
        uid, gid = layers.drop if layers.drop is not None else (os.geteuid(), os.getegid())
        return SandboxCapabilities(
            kind=self.kind,
            isolation=self.isolation,
            available=not layers.problems,
            reason="; ".join(layers.problems) or None,
            network=layers.seccomp_program is None,
            filesystem=(
                "Landlock: read the interpreter and system libraries, read/write the workspace"
                if layers.landlock_abi
                else "no Landlock domain: the host user's file permissions only"
            ),
            os_boundary=bool(layers.landlock_abi or layers.seccomp_program),
            landlock_abi=layers.landlock_abi,
            seccomp=layers.seccomp_program is not None,
            no_new_privs=True,
            uid=uid,
            gid=gid,
            layers=self._layer_names(layers),
        )

    @contextlib.asynccontextmanager
    async def _child(self, workspace: str) -> AsyncGenerator[tuple[list[str], tuple[int, ...]]]:
        layers = self._kernel_layers()
        async with self._lent(workspace, layers.drop):
            with child_kernel_spec(layers, python=self._python, workspace=workspace) as kernel:
                yield self._python_argv(workspace, kernel.spec), kernel.pass_fds

    async def __aenter__(self) -> LocalIsolatedProcessWorkflowExecutor:
        return self
