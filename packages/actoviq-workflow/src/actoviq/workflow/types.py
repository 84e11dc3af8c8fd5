"""Request/result contract and executor protocols (spec 04 §2.1).

A request names its trust tier explicitly: ``"trusted"`` code runs where the host says (even
in-process); ``"untrusted"`` code runs only in a :class:`SandboxWorkflowExecutor` inside a workspace
directory. Scripts are Python source defining ``main(context)`` (sync or ``async``) that returns a
JSON value; ``context["input"]`` is the cloned input and ``context["capabilities"]`` maps each
granted capability name to an ``async`` function ``(input) -> JSON``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import attrs

from actoviq.core import AbortSignal, JsonValue, register_wire_class
from actoviq.workflow.errors import WorkflowConfigurationError, WorkflowWorkspaceError
from actoviq.workflow.workspace import DEFAULT_MAX_READ_BYTES, read_workspace_file

__all__ = [
    "CapabilityCallContext",
    "CapabilityHandler",
    "SandboxCapabilities",
    "SandboxIsolation",
    "SandboxWorkflowExecutor",
    "TrustTier",
    "TrustedWorkflowExecutor",
    "TrustedWorkflowRequest",
    "UntrustedWorkflowRequest",
    "WorkflowExecutionRequest",
    "WorkflowExecutionResult",
    "workflow_request_from_json",
]

TrustTier: TypeAlias = Literal["trusted", "untrusted"]
"""Whether workflow code is trusted (runs in-process) or untrusted (sandboxed)."""
SandboxIsolation: TypeAlias = Literal["local-process", "container", "remote"]
"""Where untrusted workflow code runs."""


def _names(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise WorkflowConfigurationError("capabilities must be a list of capability names.")
    names: list[str] = []
    for name in value:  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(name, str):
            raise WorkflowConfigurationError("capabilities must be a list of capability names.")
        names.append(name)
    return tuple(names)


def _signal(_instance: object, _attribute: object, value: object) -> None:
    if value is not None and not isinstance(value, AbortSignal):
        raise WorkflowConfigurationError("signal must be an AbortSignal or None.")


@attrs.frozen(kw_only=True)
class TrustedWorkflowRequest:
    """Run explicitly trusted code (``trust="trusted"``).

    Attributes:
        source: Python source defining ``main(context)``.
        input: the JSON input (``None`` when absent).
        timeout_ms: overrides the executor's default deadline.
        signal: aborts the run (never serialised).
        capabilities: the subset of the executor's handlers this run may call.
        trust: the tier; executors and the router check it at run time.
    """

    source: str
    input: JsonValue = None
    timeout_ms: int | None = None
    signal: AbortSignal | None = attrs.field(default=None, eq=False, repr=False, validator=_signal)
    capabilities: tuple[str, ...] = attrs.field(default=(), converter=_names)
    trust: str = "trusted"


@attrs.frozen(kw_only=True)
class UntrustedWorkflowRequest:
    """Run untrusted code (``trust="untrusted"``) confined to ``workspace_dir``.

    Attributes:
        source: Python source defining ``main(context)``.
        workspace_dir: an absolute path to an existing directory; the child's cwd and the only
            place it may write.
        input: the JSON input (``None`` when absent).
        timeout_ms: overrides the executor's default deadline.
        signal: aborts the run (never serialised).
        capabilities: the subset of the executor's handlers this run may call.
        trust: the tier; executors and the router check it at run time.
    """

    source: str
    workspace_dir: str
    input: JsonValue = None
    timeout_ms: int | None = None
    signal: AbortSignal | None = attrs.field(default=None, eq=False, repr=False, validator=_signal)
    capabilities: tuple[str, ...] = attrs.field(default=(), converter=_names)
    trust: str = "untrusted"


WorkflowExecutionRequest: TypeAlias = TrustedWorkflowRequest | UntrustedWorkflowRequest
"""A request to run workflow code, trusted or untrusted."""


def workflow_request_from_json(
    data: Mapping[str, Any], *, signal: AbortSignal | None = None
) -> WorkflowExecutionRequest:
    """Build a request from its camelCase wire form (``trust``, ``source``, ``workspaceDir``...).

    Raises:
        WorkflowConfigurationError: unknown trust tier or a wrongly typed field.
    """
    if not isinstance(data, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise WorkflowConfigurationError("A workflow request must be a JSON object.")
    trust = data.get("trust")
    source = data.get("source")
    if not isinstance(source, str):
        raise WorkflowConfigurationError("Workflow source must be a non-empty string.")
    timeout = data.get("timeoutMs")
    if timeout is not None and type(timeout) is not int:
        raise WorkflowConfigurationError("request.timeoutMs must be a positive safe integer.")
    common: dict[str, Any] = {
        "source": source,
        "input": data.get("input"),
        "timeout_ms": timeout,
        "signal": signal,
        "capabilities": data.get("capabilities", []),
    }
    if trust == "trusted":
        return TrustedWorkflowRequest(**common)
    if trust == "untrusted":
        workspace = data.get("workspaceDir")
        if not isinstance(workspace, str):
            raise WorkflowConfigurationError("workspaceDir must be an absolute path.")
        return UntrustedWorkflowRequest(workspace_dir=workspace, **common)
    raise WorkflowConfigurationError(f"Unknown workflow trust tier: {trust}.")


@attrs.frozen(kw_only=True)
class WorkflowExecutionResult:
    """What a successful run returns.

    Wire form: ``{value, trust, executor, durationMs, capabilityCalls}``.

    Attributes:
        value: the script's JSON result.
        trust: the tier the run executed under.
        executor: the executor's ``kind``.
        duration_ms: wall-clock milliseconds from validation to result.
        capability_calls: capability calls the script made (declared names only).
    """

    value: JsonValue
    trust: str
    executor: str
    duration_ms: int
    capability_calls: int


register_wire_class(WorkflowExecutionResult)


@attrs.frozen(kw_only=True)
class CapabilityCallContext:
    """Passed to a capability handler with each call.

    Attributes:
        name: the capability name.
        trust: the run's tier.
        signal: fires when the run is aborted or times out.
        workspace_dir: the workspace realpath (isolated executors only).
    """

    name: str
    trust: str
    signal: AbortSignal = attrs.field(eq=False, repr=False)
    workspace_dir: str | None = None

    def read_workspace_file(self, path: str, *, max_bytes: int = DEFAULT_MAX_READ_BYTES) -> bytes:
        """Read a regular file the script left in its workspace, never following symlinks.

        See :func:`~actoviq.workflow.read_workspace_file`.

        Raises:
            WorkflowWorkspaceError: the path is refused, or this run has no workspace.
        """
        if self.workspace_dir is None:
            raise WorkflowWorkspaceError(path, "missing", "This run has no workspace.")
        return read_workspace_file(self.workspace_dir, path, max_bytes=max_bytes)


CapabilityHandler: TypeAlias = Callable[
    [JsonValue, CapabilityCallContext], "JsonValue | Awaitable[JsonValue]"
]
"""A host function a script may call by name; inputs and outputs are cloned strict JSON."""


@attrs.frozen(kw_only=True)
class SandboxCapabilities:
    """What a sandbox executor can do on this machine.

    Attributes:
        kind: the executor's ``kind``.
        isolation: ``local-process``, ``container`` or ``remote``.
        available: whether ``execute`` can run here.
        reason: why not, when ``available`` is False.
        network: whether the script can open network sockets. False only when a kernel layer
            enforces it (the seccomp filter refuses ``socket()``, or a network namespace).
        filesystem: a short description of what the script can read and write.
        os_boundary: True when kernel mechanisms (Landlock, seccomp, an unprivileged uid,
            namespaces, a VM) are the boundary, False when only in-process checks (audit hooks)
            and rlimits stand between script and host.
        landlock_abi: the Landlock ABI the child enforces (0: no Landlock domain).
        seccomp: whether the child runs behind the seccomp filter.
        no_new_privs: whether ``PR_SET_NO_NEW_PRIVS`` is set in the child.
        uid: the uid the script runs as, in the host's view (None: unknown, e.g. remote).
        gid: the gid the script runs as, in the host's view.
        layers: the active layers, e.g. ``("no-new-privs", "uid", "landlock", "seccomp",
            "namespaces", "rlimits", "audit-hook")``.
    """

    kind: str
    isolation: str
    available: bool
    reason: str | None = None
    network: bool = True
    filesystem: str = ""
    os_boundary: bool = False
    landlock_abi: int = 0
    seccomp: bool = False
    no_new_privs: bool = False
    uid: int | None = None
    gid: int | None = None
    layers: tuple[str, ...] = attrs.field(default=(), converter=tuple)


register_wire_class(SandboxCapabilities)


@runtime_checkable
class TrustedWorkflowExecutor(Protocol):
    """Runs ``trust="trusted"`` requests. Implementations need not isolate anything."""

    @property
    def kind(self) -> str:
        """Stable executor id reported in results."""
        ...

    async def execute(self, request: WorkflowExecutionRequest) -> WorkflowExecutionResult:
        """Run the request; raise :class:`WorkflowTrustTierError` for any other tier."""
        ...

    async def aclose(self) -> None:
        """Release resources; later ``execute`` calls fail."""
        ...


@runtime_checkable
class SandboxWorkflowExecutor(Protocol):
    """Runs ``trust="untrusted"`` requests (a local process, a container or a remote service)."""

    @property
    def kind(self) -> str:
        """Stable executor id reported in results."""
        ...

    @property
    def isolation(self) -> str:
        """``local-process``, ``container`` or ``remote``."""
        ...

    def capabilities(self) -> SandboxCapabilities:
        """Whether this executor is usable here, and what it isolates."""
        ...

    async def execute(self, request: WorkflowExecutionRequest) -> WorkflowExecutionResult:
        """Run the request; raise :class:`WorkflowTrustTierError` for any other tier."""
        ...

    async def aclose(self) -> None:
        """Kill live children and release resources; later ``execute`` calls fail."""
        ...
