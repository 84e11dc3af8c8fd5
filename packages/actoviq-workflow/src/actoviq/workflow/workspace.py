"""Reading what an untrusted script left in its workspace, safely.

A script controls its workspace: it may leave a symlink to a host secret, a FIFO that blocks the
reader forever, or a path with ``..`` that climbs out. :func:`read_workspace_file` opens only
regular files that lie beneath the workspace, have no other hard link (another name for the
inode may lie outside the workspace), without following any symlink: ``openat2`` with
``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`` where the kernel has it (Linux >= 5.6), otherwise a
component-by-component walk with ``O_NOFOLLOW`` from a descriptor of the workspace. The file is
first opened with ``O_PATH`` (no FIFO or device is ever really opened), checked to be regular,
then reopened for reading through its descriptor.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import Final, cast

from actoviq.workflow._openat2 import (
    RESOLVE_BENEATH,
    RESOLVE_NO_MAGICLINKS,
    RESOLVE_NO_SYMLINKS,
    openat2,
)
from actoviq.workflow.errors import WorkflowConfigurationError, WorkflowWorkspaceError

__all__ = ["DEFAULT_MAX_READ_BYTES", "read_workspace_file"]

DEFAULT_MAX_READ_BYTES: Final = 16 * 1024 * 1024
"""The default limit on a workspace file read (16 MiB)."""
_RESOLVE: Final = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
_PATH_FLAGS: Final = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC


def _refuse(path: str, reason: str, detail: str) -> WorkflowWorkspaceError:
    message = f"Refused to read workspace file {path!r}: {detail}."
    return WorkflowWorkspaceError(path, reason, message)


def _text_path(value: object, name: str) -> str:
    text = value
    if isinstance(value, os.PathLike):
        text = os.fspath(cast("os.PathLike[str]", value))
    if not isinstance(text, str):
        raise WorkflowConfigurationError(f"{name} must be a str or os.PathLike[str] path.")
    return text


def _relative(workspace: str, path: str, shown: str) -> str:
    if "\x00" in path:
        raise _refuse(shown, "outside", "the path contains a NUL byte")
    if os.path.isabs(path):
        lexical = os.path.normpath(path)
        if lexical != workspace and not lexical.startswith(workspace.rstrip("/") + "/"):
            raise _refuse(shown, "outside", "the path is outside the workspace")
        path = os.path.relpath(lexical, workspace)
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts:
        raise _refuse(shown, "not-regular", "the path names the workspace itself")
    if ".." in parts:
        raise _refuse(shown, "outside", "'..' is not allowed")
    return "/".join(parts)


def _error(shown: str, error: OSError) -> WorkflowWorkspaceError:
    if error.errno == errno.ELOOP:
        return _refuse(shown, "symlink", "a component is a symbolic link")
    if error.errno == errno.EXDEV:
        return _refuse(shown, "outside", "it resolves outside the workspace")
    if error.errno in (errno.ENOENT, errno.ENOTDIR):
        return _refuse(shown, "missing", "no such file")
    return _refuse(shown, "unreadable", os.strerror(error.errno or 0) or str(error))


def _walk(root_fd: int, relative: str, shown: str) -> int:
    """The component-by-component fallback: returns an ``O_PATH`` descriptor of the target."""
    parts = relative.split("/")
    current = os.dup(root_fd)
    try:
        for part in parts[:-1]:
            child = os.open(part, _PATH_FLAGS, dir_fd=current)
            kind = os.fstat(child).st_mode
            os.close(current)
            current = child
            if stat.S_ISLNK(kind):
                raise _refuse(shown, "symlink", "a component is a symbolic link")
            if not stat.S_ISDIR(kind):
                raise _refuse(shown, "missing", "no such file")
        return os.open(parts[-1], _PATH_FLAGS, dir_fd=current)
    finally:
        os.close(current)


def read_workspace_file(
    workspace_dir: str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    max_bytes: int = DEFAULT_MAX_READ_BYTES,
) -> bytes:
    """Read a regular file beneath ``workspace_dir`` without following symlinks.

    Args:
        workspace_dir: the workspace (as given to the executor; its realpath is used).
        path: relative to the workspace, or absolute inside it; ``..`` is refused.
        max_bytes: refuse files larger than this.

    Raises:
        WorkflowWorkspaceError: ``reason`` is ``outside``, ``symlink``, ``hard-link`` (the file
            has more than one link), ``not-regular`` (FIFO, socket, device, directory),
            ``missing``, ``too-large`` or ``unreadable``.
        WorkflowConfigurationError: an argument of the wrong type (a bytes path, None, ...).

    Example:
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as ws:
        ...     _ = (pathlib.Path(ws) / "out.txt").write_text("done")
        ...     read_workspace_file(ws, "out.txt")
        b'done'
    """
    shown = _text_path(path, "path")
    workspace = os.path.realpath(_text_path(workspace_dir, "workspace_dir"))
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise WorkflowConfigurationError("max_bytes must be an integer >= 0.")
    relative = _relative(workspace, shown, shown)
    try:
        root_fd = os.open(workspace, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        detail = f"the workspace cannot be opened ({error.strerror})"
        raise _refuse(shown, "missing", detail) from None
    try:
        try:
            target = openat2(root_fd, relative, _PATH_FLAGS, _RESOLVE)
            if target is None:
                target = _walk(root_fd, relative, shown)
        except OSError as error:
            raise _error(shown, error) from None
    finally:
        os.close(root_fd)
    try:
        info = os.fstat(target)
        if stat.S_ISLNK(info.st_mode):
            raise _refuse(shown, "symlink", "it is a symbolic link")
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(shown, "not-regular", "it is not a regular file")
        if info.st_nlink > 1:
            # Another name for the same inode may lie outside the workspace (a host file the
            # script, or an earlier run, linked in): the path alone proves nothing about it.
            raise _refuse(shown, "hard-link", "it has other hard links (the inode may be shared)")
        if info.st_size > max_bytes:
            raise _refuse(shown, "too-large", f"it is larger than {max_bytes} bytes")
        try:
            readable = os.open(f"/proc/self/fd/{target}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as error:
            raise _error(shown, error) from None
    finally:
        os.close(target)
    with contextlib.closing(os.fdopen(readable, "rb")) as handle:
        again = os.fstat(handle.fileno())
        if (again.st_dev, again.st_ino) != (info.st_dev, info.st_ino) or again.st_nlink > 1:
            raise _refuse(shown, "unreadable", "the file changed while it was opened")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _refuse(shown, "too-large", f"it is larger than {max_bytes} bytes")
    return data
