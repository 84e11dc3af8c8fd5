"""Issue 12's attack classes against both process executors, with and without the audit hook.

Every row runs four times: local and bubblewrap executor, audit hook on and off. With the hook
off, the expected refusal comes from a kernel layer alone (Landlock, seccomp, the unprivileged
uid, namespaces, rlimits), which is what the row proves. After every run the host is checked:
the victim process (a root process with a secret in its environment, standing in for the host)
is alive with its priority, scheduler and rlimits unchanged, files outside the workspace are
unchanged, nothing was written into the interpreter's standard library, the loopback TCP
listener and the abstract unix socket saw no connection, the secrets appear in no error, and no
process of the run is left.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import actoviq.core
from actoviq.core import JsonValue
from actoviq.workflow import (
    ProcessResourceLimits,
    ProcessWorkflowExecutorBase,
    SandboxPolicy,
    UntrustedWorkflowRequest,
    WorkflowExecutionError,
    WorkflowExecutorError,
    WorkflowPermissionError,
    WorkflowProtocolError,
    WorkflowResourceLimitError,
    resolve_sandbox_user,
)

from .conftest import ExecutorFactory, make_factory

SECRET = "victim-secret-" + uuid.uuid4().hex
DEPTH_RULE = hasattr(actoviq.core, "MAX_JSON_DEPTH")  # core's strict JSON bounds nesting (D10)
STDLIB = os.path.join(os.path.dirname(os.__file__), "json")  # the hook lets scripts read it
PLANTED = "actoviq_planted_" + uuid.uuid4().hex + ".py"


@dataclass(frozen=True)
class Host:
    """What the attacks target, and how to check it was not touched."""

    victim: int
    outside: Path
    port: int
    abstract: str
    listeners: tuple[socket.socket, socket.socket]
    # The victim's niceness when it started: the suite may itself run under `nice`.
    priority: int

    def input(self) -> JsonValue:
        return {
            "victim": self.victim,
            "outside": str(self.outside),
            "port": self.port,
            "abstract": self.abstract,
            "stdlib": STDLIB,
            "planted": PLANTED,
        }


def _as_sandbox_user() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {}
    uid, gid = resolve_sandbox_user(SandboxPolicy())
    return {"user": uid, "group": gid, "extra_groups": []}


@pytest.fixture(scope="module")
def host() -> Iterator[Host]:
    # Outside the workspace and readable by every uid (unlike pytest's tmp directories, which
    # root keeps closed): file permissions alone would let the sandbox uid read it, so only
    # Landlock (local) or the mount namespace (bubblewrap) can be what refuses.
    outside = Path(tempfile.mkdtemp(prefix="actoviq-outside-"))
    outside.chmod(0o755)
    (outside / "secret.txt").write_text(SECRET)
    (outside / "secret.txt").chmod(0o644)
    victim = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", "import time; time.sleep(3600)"],
        env={"VICTIM_SECRET": SECRET},
    )
    # Another process of the sandbox uid, as when other sandboxes run: the layers must hold the
    # same way whatever that uid's process count is (a low RLIMIT_NPROC set before the uid switch
    # made execve fail with EAGAIN instead of reaching Landlock).
    neighbour = subprocess.Popen(["/bin/sleep", "3600"], **_as_sandbox_user())
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    tcp.setblocking(False)
    abstract = "\0actoviq-attack-" + uuid.uuid4().hex
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(abstract)
    unix.listen(8)
    unix.setblocking(False)
    try:
        yield Host(
            victim=victim.pid,
            outside=outside,
            port=tcp.getsockname()[1],
            abstract=abstract,
            listeners=(tcp, unix),
            priority=os.getpriority(os.PRIO_PROCESS, victim.pid),
        )
    finally:
        tcp.close()
        unix.close()
        victim.kill()
        victim.wait()
        neighbour.kill()
        neighbour.wait()
        shutil.rmtree(outside)
        planted = Path(STDLIB) / PLANTED
        if planted.exists():  # pragma: no cover - only if an attack got through
            planted.unlink()


def process_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def pids_with_marker(marker: str) -> list[int]:
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline and process_alive(int(entry)):
                found.append(int(entry))
    return found


async def no_process_left(marker: str) -> list[int]:
    """Poll until no live process carries ``marker`` (a killed process lingers a moment)."""
    for _ in range(250):
        left = pids_with_marker(marker)
        if not left:
            return left
        await asyncio.sleep(0.02)
    return pids_with_marker(marker)


async def assert_host_untouched(host: Host, workspace: Path, error: BaseException | None) -> None:
    assert process_alive(host.victim), "the victim (host stand-in) was killed"
    assert os.getpriority(os.PRIO_PROCESS, host.victim) == host.priority
    assert os.sched_getscheduler(host.victim) == os.SCHED_OTHER
    soft, hard = resource.prlimit(host.victim, resource.RLIMIT_NOFILE)
    assert soft > 1
    assert hard > 1
    assert sorted(path.name for path in host.outside.iterdir()) == ["secret.txt"]
    assert (host.outside / "secret.txt").read_text() == SECRET
    assert not (Path(STDLIB) / PLANTED).exists(), "the script wrote into the standard library"
    for listener in host.listeners:
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
    if error is not None:
        assert SECRET not in str(error)
        assert SECRET not in json.dumps(error.details if hasattr(error, "details") else {})  # type: ignore[attr-defined]
    assert await no_process_left(str(workspace)) == []


# --- the rows ---------------------------------------------------------------------------------
# Outcome kinds: ("permission", layer) -> WorkflowPermissionError from that layer;
# ("missing", text) -> WorkflowExecutionError naming the error (bubblewrap: not in the namespace);
# ("resource", name) -> WorkflowResourceLimitError.
Outcome = tuple[str, str]
HOOK: Outcome = ("permission", "audit-hook")
KERNEL: Outcome = ("permission", "kernel")


@dataclass(frozen=True)
class Row:
    source: str
    hooked: Outcome | None  # with the audit hook on; None: the hook cannot see it
    local: Outcome  # hook off, local executor
    bwrap: Outcome  # hook off, bubblewrap executor


CTYPES = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
RAISE_ERRNO = "    if result == -1:\n        raise OSError(ctypes.get_errno(), 'refused')\n"

ROWS: dict[str, Row] = {
    # *at calls relative to a directory fd: the hook sees only the relative name.
    "dir-fd-write-into-stdlib": Row(
        "import os\ndef main(c):\n"
        "    fd = os.open(c['input']['stdlib'], os.O_RDONLY | os.O_DIRECTORY)\n"
        "    os.open(c['input']['planted'], os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)\n",
        None,
        KERNEL,
        KERNEL,
    ),
    # '..' from a directory fd: from the cwd the hook resolves it inside the workspace.
    "dotdot-from-dir-fd": Row(
        "import os\ndef main(c):\n"
        "    ws = os.open('.', os.O_RDONLY | os.O_DIRECTORY)\n"
        "    name = os.path.relpath(c['input']['outside'] + '/secret.txt', os.getcwd())\n"
        "    deep = '/'.join(['d'] * name.count('..'))\n"
        "    os.makedirs(deep)\n"
        "    os.chdir(deep)\n"  # from here the hook resolves the name inside the workspace
        "    return os.read(os.open(name, os.O_RDONLY, dir_fd=ws), 100).decode()\n",
        None,
        KERNEL,
        ("missing", "FileNotFoundError"),
    ),
    "symlink-made-in-workspace": Row(
        "import os\ndef main(c):\n"
        "    os.symlink(c['input']['outside'] + '/secret.txt', 'link')\n"
        "    return open('link').read()\n",
        None,  # the hook allows making a link in the workspace; Landlock refuses MAKE_SYM
        KERNEL,
        KERNEL,
    ),
    "hardlink-made-in-workspace": Row(
        "import os\ndef main(c):\n"
        "    os.link(c['input']['outside'] + '/secret.txt', 'hard')\n"
        "    return open('hard').read()\n",
        HOOK,
        KERNEL,
        ("missing", "FileNotFoundError"),
    ),
    # an extension module loaded under another name, then prlimit on another process
    "extension-under-another-name": Row(
        "import os, sys, importlib.util\ndef main(c):\n"
        "    dynload = next(p for p in sys.path if p.endswith('lib-dynload'))\n"
        "    name = next(n for n in os.listdir(dynload) if n.startswith('resource.'))\n"
        "    spec = importlib.util.spec_from_file_location('pkg.resource', dynload + '/' + name)\n"
        "    mod = importlib.util.module_from_spec(spec)\n"
        "    spec.loader.exec_module(mod)\n"
        "    mod.prlimit(c['input']['victim'], mod.RLIMIT_NOFILE, (1, 1))\n",
        HOOK,
        KERNEL,
        KERNEL,
    ),
    "pidfd-send-signal": Row(
        "import os, signal\ndef main(c):\n"
        "    fd = os.pidfd_open(c['input']['victim'])\n"
        "    signal.pidfd_send_signal(fd, signal.SIGKILL)\n",
        None,
        KERNEL,
        KERNEL,
    ),
    "setpriority-other": Row(
        "import os\ndef main(c):\n    os.setpriority(os.PRIO_PROCESS, c['input']['victim'], 19)\n",
        None,
        KERNEL,
        KERNEL,
    ),
    "sched-setscheduler-other": Row(
        "import os\ndef main(c):\n"
        "    os.sched_setscheduler(c['input']['victim'], os.SCHED_IDLE, os.sched_param(0))\n",
        None,
        KERNEL,
        KERNEL,
    ),
    "prlimit-other": Row(
        "import resource\ndef main(c):\n"
        "    resource.prlimit(c['input']['victim'], resource.RLIMIT_NOFILE, (1, 1))\n",
        HOOK,
        KERNEL,
        KERNEL,
    ),
    "process-vm-readv": Row(
        CTYPES + "def main(c):\n"
        "    buf = ctypes.create_string_buffer(64)\n"
        "    local = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 64)\n"
        "    remote = (ctypes.c_void_p * 2)(0x400000, 64)\n"
        "    result = libc.process_vm_readv(c['input']['victim'], local, 1, remote, 1, 0)\n"
        + RAISE_ERRNO,
        HOOK,
        KERNEL,
        KERNEL,
    ),
    "proc-pid-mem": Row(
        "def main(c):\n"
        "    return open(f\"/proc/{c['input']['victim']}/mem\", 'rb').read(16).hex()\n",
        HOOK,
        KERNEL,
        ("missing", "FileNotFoundError"),
    ),
    "mkfifo-outside": Row(
        "import os\ndef main(c):\n    os.mkfifo(c['input']['outside'] + '/fifo')\n",
        None,
        KERNEL,
        KERNEL,
    ),
    "mknod-device": Row(
        "import os, stat\ndef main(c):\n"
        "    os.mknod('dev', stat.S_IFCHR | 0o666, os.makedev(1, 5))\n",
        None,
        KERNEL,
        KERNEL,
    ),
    # a builtin the hook used to look up at call time
    "patched-builtin-len": Row(
        "import builtins, os\ndef main(c):\n"
        "    builtins.len = lambda *_: 0\n"
        "    os.open(c['input']['stdlib'] + '/' + c['input']['planted'], "
        "os.O_WRONLY | os.O_CREAT, 0o644)\n",
        HOOK,
        KERNEL,
        KERNEL,
    ),
    "nested-user-namespace": Row(
        CTYPES + "def main(c):\n    result = libc.unshare(0x10000000)\n" + RAISE_ERRNO,
        HOOK,
        KERNEL,
        KERNEL,
    ),
    "writable-dev-shm": Row(
        "def main(c):\n    open('/dev/shm/planted', 'w').write('x')\n",
        HOOK,
        KERNEL,
        KERNEL,
    ),
    "fork-bomb": Row(
        "import os\ndef main(c):\n    while True:\n        os.fork()\n",
        HOOK,
        ("resource", "processes"),
        ("resource", "processes"),
    ),
    "loopback-tcp-listener": Row(
        "import socket\ndef main(c):\n"
        "    socket.create_connection(('127.0.0.1', c['input']['port']), timeout=2)\n",
        HOOK,
        KERNEL,
        KERNEL,
    ),
    "host-abstract-unix-socket": Row(
        "import socket\ndef main(c):\n"
        "    s = socket.socket(socket.AF_UNIX)\n"
        "    s.connect(c['input']['abstract'])\n",
        HOOK,
        KERNEL,
        KERNEL,
    ),
    "leave-the-process-group": Row(
        "import os\ndef main(c):\n    os.setsid()\n",
        None,
        KERNEL,
        KERNEL,
    ),
    "kill-the-host": Row(
        "import os, signal\ndef main(c):\n    os.kill(c['input']['victim'], signal.SIGKILL)\n",
        HOOK,
        KERNEL,
        ("missing", "ProcessLookupError"),
    ),
    "signal-the-parent": Row(
        "import os\ndef main(c):\n    os.kill(os.getppid(), 0)\n",
        HOOK,
        KERNEL,
        KERNEL,
    ),
    "read-host-environment": Row(
        "def main(c):\n"
        "    return open(f\"/proc/{c['input']['victim']}/environ\", 'rb').read().decode()\n",
        HOOK,
        KERNEL,
        ("missing", "FileNotFoundError"),
    ),
    "exec-another-binary": Row(
        "import os\ndef main(c):\n    os.execv('/bin/sh', ['sh', '-c', 'true'])\n",
        HOOK,
        KERNEL,
        KERNEL,
    ),
    # kernel interfaces that reach beyond the process (x86-64 numbers): io_uring_setup,
    # perf_event_open, userfaultfd, keyctl, bpf, fanotify_init; each must be refused (EPERM)
    "kernel-interfaces": Row(
        CTYPES + "import errno\ndef main(c):\n"
        "    buf = ctypes.create_string_buffer(256)\n"
        "    calls = [(425, 8, buf), (298, buf, 0, -1, -1, 0), (323, 0), (250, 0, 0),\n"
        "             (321, 0, buf, 128), (300, 0, 0)]\n"
        "    got = [(call[0], libc.syscall(*call), ctypes.get_errno()) for call in calls]\n"
        "    if all(result == -1 and number == errno.EPERM for _, result, number in got):\n"
        "        raise OSError(errno.EPERM, 'refused')\n"
        "    return got\n",
        HOOK,
        KERNEL,
        KERNEL,
    ),
    "x32-system-call": Row(
        CTYPES + "def main(c):\n    libc.syscall(0x40000000 | 39)\n",
        HOOK,
        ("permission", "seccomp"),
        ("permission", "seccomp"),
    ),
}


@pytest.fixture(params=["hook", "no-hook"])
def hooked(request: pytest.FixtureRequest) -> bool:
    return request.param == "hook"


@pytest.fixture
async def attacked(
    make_executor: ExecutorFactory, hooked: bool
) -> AsyncIterator[ProcessWorkflowExecutorBase]:
    async with make_executor(audit_hook=hooked) as executor:
        yield executor
        assert executor.active_process_count == 0


def check_outcome(error: WorkflowExecutorError, expected: Outcome) -> None:
    kind, detail = expected
    if kind == "permission":
        assert isinstance(error, WorkflowPermissionError), error
        assert error.code == "WORKFLOW_PERMISSION_DENIED"
        assert error.layer == detail, (error.layer, error.operation, error.message)
    elif kind == "resource":
        assert isinstance(error, WorkflowResourceLimitError), error
        assert error.resource == detail
    else:
        assert isinstance(error, WorkflowExecutionError), error
        assert detail in error.message


@pytest.mark.parametrize("row", sorted(ROWS))
async def test_attack_is_refused_and_the_host_untouched(
    attacked: ProcessWorkflowExecutorBase,
    executor_kind: str,
    hooked: bool,
    host: Host,
    workspace: Path,
    row: str,
) -> None:
    spec = ROWS[row]
    request = UntrustedWorkflowRequest(
        source=spec.source, workspace_dir=str(workspace), input=host.input()
    )
    with pytest.raises(WorkflowExecutorError) as caught:
        await attacked.execute(request)
    kernel_only = spec.local if executor_kind == "local" else spec.bwrap
    expected = spec.hooked if hooked and spec.hooked is not None else kernel_only
    check_outcome(caught.value, expected)
    await assert_host_untouched(host, workspace, caught.value)


async def test_a_fork_bomb_is_bounded_when_processes_are_allowed(
    executor_kind: str, host: Host, workspace: Path
) -> None:
    # RLIMIT_NPROC binds because the script runs under an unprivileged uid (in bubblewrap too):
    # with 8 processes allowed the bomb stops, and the group kill leaves nothing behind.
    resources = ProcessResourceLimits(
        cpu_seconds=2, address_space_bytes=256 * 1024 * 1024, open_files=32, max_processes=8
    )
    source = """
import os
def main(context):
    made = 0
    try:
        while True:
            if os.fork() == 0:
                import time
                time.sleep(60)
                os._exit(0)
            made += 1
    except BlockingIOError:
        return made
"""
    async with make_factory(executor_kind)(audit_hook=False, resource_limits=resources) as bomb:
        result = await bomb.execute(
            UntrustedWorkflowRequest(source=source, workspace_dir=str(workspace))
        )
        assert isinstance(result.value, int)
        assert 0 <= result.value < 8
        assert bomb.active_process_count == 0
    await assert_host_untouched(host, workspace, None)


@pytest.mark.parametrize(
    "payload",
    [
        b'{"jsonrpc":"2.0","id":"workflow:execute","result":' + b"[" * 3000 + b"]" * 3000 + b"}",
        b'{"jsonrpc":"2.0","id":"workflow:execute","result":1e400}',
        b'{"jsonrpc":"2.0","id":"workflow:execute","result":"\xff"}',
        b'{"jsonrpc":"2.0","id":7,"method":"capability.call","params":[]}',
    ],
    ids=["nested-3000", "1e400", "invalid-utf8", "bad-shape"],
)
async def test_hostile_protocol_lines_are_typed(
    attacked: ProcessWorkflowExecutorBase, workspace: Path, payload: bytes
) -> None:
    source = f"""
import os
def main(context):
    for fd in range(3, 16):
        try:
            os.write(fd, {payload!r} + b"\\n")
        except OSError:
            pass
    return 1
"""
    request = UntrustedWorkflowRequest(source=source, workspace_dir=str(workspace))
    if b"[[[" in payload and not DEPTH_RULE:
        # Without the shared depth rule a parser that does not recurse (Python 3.13) accepts the
        # value: it must then come back intact; anything else must be the typed error.
        try:
            result = await attacked.execute(request)
        except WorkflowProtocolError:
            return
        assert isinstance(result.value, list)
        return
    with pytest.raises(WorkflowProtocolError):
        await attacked.execute(request)


async def test_the_script_sees_an_unprivileged_confined_world(
    attacked: ProcessWorkflowExecutorBase, workspace: Path
) -> None:
    source = """
import os
def main(context):
    with open("/dev/null", "w") as sink:
        sink.write("ok")
    return {"uid": os.getuid(), "euid": os.geteuid(), "groups": os.getgroups()}
"""
    result = await attacked.execute(
        UntrustedWorkflowRequest(source=source, workspace_dir=str(workspace))
    )
    value = result.value
    assert isinstance(value, dict)
    assert value["uid"] != 0
    assert value["euid"] != 0
    assert value["groups"] == []
    status = attacked.capabilities()
    if os.geteuid() == 0:
        assert status.uid != 0
