"""The workspace disk quota: a run may not fill the disk with many files each under RLIMIT_FSIZE."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from actoviq.workflow import (
    ProcessResourceLimits,
    ProcessWorkflowExecutorBase,
    UntrustedWorkflowRequest,
    WorkflowConfigurationError,
    WorkflowResourceLimitError,
)
from actoviq.workflow._disk_quota import ENTRY_BYTES, workspace_usage

ExecutorFactory = Callable[..., ProcessWorkflowExecutorBase]
QUOTA = 2 * 1024 * 1024
RESOURCES = ProcessResourceLimits(
    cpu_seconds=5,
    address_space_bytes=256 * 1024 * 1024,
    open_files=32,
    file_size_bytes=1024 * 1024,
    workspace_bytes=QUOTA,
)

# Each file stays under RLIMIT_FSIZE (1 MiB here); only their total breaks the quota. Without
# the quota these loops run until the 15 s deadline (WorkflowTimeoutError).
MANY_FILES = (
    "def main(context):\n    i = 0\n    while True:\n"
    "        with open(f'part{i}.bin', 'wb') as handle:\n"
    "            handle.write(b'x' * 512 * 1024)\n        i += 1\n"
)
EMPTY_FILES = (
    "import os\ndef main(context):\n    os.mkdir('d')\n    i = 0\n    while True:\n"
    "        open(f'd/{i}', 'w').close()\n        i += 1\n"
)
SMALL_WRITE = (
    "def main(context):\n    with open('small.txt', 'w') as handle:\n"
    "        handle.write('ok' * 1000)\n    return 'done'\n"
)


def request(source: str, workspace: Path) -> UntrustedWorkflowRequest:
    return UntrustedWorkflowRequest(source=source, workspace_dir=str(workspace))


@pytest.mark.parametrize("source", [MANY_FILES, EMPTY_FILES], ids=["many-files", "empty-files"])
async def test_many_files_under_the_file_limit_hit_the_workspace_quota(
    make_executor: ExecutorFactory, workspace: Path, source: str
) -> None:
    async with make_executor(resource_limits=RESOURCES) as executor:
        with pytest.raises(WorkflowResourceLimitError) as caught:
            await executor.execute(request(source, workspace))
        assert executor.active_process_count == 0
    assert caught.value.resource == "disk"
    assert caught.value.code == "WORKFLOW_RESOURCE_LIMIT_EXCEEDED"
    # Stopped early: the overshoot is what the script wrote between two measurements.
    assert workspace_usage(str(workspace)) < 256 * 1024 * 1024


async def test_what_the_workspace_held_before_the_run_does_not_count(
    make_executor: ExecutorFactory, workspace: Path
) -> None:
    (workspace / "existing.bin").write_bytes(b"y" * (QUOTA + 1024 * 1024))
    async with make_executor(resource_limits=RESOURCES) as executor:
        result = await executor.execute(request(SMALL_WRITE, workspace))
    assert result.value == "done"
    assert (workspace / "small.txt").read_text() == "ok" * 1000


def test_workspace_usage_counts_every_entry_and_follows_no_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big.bin").write_bytes(b"z" * (1024 * 1024))
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    for index in range(10):
        (root / "sub" / str(index)).touch()
    (root / "link").symlink_to(outside)
    usage = workspace_usage(str(root))
    assert usage >= 12 * ENTRY_BYTES  # sub, its 10 empty files, the link
    assert usage < 1024 * 1024  # the linked directory is not walked
    assert workspace_usage(str(root), stop_above=ENTRY_BYTES) <= 3 * ENTRY_BYTES


@pytest.mark.parametrize("bad", [0, -1, 1.5, "1"])
def test_workspace_bytes_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(WorkflowConfigurationError):
        ProcessResourceLimits(workspace_bytes=bad)  # type: ignore[arg-type]
