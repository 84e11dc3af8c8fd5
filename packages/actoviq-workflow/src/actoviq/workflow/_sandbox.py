"""Host side of the kernel layers: what this machine provides for a policy, and per-run setup.

:func:`probe_kernel_layers` runs once per executor: the Landlock ABI, the compiled seccomp
filter, the sandbox uid/gid when the host is root, and the list of *required* layers that are
missing (the executor then refuses to run, fail closed). :func:`child_kernel_spec` prepares one
run: the Landlock ruleset descriptor, the mount plan that keeps the workspace and the interpreter
reachable for the sandbox uid, and the ``sandbox`` section of the bootstrap configuration.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Generator, Sequence
from typing import Any

import attrs

from actoviq.workflow._landlock import build_ruleset, landlock_abi, python_prefix
from actoviq.workflow._seccomp import SeccompUnavailableError, seccomp_program
from actoviq.workflow.errors import WorkflowConfigurationError
from actoviq.workflow.policy import MIN_LANDLOCK_ABI, SandboxPolicy, resolve_sandbox_user

__all__ = [
    "ChildKernel",
    "KernelLayers",
    "MountPlan",
    "child_kernel_spec",
    "mount_plan",
    "probe_kernel_layers",
]


@attrs.frozen(kw_only=True)
class KernelLayers:
    """What this machine provides for a policy.

    Attributes:
        policy: the policy probed.
        landlock_abi: the ABI the child enforces (0: no Landlock layer).
        seccomp_program: the compiled filter (None: no seccomp layer).
        drop: the sandbox ``(uid, gid)`` when the host is root and drops privileges.
        host_uid: the host's effective uid.
        problems: required layers this machine cannot provide (non-empty: refuse to run).
    """

    policy: SandboxPolicy
    landlock_abi: int
    seccomp_program: bytes | None
    drop: tuple[int, int] | None
    host_uid: int
    problems: tuple[str, ...]

    @property
    def child_uid(self) -> int:
        """The uid the script runs as (in the host's user namespace)."""
        return self.drop[0] if self.drop is not None else self.host_uid


def probe_kernel_layers(policy: SandboxPolicy) -> KernelLayers:
    """Find out which layers of ``policy`` this machine provides (no process is started)."""
    problems: list[str] = []
    abi = landlock_abi() if policy.landlock != "off" else 0
    if policy.landlock == "required" and abi < MIN_LANDLOCK_ABI:
        problems.append(
            "Landlock is not available (kernel older than 5.13 or landlock not in the LSM list)"
            if abi == 0
            else f"Landlock ABI {abi} lacks signal and abstract-socket scoping "
            f"(ABI {MIN_LANDLOCK_ABI}, Linux 6.12)"
        )
    program: bytes | None = None
    if policy.seccomp != "off":
        try:
            program = seccomp_program()
        except SeccompUnavailableError as error:
            if policy.seccomp == "required":
                problems.append(f"seccomp is not available: {error}")
    host_uid = os.geteuid()
    drop: tuple[int, int] | None = None
    if host_uid == 0 and policy.privilege_drop != "off":
        try:
            drop = resolve_sandbox_user(policy)
        except WorkflowConfigurationError as error:
            if policy.privilege_drop == "required":
                problems.append(error.message)
    return KernelLayers(
        policy=policy,
        landlock_abi=abi,
        seccomp_program=program,
        drop=drop,
        host_uid=host_uid,
        problems=tuple(problems),
    )


def _traversable(info: os.stat_result, uid: int, gid: int) -> bool:
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == gid:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def _closed_ancestor(path: str, uid: int, gid: int) -> str | None:
    """The top-most strict ancestor of ``path`` (not ``/``) that ``uid`` cannot traverse."""
    if not _traversable(os.stat("/"), uid, gid):
        raise WorkflowConfigurationError(f"The sandbox uid {uid} cannot traverse /.")
    current = ""
    for part in path.strip("/").split("/")[:-1]:
        current += "/" + part
        if not _traversable(os.stat(current), uid, gid):
            return current
    return None


@attrs.frozen
class MountPlan:
    """Directories to cover with an empty tmpfs, and paths to bind back at their own place.

    The child opens the paths itself, as root, inside its new mount namespace.
    """

    hide: tuple[str, ...]
    binds: tuple[str, ...]


def mount_plan(paths: Sequence[str], uid: int, gid: int) -> MountPlan:
    """Keep every path in ``paths`` reachable for ``uid``/``gid`` by its own absolute path.

    A path below a directory the uid cannot traverse (``/root`` for a pyenv interpreter, pytest's
    ``/tmp/pytest-of-root``) is bound back on top of an empty tmpfs that covers that directory, in
    the child's private mount namespace; everything else under the covered directory disappears
    from the child's view.
    """
    hide: list[str] = []
    binds: list[str] = []
    for path in paths:
        ancestor = _closed_ancestor(path, uid, gid)
        if ancestor is None:
            continue
        binds.append(path)
        if not any(ancestor == done or ancestor.startswith(done + "/") for done in hide):
            hide = [done for done in hide if not done.startswith(ancestor + "/")]
            hide.append(ancestor)
    return MountPlan(
        hide=tuple(sorted(hide)),
        binds=tuple(sorted(set(binds), key=lambda path: (len(path), path))),
    )


@attrs.frozen(kw_only=True)
class ChildKernel:
    """One run's kernel setup: the bootstrap's ``sandbox`` section and the descriptors to pass."""

    spec: dict[str, Any]
    pass_fds: tuple[int, ...]


def _readable_dir(path: str, uid: int, gid: int) -> bool:
    info = os.stat(path)
    if info.st_uid == uid:
        return info.st_mode & 0o500 == 0o500
    if info.st_gid == gid:
        return info.st_mode & 0o050 == 0o050
    return info.st_mode & 0o005 == 0o005


@contextlib.contextmanager
def child_kernel_spec(
    layers: KernelLayers,
    *,
    python: str,
    workspace: str,
    inside_uid: tuple[int, int] | None = None,
    isolate_mounts: bool = True,
    load_seccomp: bool = True,
) -> Generator[ChildKernel]:
    """Prepare the kernel layers of one run; descriptors are closed when the block exits.

    Args:
        layers: the probed layers.
        python: the child's interpreter.
        workspace: the workspace realpath.
        inside_uid: the ``(uid, gid)`` the child switches to when it differs from the sandbox
            ids in the host's view (bubblewrap's user namespace maps it).
        isolate_mounts: plan a private mount namespace when paths are closed to the uid (the
            local executor; bubblewrap builds its own file system view). Without it the child
            enters the workspace only after switching to the sandbox uid (``enter``).
        load_seccomp: the child loads the filter itself (bubblewrap loads it with ``--seccomp``).

    Raises:
        WorkflowConfigurationError: the interpreter is not readable by the sandbox uid.
    """
    spec: dict[str, Any] = {}
    fds: list[int] = []
    try:
        if layers.drop is not None:
            uid, gid = layers.drop
            prefix = python_prefix(python)
            if not _readable_dir(prefix, uid, gid):
                raise WorkflowConfigurationError(
                    f"The interpreter prefix {prefix} is not readable by the sandbox uid {uid}; "
                    "make it world-readable or pass python_executable=."
                )
            if isolate_mounts:
                spec["chdir"] = workspace
                plan = mount_plan([workspace, prefix], uid, gid)
                if plan.hide:
                    spec["mounts"] = {"hide": list(plan.hide), "binds": list(plan.binds)}
            else:
                spec["enter"] = workspace  # bubblewrap starts the child in /
            spec["drop"] = list(inside_uid or layers.drop)
        if layers.landlock_abi:
            with build_ruleset(
                abi=layers.landlock_abi, python=python, workspace=workspace
            ) as rules:
                fd = os.dup(rules.fileno())
            fds.append(fd)
            spec["landlockFd"] = fd
        if load_seccomp and layers.seccomp_program is not None:
            spec["seccomp"] = layers.seccomp_program.hex()
        yield ChildKernel(spec=spec, pass_fds=tuple(fds))
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
