"""An attacker's review of the executors' promises: cases the first attack suites missed.

Each test here failed before the fix it guards (see the package CHANGELOG): a workspace closed
to other users (``tempfile.mkdtemp``'s 0700) under bubblewrap, a host descriptor reaching the
script, and script exceptions that break the executor's own error reporting.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from actoviq.workflow import (
    BubblewrapWorkflowExecutor,
    LocalIsolatedProcessWorkflowExecutor,
    ProcessWorkflowExecutorBase,
    TrustedInProcessWorkflowExecutor,
    TrustedWorkflowRequest,
    UntrustedWorkflowRequest,
    WorkflowConfigurationError,
    WorkflowExecutionError,
    read_workspace_file,
    workflow_request_from_json,
)

from .conftest import LOCAL_AVAILABLE, LOCAL_REASON


def untrusted(source: object, workspace: Path) -> UntrustedWorkflowRequest:
    return UntrustedWorkflowRequest(source=source, workspace_dir=str(workspace))  # type: ignore[arg-type]


async def test_a_workspace_closed_to_other_users_runs(
    executor: ProcessWorkflowExecutorBase, workspace: Path
) -> None:
    # tempfile.mkdtemp() makes 0700 directories. A root host lends the workspace to the sandbox
    # uid; bubblewrap (the namespace's root, without capabilities) could not chdir into it and
    # every run failed with "bwrap: Can't chdir ...: Permission denied" (a protocol error).
    os.chmod(workspace, 0o700)
    before = os.stat(workspace)
    source = (
        "import os\ndef main(context):\n"
        "    with open('out.txt', 'w') as handle:\n        handle.write('written')\n"
        "    return os.getcwd()\n"
    )
    result = await executor.execute(untrusted(source, workspace))
    assert result.value == str(workspace.resolve())  # noqa: ASYNC240
    assert read_workspace_file(workspace, "out.txt") == b"written"
    after = os.stat(workspace)  # given back as it was
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)
    assert stat.S_IMODE(after.st_mode) == 0o700


LIST_DESCRIPTORS = """
import os
def main(context):
    found = {}
    for fd in range(3, 256):
        try:
            found[str(fd)] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    return found
"""


async def test_no_host_descriptor_reaches_the_script(
    executor: ProcessWorkflowExecutorBase, workspace: Path, outside: Path
) -> None:
    # Only the protocol pipes and what the child's own event loop opened may be open: before the
    # fix the bubblewrap child kept the host's user-namespace descriptor (``user:[...]``).
    leaky = os.open(outside / "secret.txt", os.O_RDONLY)
    os.set_inheritable(leaky, True)  # a careless host library
    try:
        result = await executor.execute(untrusted(LIST_DESCRIPTORS, workspace))
    finally:
        os.close(leaky)
    assert isinstance(result.value, dict)
    targets = [str(target) for target in result.value.values()]
    assert targets
    for target in targets:
        assert target.startswith(("pipe:", "socket:", "anon_inode:")), target


UNPRINTABLE = {
    "str-raises": (
        "class Hostile(Exception):\n"
        "    def __str__(self):\n        raise ValueError('no')\n"
        "def main(context):\n    raise Hostile()\n"
    ),
    "cause-raises": (
        "class Hostile(BaseException):\n"
        "    @property\n    def __cause__(self):\n        raise RuntimeError('no')\n"
        "def main(context):\n    raise Hostile()\n"
    ),
}


@pytest.mark.parametrize("case", sorted(UNPRINTABLE))
async def test_an_exception_that_breaks_its_own_description_is_typed(
    executor: ProcessWorkflowExecutorBase, workspace: Path, case: str
) -> None:
    # It used to crash the child's error report: a protocol error with a traceback instead of
    # the script's failure.
    with pytest.raises(WorkflowExecutionError) as caught:
        await executor.execute(untrusted(UNPRINTABLE[case], workspace))
    assert caught.value.code == "WORKFLOW_EXECUTION_FAILED"
    assert "Hostile" in caught.value.message


TRUSTED_FAILURES = {
    "str-raises": UNPRINTABLE["str-raises"],
    "sys-exit": "import sys\ndef main(context):\n    sys.exit(3)\n",
    "generator-exit": "def main(context):\n    raise GeneratorExit\n",
    "own-cancelled-error": (
        "import asyncio\nasync def main(context):\n    raise asyncio.CancelledError()\n"
    ),
}


@pytest.mark.parametrize("case", sorted(TRUSTED_FAILURES))
async def test_trusted_script_failures_stay_typed(case: str) -> None:
    # Before: a hostile __str__ escaped as ValueError, sys.exit() raised SystemExit into the
    # host, and a script's own CancelledError looked like a cancellation of the caller.
    async with TrustedInProcessWorkflowExecutor() as executor:
        with pytest.raises(WorkflowExecutionError) as caught:
            await executor.execute(TrustedWorkflowRequest(source=TRUSTED_FAILURES[case]))
    assert caught.value.code == "WORKFLOW_EXECUTION_FAILED"


async def test_cancelling_a_trusted_run_still_cancels_the_caller() -> None:
    started = asyncio.Event()

    async def ready(_value: object, _context: object) -> None:
        started.set()

    source = (
        "import asyncio\nasync def main(context):\n"
        "    await context['capabilities']['ready']()\n    await asyncio.sleep(60)\n"
    )
    async with TrustedInProcessWorkflowExecutor(capabilities={"ready": ready}) as executor:
        task = asyncio.create_task(
            executor.execute(TrustedWorkflowRequest(source=source, capabilities=["ready"]))
        )
        await asyncio.wait_for(started.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root host lends workspaces")
async def test_a_workspace_inside_a_system_tree_is_never_lent(
    executor: ProcessWorkflowExecutorBase,
) -> None:
    # /usr/local/bin, /etc/cron.d, ... are system directories although not in the shared list:
    # lent to the sandbox uid, the script could plant a file that the give-back hands to root.
    planted = tempfile.mkdtemp(prefix="actoviq-review-", dir="/usr/local/share")
    try:
        before = os.stat(planted)
        source = "def main(context):\n    open('planted', 'w').write('x')\n"
        with pytest.raises(WorkflowConfigurationError, match="system"):
            await executor.execute(untrusted(source, Path(planted)))
        assert os.listdir(planted) == []
        after = os.stat(planted)
        assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)
    finally:
        shutil.rmtree(planted)


BAD_OPTIONS: dict[str, Callable[[], object]] = {
    "local-limits": lambda: LocalIsolatedProcessWorkflowExecutor(limits="fast"),  # type: ignore[arg-type]
    "local-resources": lambda: LocalIsolatedProcessWorkflowExecutor(resource_limits={"cpu": 1}),  # type: ignore[arg-type]
    "local-sandbox": lambda: LocalIsolatedProcessWorkflowExecutor(sandbox="strict"),  # type: ignore[arg-type]
    "local-python": lambda: LocalIsolatedProcessWorkflowExecutor(python_executable=3),  # type: ignore[arg-type]
    "local-hook": lambda: LocalIsolatedProcessWorkflowExecutor(audit_hook="no"),  # type: ignore[arg-type]
    "local-capabilities": lambda: LocalIsolatedProcessWorkflowExecutor(capabilities=["echo"]),  # type: ignore[arg-type]
    "bwrap-sandbox": lambda: BubblewrapWorkflowExecutor(sandbox=1),  # type: ignore[arg-type]
    "trusted-limits": lambda: TrustedInProcessWorkflowExecutor(limits=1000),  # type: ignore[arg-type]
    "request-signal": lambda: TrustedWorkflowRequest(source="x", signal="stop"),  # type: ignore[arg-type]
    "untrusted-signal": lambda: UntrustedWorkflowRequest(source="x", workspace_dir="/", signal=1),  # type: ignore[arg-type]
    "request-json-list": lambda: workflow_request_from_json([1]),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("case", sorted(BAD_OPTIONS))
def test_wrongly_typed_options_are_configuration_errors(case: str) -> None:
    # Before: accepted, then an AttributeError at the first run (or at once for the JSON list).
    with pytest.raises(WorkflowConfigurationError):
        BAD_OPTIONS[case]()


async def test_a_source_that_is_not_a_string_is_an_execution_error(workspace: Path) -> None:
    # Before: AttributeError ('int' object has no attribute 'strip'); nothing may be spawned.
    async with LocalIsolatedProcessWorkflowExecutor() as local:
        with pytest.raises(WorkflowExecutionError):
            await local.execute(untrusted(123, workspace))
        assert local.active_process_count == 0
    async with TrustedInProcessWorkflowExecutor() as trusted:
        with pytest.raises(WorkflowExecutionError):
            await trusted.execute(TrustedWorkflowRequest(source=b"def main(c): return 1"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("workspace_dir", "path", "max_bytes"),
    [(None, "out.txt", 10), (".", b"out.txt", 10), (".", None, 10), (".", "out.txt", "10")],
    ids=["workspace-none", "bytes-path", "path-none", "max-bytes-str"],
)
def test_the_workspace_reader_types_its_argument_errors(
    workspace: Path, workspace_dir: object, path: object, max_bytes: object
) -> None:
    # Before: TypeError from os.fspath or the size comparison.
    (workspace / "out.txt").write_text("x")
    directory = workspace if workspace_dir == "." else workspace_dir
    with pytest.raises(WorkflowConfigurationError):
        read_workspace_file(directory, path, max_bytes=max_bytes)  # type: ignore[arg-type]


def plant_a_chain(workspace: Path, depth: int) -> None:
    """Leave d/d/d/... ``depth`` levels deep with a file at the bottom, as a script could."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(workspace, flags)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            deeper = os.open("d", flags, dir_fd=fd)
            os.close(fd)
            fd = deeper
        os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def owners_down_the_chain(workspace: Path) -> set[int]:
    """The owners of every directory of a d/d/d/... chain and its leaf, walked by descriptor."""
    owners: set[int] = set()
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        while True:
            owners.add(os.fstat(fd).st_uid)
            try:
                deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                owners.add(os.stat("leaf", dir_fd=fd, follow_symlinks=False).st_uid)
                return owners
            os.close(fd)
            fd = deeper
    finally:
        os.close(fd)


async def test_a_tree_too_deep_for_a_recursive_walk_is_lent_and_given_back(
    executor: ProcessWorkflowExecutorBase, workspace: Path
) -> None:
    # The lease walked the workspace with os.fwalk, which recurses once per level: a script that
    # left ~1,100 nested directories (cheap with dir_fd) made the give-back raise RecursionError
    # out of execute(), left the deeper part owned by the sandbox uid, and made every later run
    # on that workspace fail the same way in the lend walk. The chain is planted by the test
    # (a script can make it too, only slower: Landlock checks every level of a deep path).
    plant_a_chain(workspace, 1100)
    try:
        result = await executor.execute(untrusted("def main(context):\n    return 2\n", workspace))
        assert result.value == 2
        assert owners_down_the_chain(workspace) == {os.getuid()}
    finally:
        remove_the_chain(workspace)  # pytest's own recursive clean-up could not


def remove_the_chain(workspace: Path) -> None:
    """Delete the d/d/d/... chain bottom-up with one descriptor (no recursion, no long paths)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(workspace, flags)
    depth = 0
    try:
        while True:
            try:
                deeper = os.open("d", flags, dir_fd=fd)
            except FileNotFoundError:
                break
            os.close(fd)
            fd = deeper
            depth += 1
        for name in os.listdir(fd):
            os.unlink(name, dir_fd=fd)
        for _ in range(depth):
            parent = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir("d", dir_fd=fd)
    finally:
        os.close(fd)


HOST = """
import asyncio, sys
from actoviq.workflow import LocalIsolatedProcessWorkflowExecutor, UntrustedWorkflowRequest
SCRIPT = (
    "import os, time\\n"
    "def main(context):\\n"
    "    with open('pid', 'w') as handle:\\n"
    "        handle.write(str(os.getpid()) + '\\\\n')\\n"
    "    time.sleep(60)\\n"
)
async def main():
    async with LocalIsolatedProcessWorkflowExecutor() as executor:
        await executor.execute(UntrustedWorkflowRequest(source=SCRIPT, workspace_dir=sys.argv[1]))
asyncio.run(main())
"""


@pytest.mark.skipif(not LOCAL_AVAILABLE, reason=f"local sandbox layers unavailable: {LOCAL_REASON}")
async def test_a_child_does_not_outlive_a_host_that_was_killed(workspace: Path) -> None:
    # The host enforces the deadline and kills the process group; when the host itself was
    # SIGKILLed, a script that only sleeps kept running (bubblewrap has --die-with-parent).
    host = await asyncio.create_subprocess_exec(sys.executable, "-c", HOST, str(workspace))
    try:
        child = int(await poll(lambda: read_pid(workspace / "pid"), attempts=1500))
    finally:
        host.kill()
        await host.wait()
    assert child > 0, "the script never started"
    assert await poll(lambda: not pid_alive(child), attempts=500), "the child outlived the host"


async def poll(check: Callable[[], int | bool], *, attempts: int) -> int | bool:
    """Call ``check`` every 20 ms until it returns something true (a wait, not a timing test)."""
    for _ in range(attempts):
        outcome = check()
        if outcome:
            return outcome
        await asyncio.sleep(0.02)
    return check()


def read_pid(path: Path) -> int:
    try:
        text = path.read_text()
    except OSError:
        return 0
    return int(text) if text.endswith("\n") else 0


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
