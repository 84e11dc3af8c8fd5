"""Which kernel layers the process executors put around a child, and which ones they require.

The untrusted executors are a kernel boundary (decision D10): each child runs with
``PR_SET_NO_NEW_PRIVS``, under an unprivileged uid when the host is root, inside a Landlock domain
and behind a seccomp filter. :class:`SandboxPolicy` says which of those layers must be present.
A ``"required"`` layer that this machine cannot provide makes the executor refuse to run
(:class:`~actoviq.workflow.WorkflowConfigurationError` with the reason) instead of silently running
weaker; ``"best-effort"`` uses the layer when it is there; ``"off"`` never uses it. The weaker
modes are an explicit choice of the host.
"""

from __future__ import annotations

import grp
import pwd
from typing import Final, Literal, TypeAlias

import attrs

from actoviq.workflow.errors import WorkflowConfigurationError

__all__ = ["MIN_LANDLOCK_ABI", "LayerMode", "SandboxPolicy", "resolve_sandbox_user"]

LayerMode: TypeAlias = Literal["required", "best-effort", "off"]
"""Whether a sandbox layer is required, used when available, or off."""
_MODES: Final = ("required", "best-effort", "off")

MIN_LANDLOCK_ABI: Final = 6
"""The Landlock ABI a ``"required"`` Landlock layer needs: filesystem rules (ABI 1), truncate
(3), TCP bind/connect (4), device ioctls (5), and scoped signals and abstract unix sockets (6)."""


def _mode(_instance: object, attribute: attrs.Attribute[LayerMode], value: object) -> None:
    if value not in _MODES:
        raise WorkflowConfigurationError(
            f"SandboxPolicy.{attribute.name} must be one of {', '.join(_MODES)}; got {value!r}."
        )


def _check_identity(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise WorkflowConfigurationError(f"SandboxPolicy.{name} must be a name or a numeric id.")
    if isinstance(value, int) and not 0 < value < 2**32 - 1:
        raise WorkflowConfigurationError(
            f"SandboxPolicy.{name} must be a non-root id; got {value}."
        )
    if isinstance(value, str) and not value:
        raise WorkflowConfigurationError(f"SandboxPolicy.{name} must not be empty.")


def _user(_instance: object, _attribute: attrs.Attribute[str | int], value: object) -> None:
    _check_identity("user", value)


def _group(_instance: object, _attribute: attrs.Attribute[str | int | None], value: object) -> None:
    if value is not None:
        _check_identity("group", value)


@attrs.frozen(kw_only=True)
class SandboxPolicy:
    """The kernel layers of the process executors.

    Used by :class:`~actoviq.workflow.LocalIsolatedProcessWorkflowExecutor` and
    :class:`~actoviq.workflow.BubblewrapWorkflowExecutor`.
    ``PR_SET_NO_NEW_PRIVS`` is always set (it needs no privilege and cannot be missing).

    Attributes:
        landlock: the Landlock domain (read-only interpreter and system libraries, read-write
            workspace, no TCP bind/connect, signals and abstract unix sockets scoped to the
            sandbox). ``"required"`` needs Landlock ABI >= :data:`MIN_LANDLOCK_ABI`.
        seccomp: the seccomp filter (no ptrace, process_vm_*, pidfd_*, namespaces, mounts,
            sockets other than ``AF_UNIX`` stream pairs, mknod, kexec, bpf, keyctl, io_uring...;
            priority, scheduler and rlimit changes only on the child itself). Needs libseccomp
            (``apt-get install libseccomp2``).
        privilege_drop: when the host runs as root, switch the child to ``user``/``group`` so
            ``RLIMIT_NPROC`` binds and file permissions apply. ``"off"`` keeps root (weaker).
            A host that is not root already runs children unprivileged.
        user: the sandbox user (name or uid; default ``nobody``). Processes of one uid share
            ``RLIMIT_NPROC`` and may signal each other outside Landlock: give each tenant its
            own uid when several run at once.
        group: the sandbox group (name or gid); None uses the user's primary group.
        lend_workspace: when the child runs under another uid, chown the workspace tree to it
            for the run and give it back afterwards (files the script created go to the
            workspace owner). Files with more than one hard link are never lent. With False the
            host must make the workspace writable for that uid itself.

    Example:
        >>> SandboxPolicy(seccomp="best-effort").landlock
        'required'
    """

    landlock: LayerMode = attrs.field(default="required", validator=_mode)
    seccomp: LayerMode = attrs.field(default="required", validator=_mode)
    privilege_drop: LayerMode = attrs.field(default="required", validator=_mode)
    user: str | int = attrs.field(default="nobody", validator=_user)
    group: str | int | None = attrs.field(default=None, validator=_group)
    lend_workspace: bool = True


def resolve_sandbox_user(policy: SandboxPolicy) -> tuple[int, int]:
    """The ``(uid, gid)`` of the policy's sandbox user.

    Raises:
        WorkflowConfigurationError: the user or group does not exist here, or resolves to root.
    """
    if isinstance(policy.user, int):
        uid = policy.user
        try:
            primary: int | None = pwd.getpwuid(uid).pw_gid
        except KeyError:
            primary = None
    else:
        try:
            entry = pwd.getpwnam(policy.user)
        except KeyError:
            raise WorkflowConfigurationError(
                f"Sandbox user {policy.user!r} does not exist on this machine; set "
                "SandboxPolicy(user=<name or uid>)."
            ) from None
        uid, primary = entry.pw_uid, entry.pw_gid
    if policy.group is None:
        if primary is None:
            raise WorkflowConfigurationError(
                f"Sandbox uid {uid} has no passwd entry; set SandboxPolicy(group=<gid>)."
            )
        gid = primary
    elif isinstance(policy.group, int):
        gid = policy.group
    else:
        try:
            gid = grp.getgrnam(policy.group).gr_gid
        except KeyError:
            raise WorkflowConfigurationError(
                f"Sandbox group {policy.group!r} does not exist on this machine."
            ) from None
    if uid == 0 or gid == 0:
        raise WorkflowConfigurationError("The sandbox user and group must not be root.")
    return uid, gid
