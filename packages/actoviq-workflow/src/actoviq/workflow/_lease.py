"""Lend a workspace to the sandbox uid for a run, and give it back afterwards.

A root host drops its children to an unprivileged uid, which cannot write a workspace the host
created. For the run, every directory and file of the workspace is chowned to the sandbox uid
(never following symlinks, never a file with more than one hard link, which might be shared with
a file outside); afterwards the recorded owners are restored and whatever the script created goes
to the workspace's owner. Concurrent runs on one workspace share one lease (reference counted);
it is given back when the last of them ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import stat
import threading
from collections.abc import AsyncGenerator, Callable
from typing import Final

import attrs

from actoviq.workflow.errors import WorkflowConfigurationError

__all__ = ["SHARED_DIRECTORIES", "SYSTEM_TREES", "check_lendable", "lend_workspace"]


@attrs.define
class _Lease:
    uid: int
    gid: int
    owner: tuple[int, int]
    owners: dict[tuple[int, int], tuple[int, int]]
    count: int = 1


_leases: dict[str, _Lease] = {}
_lock = threading.Lock()


def _mount_points_below(root: str) -> frozenset[str]:
    """Mount points strictly below ``root`` (bind mounts keep ``st_dev``, so ask the kernel)."""
    prefix = root.rstrip("/") + "/"
    found: set[str] = set()
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as table:
            for line in table:
                fields = line.split(" ")
                if len(fields) > 4:
                    point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
                    if point.startswith(prefix):
                        found.add(point)
    except OSError:
        pass
    return frozenset(found)


_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _step(fd: int, name: str) -> int:
    """Open directory ``name`` (or ``..``) relative to ``fd`` without following a symlink."""
    return os.open(name, _DIR_FLAGS, dir_fd=fd)


def _walk(root: str, visit: Callable[[int | None, str, os.stat_result], None]) -> None:
    """Call ``visit(dir_fd, name, info)`` for the root (dir_fd None) and every entry below it.

    Never follows symlinks and never descends into anything mounted below the root. Iterative,
    with one open directory at a time (a cursor moved with ``..`` and child names): a script can
    leave a tree thousands of levels deep, which ``os.fwalk`` (recursive) could not walk, and
    holding a descriptor per level could exhaust the host's descriptors. The walk runs when no
    process of the sandbox is alive, so the tree does not change under it.
    """
    top = os.stat(root, follow_symlinks=False)
    mounts = _mount_points_below(root)
    visit(None, root, top)
    fd = os.open(root, _DIR_FLAGS)
    current: list[str] = []  # where fd is, as names below the root
    # Depth-first: an entry (depth, name) is a child of current[:depth] when it is popped.
    pending: list[tuple[int, str]] = []
    entered = True
    try:
        while True:
            if entered:
                base = "/".join((root.rstrip("/"), *current)) if mounts else ""
                with os.scandir(fd) as listing:
                    names = sorted(item.name for item in listing)
                for entry in names:
                    try:
                        info = os.stat(entry, dir_fd=fd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if stat.S_ISDIR(info.st_mode):
                        if info.st_dev != top.st_dev or (mounts and f"{base}/{entry}" in mounts):
                            continue  # another mount: not part of the workspace's tree
                        pending.append((len(current), entry))
                    visit(fd, entry, info)
            if not pending:
                return
            depth, name = pending.pop()
            while len(current) > depth:
                parent = _step(fd, "..")
                os.close(fd)
                fd = parent
                current.pop()
            try:
                child = _step(fd, name)
            except OSError:
                entered = False  # gone, or no longer a directory: nothing below it
                continue
            os.close(fd)
            fd = child
            current.append(name)
            entered = True
    finally:
        os.close(fd)


def _lendable(info: os.stat_result) -> bool:
    if stat.S_ISLNK(info.st_mode):
        return False
    return stat.S_ISDIR(info.st_mode) or info.st_nlink == 1


def _chown(dir_fd: int | None, name: str, uid: int, gid: int) -> None:
    os.chown(name, uid, gid, dir_fd=dir_fd, follow_symlinks=False)


def _lend(root: str, uid: int, gid: int) -> _Lease:
    top = os.stat(root, follow_symlinks=False)
    lease = _Lease(uid=uid, gid=gid, owner=(top.st_uid, top.st_gid), owners={})

    def visit(dir_fd: int | None, name: str, info: os.stat_result) -> None:
        if not _lendable(info):
            return
        lease.owners[(info.st_dev, info.st_ino)] = (info.st_uid, info.st_gid)
        if (info.st_uid, info.st_gid) != (uid, gid):
            _chown(dir_fd, name, uid, gid)

    _walk(root, visit)
    return lease


def _give_back(root: str, lease: _Lease) -> None:
    def visit(dir_fd: int | None, name: str, info: os.stat_result) -> None:
        if stat.S_ISLNK(info.st_mode) and info.st_uid == lease.uid:
            _chown(dir_fd, name, *lease.owner)  # a symlink the script made
            return
        original = lease.owners.get((info.st_dev, info.st_ino))
        if original is not None:
            if (info.st_uid, info.st_gid) != original:
                _chown(dir_fd, name, *original)
        elif info.st_uid == lease.uid:
            _chown(dir_fd, name, *lease.owner)

    _walk(root, visit)


SHARED_DIRECTORIES: Final = (
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/media",
    "/mnt",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/srv",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
    "/var/tmp",
    "/dev/shm",
)
"""Never lent (nor any directory that contains one of them or the interpreter)."""

SYSTEM_TREES: Final = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/sbin",
    "/sys",
    "/usr",
)
"""Nothing beneath these is ever lent: a script could plant a file (``/usr/local/bin/x``,
``/etc/cron.d/x``) that the give-back then hands to the workspace's owner, root."""


def check_lendable(root: str, *, protected: tuple[str, ...] = ()) -> None:
    """Refuse a workspace whose tree holds system or shared directories.

    Raises:
        WorkflowConfigurationError: ``root`` is one of :data:`SHARED_DIRECTORIES`, lies beneath
            one of :data:`SYSTEM_TREES`, or contains one of them or a ``protected`` path (the
            interpreter prefix).
    """
    for tree in SYSTEM_TREES:
        if root.startswith(tree + "/"):
            raise WorkflowConfigurationError(
                f"workspaceDir {root} is inside the system directory {tree}: a sandbox workspace "
                "must be a dedicated directory outside the system trees (its whole tree is handed "
                "to the sandbox user for the run)."
            )
    prefix = root.rstrip("/") + "/"
    for path in (*SHARED_DIRECTORIES, *protected):
        if path == root or path.startswith(prefix) or root == "/":
            raise WorkflowConfigurationError(
                f"workspaceDir {root} contains {path}: a sandbox workspace must be a dedicated "
                "directory (its whole tree is handed to the sandbox user for the run)."
            )


def _acquire(root: str, uid: int, gid: int) -> None:
    with _lock:
        lease = _leases.get(root)
        if lease is not None:
            if (lease.uid, lease.gid) != (uid, gid):
                raise WorkflowConfigurationError(
                    f"Workspace {root} is lent to uid {lease.uid} by a running workflow."
                )
            lease.count += 1
            return
        try:
            _leases[root] = _lend(root, uid, gid)
        except OSError as error:
            raise WorkflowConfigurationError(
                f"Could not lend workspace {root} to the sandbox uid {uid}: {error}."
            ) from None


def _release(root: str) -> None:
    with _lock:
        lease = _leases[root]
        lease.count -= 1
        if lease.count:
            return
        del _leases[root]
        with contextlib.suppress(FileNotFoundError):
            _give_back(root, lease)


@contextlib.asynccontextmanager
async def lend_workspace(
    root: str, uid: int, gid: int, *, protected: tuple[str, ...] = ()
) -> AsyncGenerator[None]:
    """Own ``root`` as ``uid``/``gid`` for the duration of the block (see the module docs).

    Raises:
        WorkflowConfigurationError: the workspace holds a system directory or ``protected``
            path, cannot be chowned (e.g. a file system without ownership), or is lent to
            another uid right now.
    """
    check_lendable(root, protected=protected)
    await asyncio.to_thread(_acquire, root, uid, gid)
    try:
        yield
    finally:
        await asyncio.to_thread(_release, root)
