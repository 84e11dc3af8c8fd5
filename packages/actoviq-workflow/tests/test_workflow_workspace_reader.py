"""read_workspace_file: regular files beneath the workspace only, never through a symlink."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from actoviq.core import AbortController
from actoviq.workflow import (
    CapabilityCallContext,
    WorkflowWorkspaceError,
    _openat2,
    read_workspace_file,
)
from actoviq.workflow.workspace import _walk  # pyright: ignore[reportPrivateUsage]


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "out.txt").write_text("result")
    (workspace / "sub" / "deep.txt").write_text("deep")
    secret = tmp_path / "secret.txt"
    secret.write_text("HOST-SECRET")
    return workspace, secret


def _refused(workspace: Path, path: str) -> WorkflowWorkspaceError:
    with pytest.raises(WorkflowWorkspaceError) as caught:
        read_workspace_file(workspace, path)
    assert caught.value.code == "WORKFLOW_WORKSPACE_FILE_REFUSED"
    assert "HOST-SECRET" not in caught.value.message
    return caught.value


def test_reads_regular_files_by_relative_and_absolute_path(tree: tuple[Path, Path]) -> None:
    workspace, _ = tree
    assert read_workspace_file(workspace, "out.txt") == b"result"
    assert read_workspace_file(workspace, "sub/deep.txt") == b"deep"
    assert read_workspace_file(workspace, "./sub//deep.txt") == b"deep"
    assert read_workspace_file(str(workspace), str(workspace / "out.txt")) == b"result"


def test_refuses_a_symlink_to_a_host_secret(tree: tuple[Path, Path]) -> None:
    workspace, secret = tree
    (workspace / "link").symlink_to(secret)
    assert _refused(workspace, "link").reason == "symlink"


def test_refuses_a_symlinked_directory_component(tree: tuple[Path, Path]) -> None:
    workspace, secret = tree
    (workspace / "dir").symlink_to(secret.parent)
    assert _refused(workspace, "dir/secret.txt").reason == "symlink"


def test_refuses_a_relative_symlink_inside_the_workspace_too(tree: tuple[Path, Path]) -> None:
    workspace, _ = tree
    (workspace / "alias").symlink_to("out.txt")
    assert _refused(workspace, "alias").reason == "symlink"


def test_refuses_paths_outside(tree: tuple[Path, Path]) -> None:
    workspace, secret = tree
    assert _refused(workspace, "../secret.txt").reason == "outside"
    assert _refused(workspace, "sub/../../secret.txt").reason == "outside"
    assert _refused(workspace, str(secret)).reason == "outside"
    assert _refused(workspace, "out\x00.txt").reason == "outside"


def test_a_fifo_is_refused_without_blocking(tree: tuple[Path, Path]) -> None:
    workspace, _ = tree
    os.mkfifo(workspace / "pipe")
    done = threading.Event()
    errors: list[WorkflowWorkspaceError] = []

    def attempt() -> None:
        try:
            read_workspace_file(workspace, "pipe")
        except WorkflowWorkspaceError as error:
            errors.append(error)
        done.set()

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    assert done.wait(5), "read_workspace_file blocked on a FIFO"
    thread.join()
    assert [error.reason for error in errors] == ["not-regular"]


def test_refuses_directories_devices_missing_and_large_files(tree: tuple[Path, Path]) -> None:
    workspace, _ = tree
    assert _refused(workspace, "sub").reason == "not-regular"
    assert _refused(workspace, ".").reason == "not-regular"
    assert _refused(workspace, "nope.txt").reason == "missing"
    assert _refused(workspace, "out.txt/x").reason == "missing"
    with pytest.raises(WorkflowWorkspaceError) as caught:
        read_workspace_file(workspace, "out.txt", max_bytes=3)
    assert caught.value.reason == "too-large"


def test_a_device_node_is_never_opened(tree: tuple[Path, Path]) -> None:
    workspace, _ = tree
    (workspace / "null").symlink_to("/dev/null")
    assert _refused(workspace, "null").reason == "symlink"
    if os.geteuid() == 0:
        os.mknod(workspace / "zero", 0o600 | 0o020000, os.makedev(1, 5))  # char device
        assert _refused(workspace, "zero").reason == "not-regular"


def test_the_walk_fallback_refuses_the_same_things(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, secret = tree
    (workspace / "link").symlink_to(secret)
    (workspace / "dir").symlink_to(secret.parent)
    monkeypatch.setattr(_openat2, "_missing", [True])
    assert read_workspace_file(workspace, "sub/deep.txt") == b"deep"
    assert _refused(workspace, "link").reason == "symlink"
    assert _refused(workspace, "dir/secret.txt").reason == "symlink"
    assert _refused(workspace, "nope/x").reason == "missing"
    root = os.open(workspace, os.O_PATH | os.O_DIRECTORY)
    try:
        target = _walk(root, "sub/deep.txt", "sub/deep.txt")
        os.close(target)
    finally:
        os.close(root)


def test_capability_context_reads_from_its_workspace(tree: tuple[Path, Path]) -> None:
    workspace, secret = tree
    (workspace / "link").symlink_to(secret)
    signal = AbortController().signal
    context = CapabilityCallContext(
        name="x", trust="untrusted", signal=signal, workspace_dir=str(workspace)
    )
    assert context.read_workspace_file("out.txt") == b"result"
    with pytest.raises(WorkflowWorkspaceError):
        context.read_workspace_file("link")
    bare = CapabilityCallContext(name="x", trust="trusted", signal=signal)
    with pytest.raises(WorkflowWorkspaceError):
        bare.read_workspace_file("out.txt")


def test_refuses_a_hard_link_to_a_host_file(tree: tuple[Path, Path]) -> None:
    # A pre-existing hard link is another name for the host file's inode: no symlink to refuse,
    # no path outside the workspace, yet reading it would read the host secret.
    workspace, secret = tree
    os.link(secret, workspace / "innocent.txt")
    os.link(secret, workspace / "sub" / "also.txt")
    assert _refused(workspace, "innocent.txt").reason == "hard-link"
    assert _refused(workspace, str(workspace / "sub" / "also.txt")).reason == "hard-link"


def test_refuses_two_names_for_one_workspace_file_as_well(tree: tuple[Path, Path]) -> None:
    # From inside, the reader cannot tell a second name in the workspace from one outside.
    workspace, _ = tree
    os.link(workspace / "out.txt", workspace / "copy.txt")
    assert _refused(workspace, "out.txt").reason == "hard-link"
    os.unlink(workspace / "copy.txt")
    assert read_workspace_file(workspace, "out.txt") == b"result"
