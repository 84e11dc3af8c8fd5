"""The kernel layers on their own: the child's ctypes layer, the host's policy, probe and lease.

The ctypes layer (``_child_kernel``) is exercised in fresh ``python -I -S`` processes, exactly as
the bootstrap runs it; each test checks the effect from inside (errno of a refused call) and, for
mounts, that nothing leaks to the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from actoviq.core.converter import from_json, to_json
from actoviq.workflow import (
    LocalIsolatedProcessWorkflowExecutor,
    SandboxCapabilities,
    SandboxPolicy,
    UntrustedWorkflowRequest,
    WorkflowConfigurationError,
    bubblewrap_argv,
    resolve_sandbox_user,
)
from actoviq.workflow import _sandbox as sandbox_module
from actoviq.workflow import local_process as local_process_module
from actoviq.workflow._landlock import build_ruleset, elf_interpreter, landlock_abi
from actoviq.workflow._lease import check_lendable, lend_workspace
from actoviq.workflow._sandbox import ChildKernel, MountPlan, mount_plan, probe_kernel_layers
from actoviq.workflow._seccomp import SeccompUnavailableError, seccomp_program

from .conftest import LOCAL_AVAILABLE, LOCAL_REASON

KERNEL_SOURCE = (
    Path(__file__).parents[1] / "src" / "actoviq" / "workflow" / "_child_kernel.py"
).read_text()
PYTHON = os.path.realpath(sys.executable)
ROOT = os.geteuid() == 0
needs_layers = pytest.mark.skipif(not LOCAL_AVAILABLE, reason=f"{LOCAL_REASON}")
needs_root = pytest.mark.skipif(not ROOT, reason="needs root (privilege drop and mounts)")


def run_child(body: str, config: Mapping[str, object], pass_fds: tuple[int, ...] = ()) -> object:
    """Run ``body`` after the ctypes layer in a fresh isolated interpreter; return its JSON."""
    program = KERNEL_SOURCE + "\nimport json, sys\nconfig = json.loads(sys.argv[1])\n" + body
    completed = subprocess.run(
        [PYTHON, "-I", "-S", "-c", program, json.dumps(config)],
        capture_output=True,
        text=True,
        env={},
        pass_fds=pass_fds,
        timeout=30,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


PROBE_ERRNO = """
def attempt(action):
    try:
        action()
        return 0
    except OSError as error:
        return error.errno
"""


@needs_layers
def test_no_new_privs_is_set_and_reported() -> None:
    body = "set_no_new_privs()\n" + (
        "print(json.dumps([l for l in open('/proc/self/status') if l.startswith('NoNewPrivs')]))"
    )
    assert run_child(body, {}) == ["NoNewPrivs:\t1\n"]


@needs_layers
def test_seccomp_program_refuses_what_the_policy_lists() -> None:
    body = (
        PROBE_ERRNO
        + """
import ctypes, os, socket, resource
set_no_new_privs()
load_seccomp(bytes.fromhex(config["program"]))
libc = ctypes.CDLL(None, use_errno=True)
def raw(number, *args):
    if libc.syscall(number, *args) == -1:
        raise OSError(ctypes.get_errno(), "")
print(json.dumps({
    "socket": attempt(lambda: socket.socket()),
    "socketpair": attempt(lambda: socket.socketpair()),
    "dgram_pair": attempt(lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)),
    "ptrace": attempt(lambda: raw(101, 16, 1, 0, 0)),
    "clone3": attempt(lambda: raw(435, 0, 0)),
    "unshare": attempt(lambda: raw(272, 0x10000000)),
    "prlimit_other": attempt(lambda: resource.prlimit(1, resource.RLIMIT_NOFILE)),
    "prlimit_self": attempt(lambda: resource.prlimit(0, resource.RLIMIT_NOFILE)),
    "setpriority_other": attempt(lambda: os.setpriority(os.PRIO_PROCESS, 1, 5)),
    "setpriority_self": attempt(lambda: os.setpriority(os.PRIO_PROCESS, 0, 1)),
    "mknod": attempt(lambda: os.mkfifo("/tmp/actoviq-never")),
    "pidfd_open": attempt(lambda: os.pidfd_open(1)),
}))
"""
    )
    result = run_child(body, {"program": seccomp_program().hex()})
    assert result == {
        "socket": 1,
        "socketpair": 0,
        "dgram_pair": 1,
        "ptrace": 1,
        "clone3": 38,
        "unshare": 1,
        "prlimit_other": 1,
        "prlimit_self": 0,
        "setpriority_other": 1,
        "setpriority_self": 0,
        "mknod": 1,
        "pidfd_open": 1,
    }


def test_load_seccomp_refuses_a_malformed_program() -> None:
    body = PROBE_ERRNO + (
        "try:\n    load_seccomp(b'123')\n    print(json.dumps('loaded'))\n"
        "except ValueError:\n    print(json.dumps('refused'))\n"
    )
    assert run_child(body, {}) == "refused"


@needs_layers
def test_landlock_ruleset_confines_files(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    body = (
        PROBE_ERRNO
        + """
set_no_new_privs()
restrict_landlock(config["fd"])
print(json.dumps({
    "write_inside": attempt(lambda: open(config["ws"] + "/ok.txt", "w").write("x")),
    "read_outside": attempt(lambda: open(config["outside"]).read()),
    "write_outside": attempt(lambda: open(config["outside"] + ".new", "w")),
    "symlink_inside": attempt(lambda: __import__("os").symlink("/etc/passwd", config["ws"] + "/l")),
    "read_stdlib": attempt(lambda: __import__("decimal")),
}))
"""
    )
    with build_ruleset(abi=landlock_abi(), python=PYTHON, workspace=str(workspace)) as rules:
        fd = os.dup(rules.fileno())
    try:
        config = {"fd": fd, "ws": str(workspace), "outside": str(outside)}
        result = run_child(body, config, pass_fds=(fd,))
    finally:
        os.close(fd)
    assert result == {
        "write_inside": 0,
        "read_outside": 13,
        "write_outside": 13,
        "symlink_inside": 13,
        "read_stdlib": 0,
    }
    assert (workspace / "ok.txt").read_text() == "x"
    assert not (tmp_path / "outside.txt.new").exists()


@pytest.fixture
def open_base() -> Iterator[Path]:
    """A directory every uid can traverse (pytest's own base is closed to others as root)."""
    base = Path(tempfile.mkdtemp(prefix="actoviq-kernel-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base)


@needs_root
def test_privilege_drop_and_private_mounts(open_base: Path) -> None:
    closed = open_base / "closed"
    workspace = closed / "ws"
    workspace.mkdir(parents=True)
    closed.chmod(0o700)
    os.chown(workspace, 65534, 65534)
    plan = mount_plan([str(workspace)], 65534, 65534)
    assert plan.hide == (str(closed),)
    body = (
        PROBE_ERRNO
        + """
import os
isolate_mounts(config["hide"], config["binds"])
os.chdir(config["ws"])
drop_privileges(65534, 65534)
print(json.dumps({
    "ids": [os.getresuid(), os.getresgid(), os.getgroups()],
    "write_absolute": attempt(lambda: open(config["ws"] + "/abs.txt", "w").write("x")),
    "siblings": sorted(os.listdir(os.path.dirname(config["ws"]))),
    "back_to_root": attempt(lambda: os.setuid(0)),
}))
"""
    )
    (closed / "sibling-secret").write_text("hidden")
    config = {"hide": list(plan.hide), "binds": list(plan.binds), "ws": str(workspace)}
    result = run_child(body, config)
    assert result == {
        "ids": [[65534] * 3, [65534] * 3, []],
        "write_absolute": 0,
        "siblings": ["ws"],  # the tmpfs hides everything else under the closed directory
        "back_to_root": 1,
    }
    assert (workspace / "abs.txt").read_text() == "x"
    with open("/proc/self/mountinfo") as mounts:  # nothing propagated to the host
        assert str(closed) not in mounts.read()


def test_mount_plan_keeps_open_paths_as_they_are(open_base: Path) -> None:
    (open_base / "open" / "ws").mkdir(parents=True)
    plan = mount_plan([str(open_base / "open" / "ws"), "/usr/lib"], 65534, 65534)
    assert plan == MountPlan(hide=(), binds=())
    closed = open_base / "a"
    (closed / "b" / "ws").mkdir(parents=True)
    (closed / "b" / "py").mkdir()
    closed.chmod(0o700)
    (closed / "b").chmod(0o700)
    nested = mount_plan([str(closed / "b" / "ws"), str(closed / "b" / "py")], 65534, 65534)
    assert nested == MountPlan(
        hide=(str(closed),), binds=(str(closed / "b" / "py"), str(closed / "b" / "ws"))
    )


def test_elf_interpreter_of_the_python_binary() -> None:
    loader = elf_interpreter(PYTHON)
    assert loader is None or os.path.exists(loader)
    assert elf_interpreter("/etc/hostname") is None


def test_policy_validation() -> None:
    with pytest.raises(WorkflowConfigurationError, match="landlock"):
        SandboxPolicy(landlock="maybe")  # type: ignore[arg-type]
    with pytest.raises(WorkflowConfigurationError, match="non-root"):
        SandboxPolicy(user=0)
    with pytest.raises(WorkflowConfigurationError, match="name or a numeric id"):
        SandboxPolicy(user=True)
    with pytest.raises(WorkflowConfigurationError, match="empty"):
        SandboxPolicy(group="")
    with pytest.raises(WorkflowConfigurationError, match="does not exist"):
        resolve_sandbox_user(SandboxPolicy(user="actoviq-no-such-user"))
    with pytest.raises(WorkflowConfigurationError, match="does not exist"):
        resolve_sandbox_user(SandboxPolicy(group="actoviq-no-such-group"))
    uid, gid = resolve_sandbox_user(SandboxPolicy())
    assert uid != 0
    assert gid != 0
    assert resolve_sandbox_user(SandboxPolicy(user=uid, group=gid)) == (uid, gid)


@pytest.mark.parametrize(
    ("patch", "policy", "fragment"),
    [
        ("landlock", SandboxPolicy(), "Landlock is not available"),
        ("landlock5", SandboxPolicy(), "Landlock ABI 5"),
        ("seccomp", SandboxPolicy(), "seccomp is not available"),
        ("user", SandboxPolicy(user="actoviq-no-such-user"), "does not exist"),
    ],
    ids=["no-landlock", "old-landlock", "no-seccomp", "unknown-user"],
)
async def test_a_missing_required_layer_fails_closed(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    patch: str,
    policy: SandboxPolicy,
    fragment: str,
) -> None:
    if patch == "landlock":
        monkeypatch.setattr(sandbox_module, "landlock_abi", lambda: 0)
    elif patch == "landlock5":
        monkeypatch.setattr(sandbox_module, "landlock_abi", lambda: 5)
    elif patch == "seccomp":

        def unavailable() -> bytes:
            raise SeccompUnavailableError("libseccomp is not usable (test)")

        monkeypatch.setattr(sandbox_module, "seccomp_program", unavailable)
    elif not ROOT:
        pytest.skip("the sandbox user matters only to a root host")
    async with LocalIsolatedProcessWorkflowExecutor(sandbox=policy) as executor:
        status = executor.capabilities()
        assert not status.available
        assert status.reason is not None
        assert fragment in status.reason
        request = UntrustedWorkflowRequest(
            source="def main(context):\n    return 1\n", workspace_dir=str(tmp_path)
        )
        with pytest.raises(WorkflowConfigurationError, match=fragment):
            await executor.execute(request)
        assert executor.active_process_count == 0


async def test_weaker_modes_are_explicit_and_reported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sandbox_module, "landlock_abi", lambda: 0)
    policy = SandboxPolicy(landlock="best-effort", seccomp="off")
    layers = probe_kernel_layers(policy)
    assert layers.problems == ()
    async with LocalIsolatedProcessWorkflowExecutor(sandbox=policy) as executor:
        status = executor.capabilities()
        assert status.available
        assert status.landlock_abi == 0
        assert not status.seccomp
        assert status.network  # nothing in the kernel stops sockets any more: say so
        assert "landlock" not in status.layers
        assert "seccomp" not in status.layers
        request = UntrustedWorkflowRequest(
            source="def main(context):\n    return 41 + 1\n", workspace_dir=str(tmp_path)
        )
        if ROOT or LOCAL_AVAILABLE:
            assert (await executor.execute(request)).value == 42


@needs_layers
def test_capabilities_report_the_active_layers() -> None:
    status = LocalIsolatedProcessWorkflowExecutor().capabilities()
    assert status.available
    assert status.landlock_abi >= 6
    assert status.seccomp
    assert status.no_new_privs
    assert not status.network
    assert status.os_boundary
    assert {"no-new-privs", "uid", "landlock", "seccomp", "audit-hook"} <= set(status.layers)
    if ROOT:
        assert status.uid == resolve_sandbox_user(SandboxPolicy())[0]
    else:
        assert status.uid == os.geteuid()
    wire = to_json(status)
    assert wire["landlockAbi"] == status.landlock_abi
    assert wire["layers"] == list(status.layers)
    assert from_json(SandboxCapabilities, wire) == status


@needs_root
async def test_the_workspace_is_lent_and_given_back(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "in.txt").write_text("x")
    outside = tmp_path / "outside.txt"
    outside.write_text("o")
    (workspace / "link").symlink_to(outside)
    os.link(workspace / "in.txt", tmp_path / "hardlink.txt")  # shared with a file outside
    (workspace / "own.txt").write_text("y")
    os.chown(workspace / "own.txt", 1234, 1234)
    async with lend_workspace(str(workspace), 65534, 65534):
        assert os.stat(workspace).st_uid == 65534
        assert os.stat(workspace / "sub").st_uid == 65534
        assert os.stat(workspace / "own.txt").st_uid == 65534
        assert os.stat(workspace / "in.txt").st_uid == 0  # two links: never lent
        assert os.stat(outside).st_uid == 0  # the symlink was not followed
        async with lend_workspace(str(workspace), 65534, 65534):  # a concurrent run
            (workspace / "made.txt").write_text("z")
            os.chown(workspace / "made.txt", 65534, 65534)
        assert os.stat(workspace).st_uid == 65534  # still lent to the first run
        with pytest.raises(WorkflowConfigurationError, match="lent to uid"):
            async with lend_workspace(str(workspace), 4321, 4321):
                pass
    assert os.stat(workspace).st_uid == 0
    assert os.stat(workspace / "sub").st_uid == 0
    assert os.stat(workspace / "made.txt").st_uid == 0  # created in the run: the owner's now
    assert (os.stat(workspace / "own.txt").st_uid, os.stat(workspace / "own.txt").st_gid) == (
        1234,
        1234,
    )


@needs_root
@pytest.mark.parametrize("shared", ["/tmp", "/", "/var"])
async def test_a_shared_directory_is_never_lent(shared: str) -> None:
    before = os.stat(shared)
    async with LocalIsolatedProcessWorkflowExecutor() as executor:
        request = UntrustedWorkflowRequest(
            source="def main(c):\n    return 1\n", workspace_dir=shared
        )
        with pytest.raises(WorkflowConfigurationError, match="dedicated"):
            await executor.execute(request)
        assert executor.active_process_count == 0
    after = os.stat(shared)
    assert (after.st_uid, after.st_gid, after.st_mode) == (
        before.st_uid,
        before.st_gid,
        before.st_mode,
    )


def test_a_workspace_holding_the_interpreter_is_refused(open_base: Path) -> None:
    prefix = open_base / "python"
    prefix.mkdir()
    with pytest.raises(WorkflowConfigurationError, match="contains"):
        check_lendable(str(open_base), protected=(str(prefix),))
    check_lendable(str(open_base / "job"), protected=(str(prefix),))


@needs_root
async def test_lending_stops_at_mount_points(open_base: Path) -> None:
    workspace = open_base / "ws"
    inner = workspace / "mnt"
    inner.mkdir(parents=True)
    (open_base / "elsewhere").mkdir()
    (open_base / "elsewhere" / "host.txt").write_text("host")
    mount = ["mount", "--bind", str(open_base / "elsewhere"), str(inner)]
    completed = await asyncio.to_thread(subprocess.run, mount, check=False)
    if completed.returncode:
        pytest.skip("bind mounts are not possible here")
    try:
        async with lend_workspace(str(workspace), 65534, 65534):
            assert os.stat(workspace).st_uid == 65534
            assert os.stat(inner / "host.txt").st_uid == 0  # another file system: not lent
    finally:
        await asyncio.to_thread(subprocess.run, ["umount", str(inner)], check=True)


def test_bubblewrap_argv_for_a_root_host_and_for_a_user() -> None:
    command = ["python3", "-c", "pass"]
    joined = bubblewrap_argv(
        "bwrap", python=PYTHON, workspace="/srv/ws", command=command, userns_fd=7, seccomp_fd=9
    )
    assert joined[:3] == ["bwrap", "--userns", "7"]
    assert "--unshare-user" not in joined  # the prepared namespace maps 1000 to the sandbox uid
    assert joined[joined.index("--seccomp") + 1] == "9"
    assert joined[joined.index("--cap-drop") + 1] == "ALL"
    assert joined.count("--cap-add") == 2
    assert ("--remount-ro", "/dev") in itertools.pairwise(joined)
    assert joined[-len(command) :] == command
    plain = bubblewrap_argv("bwrap", python=PYTHON, workspace="/srv/ws", command=command)
    assert {"--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-net"} <= set(plain)
    assert plain[plain.index("--uid") + 1] == plain[plain.index("--gid") + 1] == "1000"
    assert "--seccomp" not in plain
    assert plain[plain.index("--bind") + 1 : plain.index("--bind") + 3] == ["/srv/ws", "/srv/ws"]
    assert ("--dir", "/srv") in itertools.pairwise(plain)  # bwrap would make it 0700


@needs_layers
async def test_a_child_that_cannot_enter_its_layers_fails_closed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    original = sandbox_module.child_kernel_spec

    @contextlib.contextmanager
    def broken(*args: Any, **kwargs: Any) -> Generator[ChildKernel]:
        with original(*args, **kwargs) as kernel:
            spec = {**kernel.spec, "landlockFd": 987}  # a descriptor the child does not have
            yield ChildKernel(spec=spec, pass_fds=kernel.pass_fds)

    monkeypatch.setattr(local_process_module, "child_kernel_spec", broken)
    async with LocalIsolatedProcessWorkflowExecutor() as executor:
        request = UntrustedWorkflowRequest(
            source="def main(context):\n    return 'ran'\n", workspace_dir=str(tmp_path)
        )
        with pytest.raises(WorkflowConfigurationError, match="could not be set up"):
            await executor.execute(request)
        assert executor.active_process_count == 0
