"""A bubblewrap (``bwrap``) sandbox executor (isolation ``container``; spec 04 §2.8, D10).

The same child program and protocol as the local executor, started inside ``bwrap``:

* new PID, network, IPC, UTS and cgroup namespaces, and a user namespace in which the script runs
  as uid/gid 1000, which is an **unprivileged host uid** (``RLIMIT_NPROC`` binds). A root host
  prepares that namespace itself (``--userns``; see :mod:`actoviq.workflow._userns`) and the child
  drops from the namespace's root to 1000 before it reads the script; a host that is not root
  uses ``--unshare-user --uid 1000 --gid 1000 --disable-userns``. Nested user namespaces are off
  either way, and the seccomp filter refuses namespace flags too;
* the seccomp filter of the local executor, loaded by bwrap (``--seccomp FD``), no capabilities,
  ``PR_SET_NO_NEW_PRIVS``, an empty environment, ``--die-with-parent``;
* a read-only root with ``/usr``, the system library directories and the interpreter prefix
  read-only, a fresh ``/proc``, a read-only minimal ``/dev`` (``/dev/shm`` is an empty read-only
  directory), and the workspace as the only writable mount, at its own realpath (the cwd; a
  root host's child enters it after switching to the sandbox uid);
* inside, the child also enters the Landlock domain of the local executor and keeps its rlimits
  and audit hook.

``capabilities()`` probes once whether the sandbox starts here and reports ``available=False``
with the reason when bwrap is missing, the kernel refuses the namespaces, or a layer the
:class:`~actoviq.workflow.SandboxPolicy` requires is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import weakref
from collections.abc import AsyncGenerator, Callable, Generator, Mapping, Sequence
from typing import Final

from actoviq.workflow._landlock import python_prefix
from actoviq.workflow._sandbox import KernelLayers, child_kernel_spec
from actoviq.workflow._userns import INSIDE_ID, create_sandbox_userns
from actoviq.workflow.limits import ProcessResourceLimits, WorkflowExecutorLimits
from actoviq.workflow.local_process import ProcessWorkflowExecutorBase
from actoviq.workflow.policy import SandboxPolicy
from actoviq.workflow.types import CapabilityHandler, SandboxCapabilities

__all__ = ["BubblewrapWorkflowExecutor", "bubblewrap_argv"]

_SYSTEM_DIRS: Final = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_PROBE_TIMEOUT_SECONDS: Final = 10.0


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root + "/") for root in roots)


def _parents(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: index + 1]) for index in range(len(parts))]


def bubblewrap_argv(
    bwrap: str,
    *,
    python: str,
    workspace: str,
    command: list[str],
    userns_fd: int | None = None,
    seccomp_fd: int | None = None,
    sandbox_id: int = INSIDE_ID,
) -> list[str]:
    """The ``bwrap`` command line that runs ``command`` in the sandbox described above.

    Args:
        bwrap: the bubblewrap binary.
        python: the interpreter (its prefix is mounted read-only).
        workspace: the workspace realpath (the only writable mount, and the cwd).
        command: what to run inside.
        userns_fd: a prepared user namespace to join (root host); None creates one with the
            script as ``sandbox_id`` and nested user namespaces disabled.
        seccomp_fd: a descriptor holding the compiled seccomp filter, or None for no filter.
        sandbox_id: the uid/gid of the script inside the user namespace (non-zero).
    """
    argv = [bwrap]
    if userns_fd is not None:
        # bwrap keeps the namespace's root (host root) for its own setup; the child bootstrap
        # switches to the unprivileged id with the two capabilities left to it.
        argv += ["--userns", str(userns_fd), "--cap-drop", "ALL"]
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
        argv += ["--uid", str(sandbox_id), "--gid", str(sandbox_id)]
    argv += [
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--clearenv",
    ]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    argv += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    prefix = python_prefix(python)
    if not _under(prefix, _SYSTEM_DIRS):
        for parent in _parents(prefix):  # bwrap would create them 0700: closed to the script
            if not _under(parent, _SYSTEM_DIRS):
                argv += ["--dir", parent]
        argv += ["--ro-bind", prefix, prefix]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for parent in _parents(workspace):
        if not _under(parent, (*_SYSTEM_DIRS, prefix)):
            argv += ["--dir", parent]
    argv += [
        "--bind",
        workspace,
        workspace,
        "--remount-ro",
        "/dev",
        # bwrap's root is a writable tmpfs: make it read-only so only the workspace bind is rw.
        "--remount-ro",
        "/",
        "--chdir",
        # With a prepared namespace bwrap is its root without capabilities: a workspace lent to
        # the sandbox uid with mode 0700 is closed to it. The child enters it after the switch.
        "/" if userns_fd is not None else workspace,
        "--",
        *command,
    ]
    return argv


@contextlib.contextmanager
def _program_fd(program: bytes | None) -> Generator[int | None]:
    """A fresh descriptor with the seccomp program (bwrap reads it to the end)."""
    if program is None:
        yield None
        return
    fd = os.memfd_create("actoviq-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)


class BubblewrapWorkflowExecutor(ProcessWorkflowExecutorBase):
    """Run untrusted scripts under bubblewrap: namespaces plus the local executor's kernel layers.

    Args:
        limits: protocol limits (§2.3).
        resource_limits: rlimits applied inside the sandbox.
        capabilities: host handlers a run may be granted by name.
        python_executable: the interpreter (its prefix is mounted read-only).
        bwrap_executable: path to ``bwrap`` (default: looked up on ``PATH``).
        audit_hook: keep True; False leaves the kernel layers as the only in-child layers (tests
            use it to show what they contain by themselves).
        sandbox: the kernel layers and which are required (default: all required).

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
        sandbox: SandboxPolicy | None = None,
    ) -> None:
        super().__init__(
            limits=limits,
            resource_limits=resource_limits,
            capabilities=capabilities,
            python_executable=python_executable,
            audit_hook=audit_hook,
            sandbox=sandbox,
        )
        self._bwrap = bwrap_executable or shutil.which("bwrap")
        self._status: SandboxCapabilities | None = None
        self._userns_fd: int | None = None
        self._release_userns: Callable[[], object] | None = None

    def capabilities(self) -> SandboxCapabilities:
        """Probe (once, synchronously, tens of milliseconds) whether the sandbox starts here."""
        if self._status is None:
            layers = self._kernel_layers()
            problems = list(layers.problems)
            if not problems:
                problem = self._probe(layers)
                if problem is not None:
                    problems.append(problem)
            uid, gid = layers.drop if layers.drop is not None else (os.geteuid(), os.getegid())
            self._status = SandboxCapabilities(
                kind=self.kind,
                isolation=self.isolation,
                available=not problems,
                reason="; ".join(problems) or None,
                network=False,
                filesystem=(
                    "read-only /usr, system libraries and interpreter prefix; the workspace is "
                    "the only writable mount; host files elsewhere are not mounted"
                ),
                os_boundary=True,
                landlock_abi=layers.landlock_abi,
                seccomp=layers.seccomp_program is not None,
                no_new_privs=True,
                uid=uid,
                gid=gid,
                layers=["namespaces", *self._layer_names(layers)],
            )
        return self._status

    def _ensure_userns(self, layers: KernelLayers) -> int | None:
        if layers.drop is None:
            return None
        if self._userns_fd is None:
            self._userns_fd = create_sandbox_userns(self._python, *layers.drop)
            self._release_userns = weakref.finalize(self, os.close, self._userns_fd)
        return self._userns_fd

    def _probe(self, layers: KernelLayers) -> str | None:
        if self._bwrap is None:
            return "bwrap is not installed (apt-get install bubblewrap)."
        try:
            userns = self._ensure_userns(layers)
        except OSError as error:
            return f"cannot prepare the sandbox user namespace: {error}"
        with (
            tempfile.TemporaryDirectory(prefix="actoviq-bwrap-probe-") as workspace,
            _program_fd(layers.seccomp_program) as seccomp,
        ):
            real = os.path.realpath(workspace)
            argv = bubblewrap_argv(
                self._bwrap,
                python=self._python,
                workspace=real,
                command=[self._python, "-I", "-S", "-c", "pass"],
                userns_fd=userns,
                seccomp_fd=seccomp,
            )
            fds = tuple(fd for fd in (userns, seccomp) if fd is not None)
            try:
                completed = subprocess.run(
                    argv,
                    env={},
                    capture_output=True,
                    timeout=_PROBE_TIMEOUT_SECONDS,
                    check=False,
                    pass_fds=fds,
                )
            except (OSError, subprocess.TimeoutExpired) as error:
                return f"bwrap could not run: {error}."
        if completed.returncode != 0:
            detail = completed.stderr.decode("utf-8", errors="replace").strip()[:500]
            return f"bwrap failed (exit {completed.returncode}): {detail}"
        return None

    @contextlib.asynccontextmanager
    async def _child(self, workspace: str) -> AsyncGenerator[tuple[list[str], tuple[int, ...]]]:
        assert self._bwrap is not None
        layers = self._kernel_layers()
        userns = self._ensure_userns(layers)
        inside = (INSIDE_ID, INSIDE_ID) if layers.drop is not None else None
        async with self._lent(workspace, layers.drop):
            with (
                child_kernel_spec(
                    layers,
                    python=self._python,
                    workspace=workspace,
                    inside_uid=inside,
                    isolate_mounts=False,
                    load_seccomp=False,
                ) as kernel,
                _program_fd(layers.seccomp_program) as seccomp,
            ):
                argv = bubblewrap_argv(
                    self._bwrap,
                    python=self._python,
                    workspace=workspace,
                    command=self._python_argv(workspace, kernel.spec),
                    userns_fd=userns,
                    seccomp_fd=seccomp,
                )
                extra = tuple(fd for fd in (userns, seccomp) if fd is not None)
                yield argv, (*kernel.pass_fds, *extra)

    async def aclose(self) -> None:
        """Refuse new runs, kill live sandboxes and release the prepared user namespace."""
        await super().aclose()
        if self._release_userns is not None:
            self._release_userns()

    async def __aenter__(self) -> BubblewrapWorkflowExecutor:
        return self
