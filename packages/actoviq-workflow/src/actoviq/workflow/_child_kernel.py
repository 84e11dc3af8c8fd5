"""Child side of the kernel layers: a small ctypes layer the bootstrap applies first.

It covers prctl, unshare, mount, Landlock and seccomp, before any untrusted byte is read.

Why ctypes: the child is ``python -I -S`` (no site-packages), so it cannot import the Landlock and
seccomp bindings the host uses; the host builds the Landlock ruleset (``landlockpy``) and compiles
the seccomp filter (``pyseccomp`` over libseccomp) and the child only *enforces* them, which takes
five system calls that the standard library does not expose. The text of this module is prepended
to the bootstrap program (it is also importable, for its own tests). Standard library only.

Order (``apply_kernel_layers``): private mount namespace with the workspace and interpreter made
reachable (only when a root host drops privileges and their parent directories are closed to the
sandbox uid), then setgroups/setresgid/setresuid, the workspace as cwd (``enter``, as the sandbox
uid), ``PR_SET_NO_NEW_PRIVS``, Landlock, seccomp.
"""
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportMissingParameterType=false
# pyright: reportUnknownParameterType=false

import ctypes
import os

_PR_SET_PDEATHSIG = 1
_SIGKILL = 9
_PR_SET_SECCOMP = 22
_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_NO_NEW_PRIVS = 39
_SECCOMP_MODE_FILTER = 2
_SYS_LANDLOCK_RESTRICT_SELF = 446  # the same number on every architecture
_CLONE_NEWNS = 0x00020000
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _check(result, what):
    if result == -1:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")
    return result


def isolate_mounts(hide, binds):
    """Private mount namespace; tmpfs over each ``hide`` point; each path in ``binds`` put back.

    ``hide`` are the top-most directories the sandbox uid cannot traverse above the workspace or
    the interpreter; ``binds`` are the paths that must stay reachable at their own place. They are
    opened inside the new namespace (a mount of another namespace cannot be bound) before the
    tmpfs covers them. Nothing propagates back to the host (``MS_PRIVATE``).
    """
    libc = _libc()
    _check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "mount / private")
    held = [(os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC), path) for path in binds]
    try:
        for point in hide:
            _check(
                libc.mount(
                    b"tmpfs",
                    os.fsencode(point),
                    b"tmpfs",
                    _MS_NOSUID | _MS_NODEV,
                    b"mode=0755,size=65536",
                ),
                f"mount tmpfs on {point}",
            )
        previous = os.umask(0o022)
        try:
            for fd, path in held:
                os.makedirs(path, mode=0o755, exist_ok=True)
                source = os.fsencode(f"/proc/self/fd/{fd}")
                _check(
                    libc.mount(source, os.fsencode(path), None, _MS_BIND | _MS_REC, None),
                    f"bind {path}",
                )
        finally:
            os.umask(previous)
    finally:
        for fd, _ in held:
            os.close(fd)


def drop_privileges(uid, gid):
    """Leave root for ``uid``/``gid`` with no supplementary groups (all capabilities drop)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise OSError(1, "privilege drop did not take effect")


def set_no_new_privs():
    """``PR_SET_NO_NEW_PRIVS``: execve can never grant privileges again (setuid, file caps)."""
    libc = _libc()
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(_PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1:
        raise OSError(1, "no_new_privs did not take effect")


def restrict_landlock(ruleset_fd):
    """Enforce the host-built Landlock ruleset on this process (and every child it makes)."""
    try:
        _check(
            _libc().syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset_fd, 0), "landlock_restrict_self"
        )
    finally:
        os.close(ruleset_fd)


def load_seccomp(program):
    """Install a compiled classic-BPF seccomp filter (needs no_new_privs first)."""
    if not program or len(program) % 8:
        raise ValueError("a seccomp program is a non-empty array of 8-byte instructions")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = _libc()
    _check(
        libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0),
        "prctl(PR_SET_SECCOMP)",
    )


def die_with_parent(parent):
    """SIGKILL this process when the host that started it (pid ``parent``) dies.

    Without it a script that only sleeps outlives a host that crashed or was killed (the host's
    deadline and group kill die with it). Set after the uid switch, which clears the setting.
    """
    _check(_libc().prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:  # the host died before the setting took effect
        raise OSError(3, "the host exited while the sandbox was being set up")


def apply_kernel_layers(spec):
    """Apply the layers the host described (``sandbox`` in the bootstrap configuration)."""
    mounts = spec.get("mounts")
    if mounts:
        isolate_mounts(mounts["hide"], mounts["binds"])
    chdir = spec.get("chdir")
    if chdir:
        os.chdir(chdir)
    drop = spec.get("drop")
    if drop:
        drop_privileges(drop[0], drop[1])
    enter = spec.get("enter")
    if enter:
        # Entered as the sandbox uid: the workspace is lent to it and may be closed to others
        # (0700), and bubblewrap's namespace root has no capability to bypass that.
        os.chdir(enter)
        if "PWD" in os.environ:
            os.environ["PWD"] = enter
    set_no_new_privs()
    landlock_fd = spec.get("landlockFd")
    if landlock_fd is not None:
        restrict_landlock(landlock_fd)
    program = spec.get("seccomp")
    if program:
        load_seccomp(bytes.fromhex(program))
