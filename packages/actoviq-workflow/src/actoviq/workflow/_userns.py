"""A user namespace for bubblewrap sandboxes started by a root host.

bubblewrap run by root with ``--unshare-user`` maps the sandbox uid to host root, so the script's
processes are host uid 0 and ``RLIMIT_NPROC`` binds nothing. Instead the host prepares one user
namespace per executor whose map is ``0 -> 0`` (bubblewrap's setup, which must still open the
interpreter and workspace paths as root) and ``1000 -> <sandbox uid>``; bubblewrap joins it with
``--userns FD`` and the child bootstrap switches to uid/gid 1000, which is the unprivileged sandbox
uid on the host. The namespace's ``user.max_user_namespaces`` is set to 0, so nothing inside can
create a nested user namespace (what ``--disable-userns`` does, which bubblewrap does not allow
together with ``--userns``); the seccomp filter refuses ``unshare``/``clone`` namespace flags too.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
from typing import Final

__all__ = ["INSIDE_ID", "create_sandbox_userns"]

INSIDE_ID: Final = 1000
"""The uid and gid of the script inside the namespace (mapped to the sandbox uid/gid)."""

_HELPER: Final = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000) != 0:
    os.write(1, b"E" + str(ctypes.get_errno()).encode())
    raise SystemExit(1)
os.write(1, b"U")
if os.read(0, 1) != b"M":
    raise SystemExit(2)
with open("/proc/sys/user/max_user_namespaces", "w") as sysctl:
    sysctl.write("0")
os.write(1, b"D")
os.read(0, 1)
"""
_TIMEOUT_SECONDS: Final = 10.0


def _expect(process: subprocess.Popen[bytes], token: bytes) -> None:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], _TIMEOUT_SECONDS)
    if not ready:
        raise OSError("the user namespace helper did not answer")
    answer = os.read(process.stdout.fileno(), 16)
    if answer != token:
        detail = answer.decode("ascii", "replace") or "exited"
        raise OSError(f"the user namespace helper failed ({detail})")


def create_sandbox_userns(python: str, uid: int, gid: int) -> int:
    """Create the namespace and return a descriptor of it (close it to let it go).

    Raises:
        OSError: user namespaces are not available, or the maps could not be written.
    """
    process = subprocess.Popen(
        [python, "-I", "-S", "-c", _HELPER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={},
        close_fds=True,
    )
    assert process.stdin is not None
    try:
        _expect(process, b"U")
        for name, inside in (("uid_map", uid), ("gid_map", gid)):
            with open(f"/proc/{process.pid}/{name}", "w", encoding="ascii") as mapping:
                mapping.write(f"0 0 1\n{INSIDE_ID} {inside} 1\n")
        process.stdin.write(b"M")
        process.stdin.flush()
        _expect(process, b"D")
        return os.open(f"/proc/{process.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(timeout=_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
