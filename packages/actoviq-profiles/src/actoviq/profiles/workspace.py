"""The ``workspace`` service, the ``workspace.boundary`` middleware and the workspace file tools.

A :class:`WorkspaceRegistry` maps workspace ids to root folders with an access mode. Every path
a tool touches is resolved with :func:`os.path.realpath` (symlinks followed) and must stay under
the root's real path: ``../`` escapes, absolute paths elsewhere and symlinks pointing outside are
refused with :class:`WorkspaceBoundaryError`. Reads then go through actoviq-workflow's
:func:`~actoviq.workflow.read_workspace_file` on the resolved path (``openat2`` with
``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS``: a symlink swapped in after the check is refused, and a
FIFO or device is never opened); writes open the final component with ``O_NOFOLLOW``. A
``read-only`` workspace refuses writes.

The middleware checks the same rules before the call starts (the model gets a ``denied`` result),
and the tools check again when they run (defence in depth: a tool called by an agent without the
middleware is still contained).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Final, Literal, TypeAlias

import attrs

from actoviq.core import JsonObject
from actoviq.profiles.errors import ProfileError
from actoviq.runtime import (
    MiddlewareDefinition,
    RuntimeMiddlewareContext,
    RuntimeTool,
    ToolCallDenied,
    ToolExecutionContext,
    define_middleware,
    tool,
)
from actoviq.workflow import WorkflowWorkspaceError, read_workspace_file

__all__ = [
    "DEFAULT_MAX_READ_BYTES",
    "WORKSPACE_TOOL_NAMES",
    "Workspace",
    "WorkspaceAccess",
    "WorkspaceBoundaryError",
    "WorkspaceRegistry",
    "workspace_boundary_middleware",
    "workspace_tools",
    "write_workspace_file",
]

WorkspaceAccess: TypeAlias = Literal["read-only", "read-write"]
DEFAULT_MAX_READ_BYTES: Final = 1024 * 1024
WORKSPACE_TOOL_NAMES: Final = ("workspace.read", "workspace.write", "workspace.list")
_WRITE_TOOLS: Final = frozenset(
    {"workspace.write", "workspace.shell", "workspace.test", "workspace.git"}
)
"""Tools a read-only workspace (or profile access) refuses: writes and processes."""


class WorkspaceBoundaryError(ProfileError):
    """A workspace boundary violation.

    ``reason`` says which: ``outside`` (a path or symlink escaping the root), ``read-only``,
    ``unknown`` (workspace id) or ``invalid`` (path or registration).
    """

    default_code: ClassVar[str] = "PROFILE_WORKSPACE_DENIED"

    def __init__(self, message: str, *, reason: str, workspace_id: str | None) -> None:
        super().__init__(message, details={"reason": reason, "workspaceId": workspace_id})
        self.reason = reason
        self.workspace_id = workspace_id


@attrs.frozen(kw_only=True, slots=True)
class Workspace:
    """One workspace: its id, the real path of its root and its access mode."""

    id: str
    root: Path
    access: WorkspaceAccess = "read-write"


def _inside(root: Path, candidate: str) -> bool:
    root_text = str(root)
    return candidate == root_text or candidate.startswith(root_text.rstrip(os.sep) + os.sep)


class WorkspaceRegistry:
    """Workspace roots by id (the ``workspace`` service).

    Args:
        workspaces: ``{id: path}`` or ``{id: (path, access)}`` to register up front.
    """

    def __init__(
        self,
        workspaces: Mapping[str, str | os.PathLike[str] | tuple[Any, WorkspaceAccess]]
        | None = None,
    ) -> None:
        self._workspaces: dict[str, Workspace] = {}
        for workspace_id, value in dict(workspaces or {}).items():
            if isinstance(value, tuple):
                if len(value) != 2:
                    raise WorkspaceBoundaryError(
                        f'Workspace "{workspace_id}" must be a path or a (path, access) pair.',
                        reason="invalid",
                        workspace_id=workspace_id if isinstance(workspace_id, str) else None,  # pyright: ignore[reportUnnecessaryIsInstance]
                    )
                self.register(workspace_id, value[0], access=value[1])
            else:
                self.register(workspace_id, value)

    def register(
        self,
        workspace_id: str,
        root: str | os.PathLike[str],
        *,
        access: WorkspaceAccess = "read-write",
    ) -> Workspace:
        """Register (or replace) a workspace; the root must be an existing directory.

        Raises:
            WorkspaceBoundaryError: a blank id, an unknown access mode or a missing root.
        """
        if (
            not isinstance(workspace_id, str)  # pyright: ignore[reportUnnecessaryIsInstance]
            or not workspace_id.strip()
            or "\x00" in workspace_id
        ):
            raise WorkspaceBoundaryError(
                "Workspace id must be a non-empty string without NUL.",
                reason="invalid",
                workspace_id=None,
            )
        if not isinstance(root, (str, os.PathLike)) or "\x00" in os.fspath(root):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise WorkspaceBoundaryError(
                f'Workspace "{workspace_id}" root must be a path (str or os.PathLike) without '
                f"NUL; got {type(root).__name__}.",
                reason="invalid",
                workspace_id=workspace_id,
            )
        if access not in ("read-only", "read-write"):
            raise WorkspaceBoundaryError(
                f"Workspace access must be read-only or read-write; got {access!r}.",
                reason="invalid",
                workspace_id=workspace_id,
            )
        real = Path(os.path.realpath(root))
        if not real.is_dir():
            raise WorkspaceBoundaryError(
                f'Workspace "{workspace_id}" root is not a directory.',
                reason="invalid",
                workspace_id=workspace_id,
            )
        workspace = Workspace(id=workspace_id, root=real, access=access)
        self._workspaces[workspace_id] = workspace
        return workspace

    def get(self, workspace_id: str | None) -> Workspace:
        """The workspace with that id.

        Raises:
            WorkspaceBoundaryError: no id, or an unknown one (``reason`` ``"unknown"``).
        """
        workspace = self._workspaces.get(workspace_id) if workspace_id else None
        if workspace is None:
            raise WorkspaceBoundaryError(
                f'Unknown workspace "{workspace_id}".', reason="unknown", workspace_id=workspace_id
            )
        return workspace

    def __contains__(self, workspace_id: object) -> bool:
        return workspace_id in self._workspaces

    def resolve(self, workspace_id: str | None, path: str, *, write: bool = False) -> Path:
        """The real path of ``path`` inside the workspace, checked against the boundary.

        Raises:
            WorkspaceBoundaryError: ``reason`` is ``unknown`` (workspace), ``invalid`` (not a
                non-empty string, or contains NUL), ``outside`` (escapes the root, symlinks
                followed) or ``read-only`` (a write to a read-only workspace).
        """
        workspace = self.get(workspace_id)
        if not isinstance(path, str) or not path or "\x00" in path:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise WorkspaceBoundaryError(
                "Workspace path must be a non-empty string.",
                reason="invalid",
                workspace_id=workspace.id,
            )
        if write and workspace.access != "read-write":
            raise WorkspaceBoundaryError(
                f'Workspace "{workspace.id}" is read-only.',
                reason="read-only",
                workspace_id=workspace.id,
            )
        real = os.path.realpath(os.path.join(workspace.root, path))
        if not _inside(workspace.root, real):
            raise WorkspaceBoundaryError(
                f'Path "{path}" is outside workspace "{workspace.id}".',
                reason="outside",
                workspace_id=workspace.id,
            )
        return Path(real)


def _read(root: Path, path: Path, max_bytes: int) -> JsonObject:
    try:
        data = read_workspace_file(root, os.path.relpath(path, root), max_bytes=max_bytes)
    except WorkflowWorkspaceError as error:
        raise WorkspaceBoundaryError(
            f"Cannot read {os.path.relpath(path, root)!r}: {error.message}",
            reason=error.reason,
            workspace_id=None,
        ) from None
    return {"content": data.decode("utf-8", errors="replace"), "bytes": len(data)}


def _refuse_write(path: str, reason: str, detail: str) -> WorkspaceBoundaryError:
    return WorkspaceBoundaryError(
        f"Cannot write {path!r}: {detail}.", reason=reason, workspace_id=None
    )


def _directory_error(error: OSError, name: str, shown: str) -> Exception:
    if error.errno in (errno.ELOOP, errno.ENOTDIR):
        return _refuse_write(shown, "outside", f"{name!r} is not a directory")
    return error


def _open_directory(parent_fd: int, name: str, shown: str) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, dir_fd=parent_fd)
    except FileNotFoundError:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o755, dir_fd=parent_fd)
    except OSError as error:
        raise _directory_error(error, name, shown) from None
    try:
        return os.open(name, flags, dir_fd=parent_fd)
    except OSError as error:
        raise _directory_error(error, name, shown) from None


def _replace_file(dir_fd: int, name: str, data: bytes, shown: str) -> None:
    try:
        info: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise _refuse_write(shown, "not-regular", "it is not a regular file")
    mode = stat.S_IMODE(info.st_mode) if info is not None else 0o644
    temporary = f".{name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            os.fchmod(handle.fileno(), mode)
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise


def write_workspace_file(root: str | os.PathLike[str], path: str, content: str | bytes) -> int:
    """Create or replace a regular file beneath ``root``, never following a symlink.

    Every directory on the way is opened relative to its parent without following symlinks
    (missing ones are created), so a directory swapped for a symlink after a
    :meth:`WorkspaceRegistry.resolve` check cannot redirect the write outside the root. The
    content goes to a temporary file next to the target, which then replaces the target in one
    rename: a hard link to a file outside the root is replaced, not written through; a reader
    never sees a half-written file; an existing file keeps its permission bits.

    Args:
        root: the workspace root (its real path is used).
        path: relative to the root; ``..`` and absolute paths are refused.
        content: text (written as UTF-8) or bytes.

    Returns:
        The number of bytes written.

    Raises:
        WorkspaceBoundaryError: ``reason`` is ``invalid`` (empty, absolute, ``..`` or NUL),
            ``outside`` (a symlink or non-directory on the way) or ``not-regular`` (the target
            is a directory, FIFO, socket, device or symlink; it is left as it was).
        OSError: the file system refused the write (permissions, space).
    """
    shown = path
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or path.startswith("/") or "\x00" in path or ".." in parts:
        raise _refuse_write(shown, "invalid", "the path must be relative, inside the workspace")
    data = content.encode("utf-8") if isinstance(content, str) else content
    directory = os.open(os.path.realpath(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts[:-1]:
            inner = _open_directory(directory, name, shown)
            os.close(directory)
            directory = inner
        _replace_file(directory, parts[-1], data, shown)
    finally:
        os.close(directory)
    return len(data)


def _write_resolved(root: Path, real: Path, content: str) -> int:
    return write_workspace_file(root, os.path.relpath(real, root), content)


def _list(root: Path, path: Path) -> list[JsonObject]:
    entries: list[JsonObject] = []
    for entry in sorted(os.scandir(path), key=lambda e: e.name):
        kind = "symlink" if entry.is_symlink() else "directory" if entry.is_dir() else "file"
        entries.append(
            {"name": entry.name, "path": os.path.relpath(entry.path, root), "type": kind}
        )
    return entries


def _denied(error: WorkspaceBoundaryError) -> ToolCallDenied:
    return ToolCallDenied(error.message)


def workspace_tools(
    workspaces: WorkspaceRegistry, *, max_read_bytes: int = DEFAULT_MAX_READ_BYTES
) -> tuple[RuntimeTool, ...]:
    """``workspace.read``, ``workspace.write`` and ``workspace.list`` bound to ``workspaces``.

    Each tool uses the run's ``workspace_id``; a boundary violation becomes a tool error the
    model sees (and the file system is not touched).
    """

    @tool(name="workspace.read", effect="read")
    async def read(ctx: ToolExecutionContext, path: str) -> dict[str, Any]:
        """Read a UTF-8 text file of the workspace.

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
            path: the file path, relative to the workspace root.
        """
        real = workspaces.resolve(ctx.workspace_id, path)
        root = workspaces.get(ctx.workspace_id).root
        result = await asyncio.to_thread(_read, root, real, max_read_bytes)
        return {"path": path, **result}

    @tool(name="workspace.write", effect="idempotent-write")
    async def write(ctx: ToolExecutionContext, path: str, content: str) -> dict[str, Any]:
        """Write (create or replace) a UTF-8 text file of the workspace.

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
            path: the file path, relative to the workspace root.
            content: the complete new file content.
        """
        real = workspaces.resolve(ctx.workspace_id, path, write=True)
        root = workspaces.get(ctx.workspace_id).root
        written = await asyncio.to_thread(_write_resolved, root, real, content)
        return {"path": path, "bytes": written}

    @tool(name="workspace.list", effect="read")
    async def list_files(ctx: ToolExecutionContext, path: str = ".") -> dict[str, Any]:
        """List a directory of the workspace (names, relative paths, types).

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
            path: the directory, relative to the workspace root.
        """
        workspace = workspaces.get(ctx.workspace_id)
        real = workspaces.resolve(ctx.workspace_id, path)
        entries = await asyncio.to_thread(_list, workspace.root, real)
        return {"path": path, "entries": list(entries)}

    return (read, write, list_files)


def _profile_access(ctx: RuntimeMiddlewareContext) -> str | None:
    agent = ctx.agent
    metadata = agent.metadata if agent is not None else None
    profile = metadata.get("hadamardProfile") if metadata else None
    if isinstance(profile, dict):
        workspace = profile.get("workspace")
        if isinstance(workspace, dict):
            access = workspace.get("access")
            return access if isinstance(access, str) else None
    return None


def workspace_boundary_middleware(
    workspaces: WorkspaceRegistry, *, priority: int = -100
) -> MiddlewareDefinition:
    """``beforeToolCall`` middleware denying workspace tool calls that cross the boundary.

    A call of a ``workspace.*`` tool is denied when the run has no (or an unknown) workspace, the
    path escapes the root (symlinks followed), or it writes while the profile's workspace access
    (or the workspace itself) is read-only or ``none``.
    """

    def check(ctx: RuntimeMiddlewareContext, next: Any) -> Any:
        call = ctx.tool_call
        if call is None or not call.name.startswith("workspace."):
            return next()
        state = ctx.state
        workspace_id = state.get("workspaceId") if isinstance(state, Mapping) else None
        write = call.name in _WRITE_TOOLS
        access = _profile_access(ctx)
        if access == "none" or (write and access == "read-only"):
            raise ToolCallDenied(f'The profile\'s workspace access "{access}" forbids {call.name}.')
        path = call.input.get("path", ".")
        try:
            workspaces.resolve(
                workspace_id if isinstance(workspace_id, str) else None,
                path if isinstance(path, str) else "",
                write=write,
            )
        except WorkspaceBoundaryError as error:
            raise _denied(error) from None
        return next()

    return define_middleware("workspace.boundary", "beforeToolCall", check, priority=priority)
