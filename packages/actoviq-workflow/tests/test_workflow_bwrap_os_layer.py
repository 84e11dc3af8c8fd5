"""The bubblewrap layers alone (audit hook off): namespaces, mounts, Landlock and seccomp.

Skipped, with bubblewrap's reason, where the sandbox cannot start (bwrap missing or user
namespaces forbidden by the kernel).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from actoviq.workflow import (
    BubblewrapWorkflowExecutor,
    ProcessResourceLimits,
    UntrustedWorkflowRequest,
)

_STATUS = BubblewrapWorkflowExecutor().capabilities()
pytestmark = pytest.mark.skipif(
    not _STATUS.available, reason=f"bubblewrap sandbox unavailable: {_STATUS.reason}"
)


@pytest.fixture
async def bare() -> AsyncIterator[BubblewrapWorkflowExecutor]:
    resources = ProcessResourceLimits(
        cpu_seconds=2, address_space_bytes=256 * 1024 * 1024, open_files=32, max_processes=4096
    )
    async with BubblewrapWorkflowExecutor(audit_hook=False, resource_limits=resources) as sandbox:
        yield sandbox
        assert sandbox.active_process_count == 0


PROBE = """
import os, socket
def attempt(action):
    try:
        return ["ok", action()]
    except OSError as error:
        return ["denied", error.errno]

def main(context):
    outside = context["input"]["outside"]
    host_pid = context["input"]["hostPid"]
    def connect():
        with socket.socket() as s:
            s.settimeout(2)
            s.connect(("127.0.0.1", context["input"]["port"]))
        return "connected"
    return {
        "env": dict(os.environ),
        "readOutside": attempt(lambda: open(outside + "/secret.txt").read()),
        "writeOutside": attempt(lambda: open(outside + "/planted.txt", "w").write("x")),
        "writeRoot": attempt(lambda: open("/planted.txt", "w").write("x")),
        "writeUsr": attempt(lambda: open("/usr/planted.txt", "w").write("x")),
        "hostEnviron": attempt(lambda: open(f"/proc/{host_pid}/environ", "rb").read().decode()),
        "pids": attempt(lambda: sorted(int(p) for p in os.listdir("/proc") if p.isdigit())),
        "connect": attempt(connect),
        "spawn": attempt(lambda: os.waitpid(os.spawnv(os.P_NOWAIT, "/bin/true", ["true"]), 0)[1]),
    }
"""


async def test_namespaces_alone_contain_the_attacks(
    bare: BubblewrapWorkflowExecutor,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "bwrap-secret-" + uuid.uuid4().hex
    monkeypatch.setenv("ACTOVIQ_WORKFLOW_SECRET", secret)
    workspace = tmp_path / "workspace"
    outside = tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(secret)
    import socket

    with socket.socket() as listener:  # a host service the sandbox must not reach
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        result = await bare.execute(
            UntrustedWorkflowRequest(
                source=PROBE,
                workspace_dir=str(workspace),
                input={"outside": str(outside), "hostPid": os.getpid(), "port": port},
            )
        )
    value = result.value
    assert isinstance(value, dict)

    assert secret not in json.dumps(value)
    env = value["env"]
    assert isinstance(env, dict)
    assert set(env) <= {"LC_CTYPE", "PWD"}
    assert value["readOutside"] == ["denied", 2]  # ENOENT: not mounted
    assert value["writeOutside"][0] == "denied"  # type: ignore[index]
    assert value["writeRoot"] == ["denied", 30]  # EROFS
    assert value["writeUsr"] == ["denied", 30]  # EROFS
    assert value["hostEnviron"] == ["denied", 2]  # the host's pid does not exist in the PID ns
    assert value["pids"] == ["denied", 13]  # Landlock: /proc is not in the domain
    assert value["connect"] == ["denied", 1]  # seccomp refuses socket() (and no network ns)
    # fork is allowed here (max_processes=4096), but exec of anything but the interpreter is
    # refused by Landlock: the forked child exits 127.
    assert value["spawn"] == ["ok", 127 << 8]
    assert not (outside / "planted.txt").exists()
