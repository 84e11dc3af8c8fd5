"""A bubblewrap (``bwrap``) sandbox executor (isolation ``container``; spec 04 §2.8, §8.3).

The same child program and protocol as the local executor, started inside ``bwrap`` with every
namespace unshared (user, PID, network, IPC, UTS, cgroup), all capabilities dropped, an empty
environment, ``--die-with-parent``, a fresh ``/proc`` and minimal ``/dev``, the system directories
and the interpreter's prefix mounted **read-only**, and the workspace as the only writable bind
(mounted at its own realpath, which is also the cwd). The network namespace has no interfaces but a
down loopback, so the script reaches no network; host processes are invisible in the new PID
namespace; killing the host-side process group takes the whole namespace down.

Not included: a seccomp filter (bwrap supports one, we do not build it) and per-sandbox cgroup
limits; rlimits and the audit hook still apply inside. Availability is probed once per instance:
``capabilities()`` reports ``available=False`` with the reason when ``bwrap`` is missing or the
kernel refuses the namespaces (e.g. unprivileged user namespaces disabled).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from typing import Final

from actoviq.workflow.limits import ProcessResourceLimits, WorkflowExecutorLimits
from actoviq.workflow.local_process import ProcessWorkflowExecutorBase
from actoviq.workflow.types import CapabilityHandler, SandboxCapabilities

__all__ = ["BubblewrapWorkflowExecutor", "bubblewrap_argv"]

_SYSTEM_DIRS: Final = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_PROBE_TIMEOUT_SECONDS: Final = 10.0


def _python_prefix(python: str) -> str:
    real = os.path.realpath(python)
    return os.path.dirname(os.path.dirname(real))


def bubblewrap_argv(bwrap: str, *, python: str, workspace: str, command: list[str]) -> list[str]:
    """The ``bwrap`` command line that runs ``command`` in the sandbox described above."""
    argv = [
        bwrap,
        "--unshare-all",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
        "--clearenv",
    ]
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    argv += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    prefix = _python_prefix(python)
    if not any(prefix == root or prefix.startswith(root + "/") for root in _SYSTEM_DIRS):
        argv += ["--ro-bind", prefix, prefix]
    argv += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--bind",
        workspace,
        workspace,
        # bwrap's root is a writable tmpfs: make it read-only so only the workspace bind is rw.
        "--remount-ro",
        "/",
        "--chdir",
        workspace,
        "--",
        *command,
    ]
    return argv


class BubblewrapWorkflowExecutor(ProcessWorkflowExecutorBase):
    """Run untrusted scripts under bubblewrap: no network, read-only system, writable workspace.

    Args:
        limits: protocol limits (§2.3).
        resource_limits: rlimits applied inside the sandbox.
        capabilities: host handlers a run may be granted by name.
        python_executable: the interpreter (its prefix is mounted read-only).
        bwrap_executable: path to ``bwrap`` (default: looked up on ``PATH``).
        audit_hook: keep True; False leaves the OS sandbox as the only in-child layer (tests
            use it to show what the namespaces alone contain).

    Example:
        >>> status = BubblewrapWorkflowExecutor().capabilities()
        >>> status.available or bool(status.reason)
        True
    """

    kind: str = "bubblewrap"
    isolation: str = "container"

    def __init__(
        self,
        *,
        limits: WorkflowExecutorLimits | None = None,
        resource_limits: ProcessResourceLimits | None = None,
        capabilities: Mapping[str, CapabilityHandler] | None = None,
        python_executable: str | None = None,
        bwrap_executable: str | None = None,
        audit_hook: bool = True,
    ) -> None:
        super().__init__(
            limits=limits,
            resource_limits=resource_limits,
            capabilities=capabilities,
            python_executable=python_executable,
            audit_hook=audit_hook,
        )
        self._bwrap = bwrap_executable or shutil.which("bwrap")
        self._status: SandboxCapabilities | None = None

    def capabilities(self) -> SandboxCapabilities:
        """Probe (once, synchronously, about 10 ms) whether the sandbox starts here."""
        if self._status is None:
            available, reason = self._probe()
            self._status = SandboxCapabilities(
                kind=self.kind,
                isolation=self.isolation,
                available=available,
                reason=reason,
                network=False,
                filesystem=(
                    "read-only /usr and interpreter prefix; the workspace is the only writable "
                    "mount; host files elsewhere are not mounted"
                ),
                os_boundary=True,
            )
        return self._status

    def _probe(self) -> tuple[bool, str | None]:
        if self._bwrap is None:
            return False, "bwrap is not installed (apt-get install bubblewrap)."
        with tempfile.TemporaryDirectory(prefix="actoviq-bwrap-probe-") as workspace:
            real = os.path.realpath(workspace)
            argv = bubblewrap_argv(
                self._bwrap,
                python=self._python,
                workspace=real,
                command=[self._python, "-I", "-S", "-c", "pass"],
            )
            try:
                completed = subprocess.run(
                    argv,
                    env={},
                    capture_output=True,
                    timeout=_PROBE_TIMEOUT_SECONDS,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as error:
                return False, f"bwrap could not run: {error}."
        if completed.returncode != 0:
            detail = completed.stderr.decode("utf-8", errors="replace").strip()[:500]
            return False, f"bwrap failed (exit {completed.returncode}): {detail}"
        return True, None

    def _argv(self, workspace: str) -> list[str]:
        assert self._bwrap is not None
        return bubblewrap_argv(
            self._bwrap,
            python=self._python,
            workspace=workspace,
            command=self._python_argv(workspace),
        )

    async def __aenter__(self) -> BubblewrapWorkflowExecutor:
        return self
