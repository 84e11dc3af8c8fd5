"""The seccomp policy of the untrusted children, compiled with libseccomp (through ``pyseccomp``).

One deny-list filter, compiled once per process to a classic BPF program, is used by both process
executors: the local child loads it itself (after ``PR_SET_NO_NEW_PRIVS``), bubblewrap receives
it with ``--seccomp FD``. Default action: allow; the calls below fail with ``EPERM`` (``clone3``
with ``ENOSYS`` so the C library falls back to ``clone``, whose flags the filter can see). The
filter is built for the native architecture only: libseccomp kills a process that makes a call
through another ABI (i386 ``int 0x80``, x32), so those cannot bypass the list.
"""

from __future__ import annotations

import errno
import functools
import os
from typing import Final

__all__ = [
    "CLONE_NAMESPACE_FLAGS",
    "DENIED_SYSCALLS",
    "SELF_ONLY_SYSCALLS",
    "SeccompUnavailableError",
    "seccomp_program",
]

DENIED_SYSCALLS: Final = (
    # other processes' memory and identity
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "kcmp",
    "pidfd_open",
    "pidfd_getfd",
    "pidfd_send_signal",
    "ioprio_set",
    "migrate_pages",
    "move_pages",
    # leaving the process group the host kills as a whole on every settle
    "setsid",
    "setpgid",
    # device nodes and FIFOs
    "mknod",
    "mknodat",
    # namespaces and mounts
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    # the network (socketpair is allowed below for AF_UNIX stream pairs only)
    "socket",
    # kernel, keys, modules, clocks, tracing
    "kexec_load",
    "kexec_file_load",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "iopl",
    "ioperm",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
    "vhangup",
    "syslog",
    "name_to_handle_at",
    "open_by_handle_at",
    "fanotify_init",
    "personality",
    "memfd_secret",
    "uselib",
    "modify_ldt",
    # io_uring performs socket/open operations the filter would not see
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
)
"""Calls refused whatever their arguments."""

SELF_ONLY_SYSCALLS: Final = (
    "sched_setscheduler",
    "sched_setparam",
    "sched_setattr",
    "sched_setaffinity",
    "prlimit64",
)
"""Calls allowed only with pid 0 (the caller itself) as first argument."""

CLONE_NAMESPACE_FLAGS: Final = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)

_AF_UNIX: Final = 1
_SOCK_DGRAM: Final = 2
_SOCK_TYPE_MASK: Final = 0xF
_TIOCSTI: Final = 0x5412
_TIOCLINUX: Final = 0x541C


class SeccompUnavailableError(Exception):
    """The filter cannot be built or loaded here; ``str()`` says why and what to install."""


def _kernel_supports_seccomp() -> bool:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            return any(line.startswith("Seccomp:") for line in status)
    except OSError:
        return False


@functools.cache
def seccomp_program() -> bytes:
    """The compiled filter (an array of ``struct sock_filter``), built once per process.

    Raises:
        SeccompUnavailableError: no kernel seccomp, or libseccomp / pyseccomp missing.
    """
    if not _kernel_supports_seccomp():
        raise SeccompUnavailableError("the kernel has no seccomp filter support.")
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError, OSError) as error:
        raise SeccompUnavailableError(
            f"libseccomp is not usable ({error}); install it with apt-get install libseccomp2."
        ) from None
    deny = sc.ERRNO(errno.EPERM)
    arch = sc.Arch.NATIVE
    known = [name for name in DENIED_SYSCALLS if sc.resolve_syscall(arch, name) >= 0]
    try:
        sandbox = sc.SyscallFilter(sc.ALLOW)
        for name in known:
            sandbox.add_rule(deny, name)
        for name in SELF_ONLY_SYSCALLS:
            sandbox.add_rule(deny, name, sc.Arg(0, sc.NE, 0))
        # setpriority(which, who, prio): only PRIO_PROCESS for the caller itself.
        sandbox.add_rule(deny, "setpriority", sc.Arg(0, sc.NE, 0))
        sandbox.add_rule(deny, "setpriority", sc.Arg(1, sc.NE, 0))
        sandbox.add_rule(deny, "socketpair", sc.Arg(0, sc.NE, _AF_UNIX))
        sandbox.add_rule(deny, "socketpair", sc.Arg(1, sc.MASKED_EQ, _SOCK_TYPE_MASK, _SOCK_DGRAM))
        for flag in CLONE_NAMESPACE_FLAGS:
            sandbox.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
        sandbox.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
        for request in (_TIOCSTI, _TIOCLINUX):
            sandbox.add_rule(deny, "ioctl", sc.Arg(1, sc.EQ, request))
        with os.fdopen(os.memfd_create("actoviq-seccomp", os.MFD_CLOEXEC), "w+b") as buffer:
            sandbox.export_bpf(buffer)
            buffer.seek(0)
            program = buffer.read()
    except OSError as error:
        raise SeccompUnavailableError(f"libseccomp could not build the filter: {error}.") from None
    if not program or len(program) % 8:
        raise SeccompUnavailableError("libseccomp produced an empty or malformed filter.")
    return program
