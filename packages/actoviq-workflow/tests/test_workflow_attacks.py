"""Spec 04 §2.8 attack list, adapted to Python, run against every process executor.

Each test names the layer that blocks or contains the attack (see the README table) and asserts
the typed error and its code. ``executor`` is parametrised over the local isolated executor and
the bubblewrap executor (skipped with the reason when bubblewrap cannot run here).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

import pytest

from actoviq.core import AbortController
from actoviq.workflow import (
    ProcessResourceLimits,
    ProcessWorkflowExecutorBase,
    UntrustedWorkflowRequest,
    WorkflowAbortedError,
    WorkflowExecutionError,
    WorkflowExecutorError,
    WorkflowMessageLimitError,
    WorkflowOutputLimitError,
    WorkflowPermissionError,
    WorkflowProtocolError,
    WorkflowResourceLimitError,
    WorkflowTimeoutError,
    WorkflowWorkspaceError,
    read_workspace_file,
)

ExecutorFactory = Callable[..., ProcessWorkflowExecutorBase]
AttackError = TypeVar("AttackError", bound=WorkflowExecutorError)


async def wait_for_file(path: Path, *, attempts: int = 500) -> str:
    """Poll until a file the script writes appears (a wait, not a timing assertion).

    The script's output is read the way hosts should: never through a symlink or a FIFO.
    """
    for _ in range(attempts):
        try:
            text = read_workspace_file(path.parent, path.name).decode()
        except WorkflowWorkspaceError as error:
            if error.reason != "missing":
                raise
            text = ""
        if text.endswith("\n"):
            return text
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def process_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def pids_with_marker(marker: str) -> list[int]:
    """Live (non-zombie) host processes whose command line contains ``marker``."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and process_alive(int(entry)):
            found.append(int(entry))
    return found


SECRET = "actoviq-host-secret-" + uuid.uuid4().hex


def request(source: str, workspace: Path, **options: object) -> UntrustedWorkflowRequest:
    return UntrustedWorkflowRequest(source=source, workspace_dir=str(workspace), **options)  # type: ignore[arg-type]


async def run_attack(
    executor: ProcessWorkflowExecutorBase,
    workspace: Path,
    source: str,
    error: type[AttackError],
    *,
    options: Mapping[str, object] | None = None,
    **blocked_by: object,
) -> AttackError:
    """Run ``source``, assert it fails with ``error`` and its default code, and return the error.

    ``blocked_by`` names attributes of the error that identify the blocking layer (e.g.
    ``operation="os.fork"`` for the audit hook, ``resource="cpu"`` for RLIMIT_CPU).
    """
    with pytest.raises(error) as caught:
        await executor.execute(request(source, workspace, **(options or {})))
    assert caught.value.code == error.default_code
    for name, expected in blocked_by.items():
        assert getattr(caught.value, name) == expected, name
    return caught.value


# --- 1. host environment secrets -------------------------------------------------------------
async def test_host_environment_secret_is_invisible(
    executor: ProcessWorkflowExecutorBase, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Layer: empty environment (env={}); /proc/<ppid>/environ is refused by the audit hook
    # (local) and not even the host's /proc (bubblewrap PID namespace).
    monkeypatch.setenv("ACTOVIQ_WORKFLOW_SECRET", SECRET)
    source = """
import os
def main(context):
    leaks = {"environ": dict(os.environ), "getenv": os.getenv("ACTOVIQ_WORKFLOW_SECRET")}
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as handle:
            leaks["parent"] = handle.read().decode("latin-1")
    except OSError as error:
        leaks["parent"] = type(error).__name__
    return leaks
"""
    result = await executor.execute(request(source, workspace))
    assert SECRET not in json.dumps(result.value)
    assert isinstance(result.value, dict)
    assert result.value["getenv"] is None
    environ = result.value["environ"]
    assert isinstance(environ, dict)
    # only what the interpreter (PEP 538 locale coercion) and bwrap's --chdir set themselves
    assert set(environ) <= {"LC_CTYPE", "PWD"}
    assert result.value["parent"] in ("PermissionError", "WorkflowSandboxDenied")


# --- 2. read / write outside the workspace ---------------------------------------------------
async def test_read_outside_workspace_is_denied(
    executor: ProcessWorkflowExecutorBase, workspace: Path, outside: Path
) -> None:
    # Layer: audit hook ("open" outside the workspace); bubblewrap also does not mount it.
    source = f"def main(context):\n    return open({str(outside / 'secret.txt')!r}).read()\n"
    error = await run_attack(executor, workspace, source, WorkflowPermissionError)
    assert error.operation.startswith("open ")
    assert "TOP-SECRET" not in str(error)


async def test_symlink_escape_is_denied(
    executor: ProcessWorkflowExecutorBase, workspace: Path, outside: Path
) -> None:
    # Layer: audit hook resolves symlinks before deciding.
    (workspace / "link").symlink_to(outside / "secret.txt")
    source = "def main(context):\n    return open('link').read()\n"
    await run_attack(executor, workspace, source, WorkflowPermissionError)


async def test_write_outside_workspace_is_denied(
    executor: ProcessWorkflowExecutorBase, workspace: Path, outside: Path
) -> None:
    # Layer: audit hook (write-mode "open"); bubblewrap: read-only root, path not mounted.
    target = outside / "planted.txt"
    source = f"def main(context):\n    open({str(target)!r}, 'w').write('x')\n    return 1\n"
    await run_attack(executor, workspace, source, WorkflowPermissionError)
    assert not target.exists()


async def test_workspace_is_readable_and_writable(
    executor: ProcessWorkflowExecutorBase, workspace: Path
) -> None:
    (workspace / "in.txt").write_text("hello")
    source = """
import os
def main(context):
    os.mkdir("sub")
    with open("sub/out.txt", "w") as handle:
        handle.write(open("in.txt").read().upper())
    return os.getcwd()
"""
    result = await executor.execute(request(source, workspace))
    assert result.value == str(workspace.resolve())  # noqa: ASYNC240
    assert read_workspace_file(workspace, "sub/out.txt") == b"HELLO"


# --- 3. network ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "source",
    [
        "import socket\ndef main(context):\n    return 1\n",
        "import asyncio.base_events as b\n"
        "def main(context):\n    b.socket.socket().connect(('127.0.0.1', 9))\n",
        "import urllib.request\ndef main(context):\n    return 1\n",
    ],
    ids=["import-socket", "socket-via-asyncio-module", "urllib"],
)
async def test_opening_a_socket_is_denied(
    executor: ProcessWorkflowExecutorBase, workspace: Path, source: str
) -> None:
    # Layer: audit hook ("import socket", "socket.__new__"); bubblewrap: no network namespace.
    error = await run_attack(executor, workspace, source, WorkflowPermissionError)
    assert "socket" in error.operation


# --- 4. spawning processes -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "operation"),
    [
        ("import subprocess\ndef main(c):\n    return 1\n", "import subprocess"),
        ("import os\ndef main(c):\n    return os.system('true')\n", "os.system"),
        ("import os\ndef main(c):\n    os.execv('/bin/true', ['true'])\n", "os.exec"),
        (
            "import os\ndef main(c):\n    os.posix_spawn('/bin/true', ['true'], {})\n",
            "os.posix_spawn",
        ),
        (
            "import asyncio.base_events as b\n"
            "def main(c):\n    b.subprocess.Popen(['/bin/true'])\n",
            "subprocess.Popen",
        ),
        (
            "import asyncio.base_events as b\ndef main(c):\n    b.subprocess._fork_exec()\n",
            "subprocess",
        ),
        ("import os\ndef main(c):\n    os.kill(1, 0)\n", "os.kill"),
    ],
    ids=["import", "system", "exec", "posix_spawn", "popen-via-asyncio", "fork_exec", "kill"],
)
async def test_spawning_a_process_is_denied(
    executor: ProcessWorkflowExecutorBase, workspace: Path, source: str, operation: str
) -> None:
    # Layer: audit hook (and the disarmed _posixsubprocess.fork_exec).
    await run_attack(executor, workspace, source, WorkflowPermissionError, operation=operation)


async def test_fork_bomb_is_denied(executor: ProcessWorkflowExecutorBase, workspace: Path) -> None:
    # Layer: audit hook ("os.fork"); RLIMIT_NPROC=0 as well for non-root users.
    source = "import os\ndef main(context):\n    while True:\n        os.fork()\n"
    await run_attack(executor, workspace, source, WorkflowPermissionError, operation="os.fork")


# --- 5. resource exhaustion ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "resource"),
    [
        # Layer: RLIMIT_AS (MemoryError in the child, reported as resource "memory").
        ("def main(context):\n    hoard = bytearray(1 << 30)\n    return len(hoard)\n", "memory"),
        (
            "def main(context):\n    hoard = []\n    while True:\n"
            "        hoard.append(bytearray(8 << 20))\n",
            "memory",
        ),
        # Layer: RLIMIT_CPU (1 s here) -> SIGXCPU, well before the 15 s wall-clock deadline.
        ("def main(context):\n    while True:\n        pass\n", "cpu"),
    ],
    ids=["memory-bomb", "growing-memory-bomb", "cpu-spin"],
)
async def test_resource_bomb_hits_its_limit(
    executor: ProcessWorkflowExecutorBase, workspace: Path, source: str, resource: str
) -> None:
    await run_attack(executor, workspace, source, WorkflowResourceLimitError, resource=resource)


async def test_huge_file_hits_the_file_size_limit(
    executor: ProcessWorkflowExecutorBase, workspace: Path
) -> None:
    # Layer: RLIMIT_FSIZE (1 MiB here) -> SIGXFSZ; the file stops at the limit.
    source = (
        "def main(context):\n    with open('big.bin', 'wb') as handle:\n"
        "        while True:\n            handle.write(b'x' * 65536)\n"
    )
    await run_attack(executor, workspace, source, WorkflowResourceLimitError, resource="fileSize")
    assert (workspace / "big.bin").stat().st_size <= 1024 * 1024


# --- 6. output and messages ------------------------------------------------------------------
async def test_oversized_result_hits_the_output_limit(
    executor: ProcessWorkflowExecutorBase, workspace: Path
) -> None:
    # Layer: child-side maxOutputBytes check (host re-checks every result).
    source = "def main(context):\n    return 'x' * 100_000\n"
    await run_attack(executor, workspace, source, WorkflowOutputLimitError)


_RAW_PIPE_FLOOD = """
import os
def main(context):
    for fd in range(3, 16):
        try:
            os.write(fd, b"x" * 300_000)
        except OSError:
            pass
    return 1
"""


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        # Layer: host pipe cap (stdout is folded into stderr, bounded by maxMessageBytes), kill.
        ("def main(context):\n    while True:\n        print('x' * 1000)\n", "diagnostics"),
        # Layer: host line splitter, enforced while buffering (no newline ever arrives).
        (_RAW_PIPE_FLOOD, "protocol message"),
    ],
    ids=["infinite-output", "huge-raw-pipe-message"],
)
async def test_flooding_a_pipe_hits_the_message_limit(
    executor: ProcessWorkflowExecutorBase, workspace: Path, source: str, fragment: str
) -> None:
    error = await run_attack(executor, workspace, source, WorkflowMessageLimitError)
    assert fragment in error.message


async def test_huge_capability_message_is_refused(
    make_executor: ExecutorFactory, workspace: Path
) -> None:
    # Layer: child-side maxMessageBytes check before writing the capability call.
    calls: list[object] = []

    def echo(value: object, context: object) -> object:
        calls.append(value)
        return value

    async with make_executor(capabilities={"echo": echo}) as executor:
        source = (
            "async def main(context):\n"
            "    return await context['capabilities']['echo']('x' * 200_000)\n"
        )
        options = {"capabilities": ["echo"]}
        await run_attack(executor, workspace, source, WorkflowMessageLimitError, options=options)
    assert calls == []


@pytest.mark.parametrize(
    "expression", ["{1, 2}", "float('nan')", "object()", "(1, 2)", "{1: 'int key'}"]
)
async def test_non_json_result_is_rejected(
    executor: ProcessWorkflowExecutorBase, workspace: Path, expression: str
) -> None:
    # Layer: child-side strict JSON check.
    source = f"def main(context):\n    return {expression}\n"
    error = await run_attack(executor, workspace, source, WorkflowExecutionError)
    assert error.remote_code == "WORKFLOW_EXECUTION_FAILED"
    assert "not JSON serializable" in error.message


async def test_invalid_json_line_on_the_raw_pipe_is_a_protocol_error(
    executor: ProcessWorkflowExecutorBase, workspace: Path
) -> None:
    # Layer: host protocol decoder.
    source = """
import os
def main(context):
    for fd in range(3, 16):
        try:
            os.write(fd, b"this is not json\\n")
        except OSError:
            pass
    return 1
"""
    error = await run_attack(executor, workspace, source, WorkflowProtocolError)
    assert "invalid JSON" in error.message


# --- 7. timeout and cancellation -------------------------------------------------------------
@pytest.mark.parametrize(
    "source",
    [
        "import asyncio\nasync def main(context):\n    await asyncio.sleep(3600)\n",
        "import time\ndef main(context):\n    time.sleep(3600)\n",
    ],
    ids=["async-sleep", "blocking-sleep"],  # scripts that never settle: the behaviour tested
)
async def test_never_settling_script_times_out(
    executor: ProcessWorkflowExecutorBase, workspace: Path, source: str
) -> None:
    # Layer: host wall-clock timer, then SIGKILL of the process group.
    options = {"timeout_ms": 300}
    await run_attack(
        executor, workspace, source, WorkflowTimeoutError, options=options, timeout_ms=300
    )
    assert executor.active_process_count == 0


async def test_abort_mid_run_kills_the_child(
    executor: ProcessWorkflowExecutorBase, workspace: Path
) -> None:
    # Layer: AbortSignal -> SIGKILL of the process group; 1 live process during, 0 after.
    controller = AbortController()
    source = """
import os, time
def main(context):
    with open("started", "w") as handle:
        handle.write("ok\\n")
    time.sleep(3600)
"""
    task = asyncio.create_task(
        executor.execute(request(source, workspace, signal=controller.signal))
    )
    try:
        await wait_for_file(workspace / "started")
        assert executor.active_process_count == 1
    finally:
        controller.abort("user pressed stop")
    with pytest.raises(WorkflowAbortedError) as caught:
        await task
    assert caught.value.code == "WORKFLOW_ABORTED"
    assert caught.value.message == "user pressed stop"
    assert executor.active_process_count == 0


_SPAWN_CHILDREN = """
import subprocess, sys
def main(context):
    marker = context["input"]
    children = [
        subprocess.Popen([sys.executable, "-I", "-S", "-c", "import time; time.sleep(120)", marker])
        for _ in range(2)
    ]
    with open("pids", "w") as handle:
        handle.write(" ".join(str(child.pid) for child in children) + "\\n")
    import time
    time.sleep(3600)
"""


async def test_cancellation_kills_the_whole_process_group(
    make_executor: ExecutorFactory, executor_kind: str, workspace: Path
) -> None:
    # Layer: process group (start_new_session) + SIGKILL to the group on cancellation; under
    # bubblewrap also the PID namespace. The audit hook is off here so the script *can* spawn
    # grandchildren; we then check by pid (and by a marker in their argv) that none survive.
    marker = "actoviq-orphan-" + uuid.uuid4().hex
    resources = ProcessResourceLimits(
        cpu_seconds=5, address_space_bytes=256 * 1024 * 1024, open_files=32, max_processes=4096
    )
    async with make_executor(audit_hook=False, resource_limits=resources) as executor:
        task = asyncio.create_task(
            executor.execute(request(_SPAWN_CHILDREN, workspace, input=marker))
        )
        try:
            pids = [int(pid) for pid in (await wait_for_file(workspace / "pids")).split()]
            assert len(pids) == 2
            assert len(pids_with_marker(marker)) == 2  # the grandchildren really run
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            if not task.done():
                task.cancel()
        assert executor.active_process_count == 0
    local = executor_kind == "local"  # bubblewrap pids are PID-namespace numbers

    def survivors() -> list[int]:
        # A killed process drops its command line (mm released) a moment before it becomes a
        # zombie, so both views are polled until they agree that nothing runs any more.
        alive = [pid for pid in pids if process_alive(pid)] if local else []
        return pids_with_marker(marker) + alive

    # poll the process table for at least 10 s (no event exists for another process's death)
    for _ in range(500):
        if not survivors():
            break
        await asyncio.sleep(0.02)
    assert pids_with_marker(marker) == []
    if local:
        assert not any(process_alive(pid) for pid in pids)
