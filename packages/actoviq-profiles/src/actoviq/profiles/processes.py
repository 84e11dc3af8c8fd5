"""``workspace.shell``, ``workspace.test`` and ``workspace.git``: processes in a sandbox.

Every command runs inside bubblewrap (actoviq-workflow's :func:`~actoviq.workflow.bubblewrap_argv`):
new user, PID, network, IPC and UTS namespaces (no network at all), an empty environment, a
read-only root with only the system directories, and the workspace root as the one writable
mount and the working directory. Without ``bwrap`` the tools refuse to run
(:class:`ProcessSandboxUnavailableError`); nothing ever runs unsandboxed.

The tools have side effects: under ``policy.permissions`` each call is allowed by a rule or waits
for an approval (``approval-or-policy``), and a read-only workspace refuses them (the
``workspace.boundary`` middleware counts them as writes). Output is capped, a call is bounded by
its deadline and the sandbox's own timeout, and an aborted or timed-out command is killed with
its whole process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any, ClassVar, Final

from actoviq.core import JsonObject
from actoviq.profiles.errors import ProfileDefinitionError, ProfileError, ProfileLimitError
from actoviq.profiles.workspace import WorkspaceBoundaryError, WorkspaceRegistry
from actoviq.runtime import RuntimeTool, ToolExecutionContext, tool
from actoviq.workflow import bubblewrap_argv

__all__ = [
    "PROCESS_TOOL_NAMES",
    "ProcessSandbox",
    "ProcessSandboxUnavailableError",
    "process_tools",
]

PROCESS_TOOL_NAMES: Final = ("workspace.shell", "workspace.test", "workspace.git")
_DEFAULT_TEST: Final = ("python3", "-m", "unittest", "discover", "-q")


class ProcessSandboxUnavailableError(ProfileError):
    """The process tools need bubblewrap (``bwrap``), which is not available here."""

    default_code: ClassVar[str] = "PROFILE_PROCESS_SANDBOX_UNAVAILABLE"


class ProcessSandbox:
    """How the process tools run commands (the ``processes`` settings of the registry).

    Args:
        bwrap: the bubblewrap binary (default: ``bwrap`` on ``PATH``).
        timeout_s: the longest a command may run.
        max_output_bytes: how much of stdout and of stderr is kept (each).
        test_command: what ``workspace.test`` runs (the model's arguments are appended).

    Raises:
        ProfileLimitError: ``timeout_s`` not a finite number > 0, or ``max_output_bytes`` not
            an integer >= 1.
        ProfileDefinitionError: ``bwrap`` not a path, or ``test_command`` not a non-empty
            sequence of non-empty strings (a single string is refused, not split).
    """

    def __init__(
        self,
        *,
        bwrap: str | None = None,
        timeout_s: float = 120.0,
        max_output_bytes: int = 64 * 1024,
        test_command: Sequence[str] = _DEFAULT_TEST,
    ) -> None:
        if bwrap is not None and (not isinstance(bwrap, str) or not bwrap or "\x00" in bwrap):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ProfileDefinitionError(f"ProcessSandbox bwrap must be a path; got {bwrap!r}.")
        if (
            isinstance(timeout_s, bool)
            or not isinstance(timeout_s, (int, float))  # pyright: ignore[reportUnnecessaryIsInstance]
            or not math.isfinite(timeout_s)
            or timeout_s <= 0
        ):
            raise ProfileLimitError(
                f"ProcessSandbox timeout_s must be a finite number of seconds > 0; got "
                f"{timeout_s!r}."
            )
        if (
            isinstance(max_output_bytes, bool)
            or not isinstance(max_output_bytes, int)  # pyright: ignore[reportUnnecessaryIsInstance]
            or max_output_bytes < 1
        ):
            raise ProfileLimitError(
                f"ProcessSandbox max_output_bytes must be an integer >= 1; got "
                f"{max_output_bytes!r}."
            )
        if isinstance(test_command, (str, bytes)) or not all(
            isinstance(part, str) and part and "\x00" not in part  # pyright: ignore[reportUnnecessaryIsInstance]
            for part in test_command
        ):
            raise ProfileDefinitionError(
                "ProcessSandbox test_command must be a sequence of non-empty strings (argv), "
                f"not {test_command!r}."
            )
        if not test_command:
            raise ProfileDefinitionError("ProcessSandbox test_command must not be empty.")
        self.bwrap = bwrap or shutil.which("bwrap")
        self.timeout_s = float(timeout_s)
        self.max_output_bytes = max_output_bytes
        self.test_command = tuple(test_command)

    def argv(self, root: str, command: Sequence[str], *, read_only: bool = False) -> list[str]:
        """The sandboxed command line for ``command`` in workspace ``root``.

        Raises:
            ProcessSandboxUnavailableError: no ``bwrap``.
        """
        if self.bwrap is None:
            raise ProcessSandboxUnavailableError(
                "The workspace process tools run only inside bubblewrap, and bwrap is not "
                "installed (apt-get install bubblewrap)."
            )
        argv = bubblewrap_argv(
            self.bwrap, python=os.path.realpath(sys.executable), workspace=root, command=[*command]
        )
        if read_only:
            at = argv.index("--bind")
            argv[at] = "--ro-bind"
        return argv

    async def run(
        self,
        root: str,
        command: Sequence[str],
        *,
        read_only: bool = False,
        limit_s: float | None = None,
    ) -> JsonObject:
        """Run ``command`` in the sandbox; ``{exitCode, stdout, stderr, truncated, timedOut}``.

        ``limit_s`` (seconds) bounds the run too (the sandbox's ``timeout_s`` always does).
        """
        argv = self.argv(root, command, read_only=read_only)
        limit = self.timeout_s if limit_s is None else min(self.timeout_s, limit_s)
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        timed_out = False
        try:
            async with asyncio.timeout(limit):
                stdout, stderr = await asyncio.gather(
                    self._read(process.stdout), self._read(process.stderr)
                )
                await process.wait()
        except TimeoutError:
            timed_out = True
            stdout, stderr = (b"", False), (b"", False)
        finally:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                await process.communicate()  # drains and closes the pipes, reaps the process
        return {
            "exitCode": process.returncode,
            "stdout": stdout[0].decode("utf-8", "replace"),
            "stderr": stderr[0].decode("utf-8", "replace"),
            "truncated": stdout[1] or stderr[1],
            "timedOut": timed_out,
        }

    async def _read(self, stream: asyncio.StreamReader | None) -> tuple[bytes, bool]:
        if stream is None:
            return b"", False
        kept = bytearray()
        truncated = False
        while chunk := await stream.read(65536):
            room = self.max_output_bytes - len(kept)
            if len(chunk) > room:
                truncated = True
            kept += chunk[: max(room, 0)]
        return bytes(kept), truncated


def process_tools(
    workspaces: WorkspaceRegistry, sandbox: ProcessSandbox | None = None
) -> tuple[RuntimeTool, ...]:
    """``workspace.shell``, ``workspace.test`` and ``workspace.git`` bound to ``workspaces``."""
    runner = sandbox if sandbox is not None else ProcessSandbox()

    async def run(ctx: ToolExecutionContext, command: Sequence[str]) -> dict[str, Any]:
        workspace = workspaces.get(ctx.workspace_id)
        if workspace.access == "read-only":
            raise WorkspaceBoundaryError(
                f'Workspace "{workspace.id}" is read-only: processes may not run in it.',
                reason="read-only",
                workspace_id=workspace.id,
            )
        left = None
        if ctx.deadline is not None:  # epoch milliseconds
            left = max(0.0, (ctx.deadline - time.time() * 1000) / 1000)
        return dict(await runner.run(str(workspace.root), command, limit_s=left))

    @tool(name="workspace.shell", effect="side-effect")
    async def shell(ctx: ToolExecutionContext, command: str) -> dict[str, Any]:
        """Run a shell command in the workspace (sandboxed: no network, only it is writable).

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
            command: the command line (``/bin/sh -c``).
        """
        return await run(ctx, ["/bin/sh", "-c", command])

    @tool(name="workspace.test", effect="side-effect")
    async def test(ctx: ToolExecutionContext, args: list[str] | None = None) -> dict[str, Any]:
        """Run the workspace's tests (sandboxed).

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
            args: extra arguments for the test command.
        """
        return await run(ctx, [*runner.test_command, *(args or [])])

    @tool(name="workspace.git", effect="side-effect")
    async def git(ctx: ToolExecutionContext, args: list[str]) -> dict[str, Any]:
        """Run git in the workspace (sandboxed: no network, so no fetch or push).

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
            args: git's arguments, e.g. ["status", "--short"].
        """
        return await run(ctx, ["git", "-c", "safe.directory=*", *args])

    return (shell, test, git)
