"""The Landlock domain of an untrusted child, built by the host with ``landlockpy``.

The host creates the ruleset (it can open every path it grants, whatever the sandbox uid may
traverse) and hands the ruleset file descriptor to the child, which enforces it on itself with
``landlock_restrict_self`` before any untrusted byte runs. Landlock rules name inodes, so the same
ruleset holds inside bubblewrap's mount namespace, where those directories are bind mounts.

Granted: read on the interpreter prefix, the system library directories, the dynamic loader
cache and the time zone data; read/write on ``/dev/null``, ``/dev/zero`` and ``/dev/full``; read
on ``/dev/urandom``/``/dev/random``; execute on the interpreter binary only; and read/write on the
workspace without symlinks, FIFOs, sockets or device nodes. Everything else the kernel's ABI
handles is denied, including TCP bind/connect (ABI 4) and, from ABI 6, signals to and abstract
unix sockets of processes outside the sandbox.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Final

import landlockpy
from landlockpy import AccessFS, Ruleset, Scope

__all__ = [
    "SYSTEM_READ_PATHS",
    "build_ruleset",
    "elf_interpreter",
    "landlock_abi",
    "python_prefix",
]

SYSTEM_READ_PATHS: Final = (
    "/usr/lib",
    "/usr/lib64",
    "/usr/lib32",
    "/usr/local/lib",
    "/lib",
    "/lib64",
    "/lib32",
    "/usr/share/zoneinfo",
    "/etc/ld.so.cache",
    "/etc/localtime",
)
_READ_WRITE_DEVICES: Final = ("/dev/null", "/dev/zero", "/dev/full")
_READ_DEVICES: Final = ("/dev/urandom", "/dev/random")

_READ: Final = AccessFS.READ_FILE | AccessFS.READ_DIR
_FILE_RIGHTS: Final = (
    AccessFS.EXECUTE
    | AccessFS.WRITE_FILE
    | AccessFS.READ_FILE
    | AccessFS.TRUNCATE
    | AccessFS.IOCTL_DEV
)
_WORKSPACE: Final = (
    AccessFS.READ_FILE
    | AccessFS.READ_DIR
    | AccessFS.WRITE_FILE
    | AccessFS.TRUNCATE
    | AccessFS.MAKE_REG
    | AccessFS.MAKE_DIR
    | AccessFS.REMOVE_FILE
    | AccessFS.REMOVE_DIR
    | AccessFS.REFER
)


def landlock_abi() -> int:
    """The running kernel's Landlock ABI version, 0 when Landlock is unavailable."""
    try:
        return landlockpy.abi_version()
    except OSError:
        return 0


def python_prefix(python: str) -> str:
    """The installation prefix of an interpreter binary (``<prefix>/bin/python3.X``)."""
    return os.path.dirname(os.path.dirname(os.path.realpath(python)))


def elf_interpreter(path: str) -> str | None:
    """The program interpreter (``PT_INTERP``, the dynamic loader) of an ELF executable.

    ``execve`` of a dynamic executable also *executes* its loader, so Landlock must allow both.
    Returns None for a static or non-ELF file.
    """
    try:
        with open(path, "rb") as binary:
            header = binary.read(64)
            if len(header) < 64 or header[:4] != b"\x7fELF" or header[4] != 2:
                return None  # not a 64-bit ELF
            order = "little" if header[5] == 1 else "big"
            table = int.from_bytes(header[32:40], order)
            entry_size = int.from_bytes(header[54:56], order)
            count = int.from_bytes(header[56:58], order)
            for index in range(count):
                binary.seek(table + index * entry_size)
                entry = binary.read(entry_size)
                if int.from_bytes(entry[0:4], order) == 3:  # PT_INTERP
                    offset = int.from_bytes(entry[8:16], order)
                    size = int.from_bytes(entry[32:40], order)
                    binary.seek(offset)
                    return binary.read(size).rstrip(b"\0").decode("utf-8", "replace")
    except OSError:
        return None
    return None


def _grant(ruleset: Ruleset, path: str, access: AccessFS) -> None:
    try:
        is_dir = os.path.isdir(path)
    except OSError:
        return
    if not os.path.exists(path):
        return
    ruleset.allow_path(path, access if is_dir else access & _FILE_RIGHTS)


def build_ruleset(
    *,
    abi: int,
    python: str,
    workspace: str,
    extra_read: Iterable[str] = (),
    system_paths: Sequence[str] = SYSTEM_READ_PATHS,
) -> Ruleset:
    """Create (not enforce) the ruleset for one run; the caller passes ``fileno()`` to the child.

    Raises:
        OSError: the kernel refused the ruleset or a rule (``landlockpy.LandlockError``).
    """
    ruleset = Ruleset(
        handled_fs=landlockpy.fs_for_abi(abi),
        handled_net=landlockpy.net_for_abi(abi),
        scoped=landlockpy.scope_for_abi(abi) & (Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL),
        best_effort=True,
    )
    try:
        for path in (python_prefix(python), *system_paths, *extra_read):
            _grant(ruleset, path, _READ)
        for path in _READ_WRITE_DEVICES:
            _grant(ruleset, path, AccessFS.READ_FILE | AccessFS.WRITE_FILE | AccessFS.TRUNCATE)
        for path in _READ_DEVICES:
            _grant(ruleset, path, AccessFS.READ_FILE)
        executable = os.path.realpath(python)
        _grant(ruleset, executable, AccessFS.READ_FILE | AccessFS.EXECUTE)
        loader = elf_interpreter(executable)
        if loader is not None:
            _grant(ruleset, os.path.realpath(loader), AccessFS.READ_FILE | AccessFS.EXECUTE)
        ruleset.allow_path(workspace, _WORKSPACE)
    except BaseException:
        ruleset.close()
        raise
    return ruleset
