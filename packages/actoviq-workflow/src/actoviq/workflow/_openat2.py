"""``openat2(2)`` with ``RESOLVE_BENEATH``: a small ctypes wrapper for the host.

The standard library has no ``openat2`` and no maintained binding provides it, so this module
calls the system call (number 437 on every architecture) through libc's ``syscall``. Without it
(Linux < 5.6, or a seccomp policy that returns ``ENOSYS``), :func:`openat2` returns None and the
caller walks the path one component at a time instead.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
from typing import Final

__all__ = [
    "RESOLVE_BENEATH",
    "RESOLVE_NO_MAGICLINKS",
    "RESOLVE_NO_SYMLINKS",
    "openat2",
]

_SYS_OPENAT2: Final = 437
RESOLVE_NO_MAGICLINKS: Final = 0x02
RESOLVE_NO_SYMLINKS: Final = 0x04
RESOLVE_BENEATH: Final = 0x08


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    libc.syscall.restype = ctypes.c_long
    return libc


_missing: list[bool] = []


def openat2(dir_fd: int, path: str, flags: int, resolve: int) -> int | None:
    """Open ``path`` relative to ``dir_fd`` with ``resolve`` restrictions; None if unsupported.

    Raises:
        OSError: the kernel refused (``EXDEV`` escaping the directory, ``ELOOP`` a symlink...).
    """
    libc = _libc()
    if libc is None or _missing:
        return None
    how = _OpenHow(flags | os.O_CLOEXEC, 0, resolve)
    result = int(
        libc.syscall(_SYS_OPENAT2, dir_fd, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how))
    )
    if result >= 0:
        return result
    number = ctypes.get_errno()
    if number in (errno.ENOSYS, errno.EPERM):
        # ENOSYS: a kernel before 5.6; EPERM: a container's seccomp policy refusing the call.
        _missing.append(True)
        return None
    raise OSError(number, os.strerror(number), path)
