"""Attacks on the workspace write tool: what sits at (or on the way to) the written path.

A workspace may hold entries its owner did not make with these tools (a cloned repository, a
script's output): a FIFO, a hard link to a file outside the root, a directory. ``workspace.write``
must never block on such an entry, never change a file outside the root through a hard link, and
refuse what is not a regular file with a typed tool error, leaving the entry as it was.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from actoviq.core import ActoviqError, AgentSpec, ToolCallItem, ToolResultItem
from actoviq.profiles import (
    WorkspaceBoundaryError,
    WorkspaceRegistry,
    create_profile_runtime,
    default_profile_registry,
)
from actoviq.profiles.processes import ProcessSandbox
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn

MODEL = "scripted:model"
AGENT = AgentSpec(
    id="writer", name="Writer", instructions="x", model=MODEL, tools=["workspace.write"]
)


async def _write(root: Path, path: str, content: str) -> ToolResultItem:
    registry = default_profile_registry(workspaces={"ws": root}, allow=["workspace.write"])
    call = ToolCallItem(id="c0", name="workspace.write", input={"path": path, "content": content})
    provider = ScriptedProvider([ScriptedTurn(tool_calls=[call]), "ok"], id="scripted")
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        # A bounded wait: before the fix, a FIFO target blocked the tool's thread forever.
        result = await asyncio.wait_for(runtime.run(AGENT, "go", workspace_id="ws"), 10)
    (item,) = [item for item in result.items if isinstance(item, ToolResultItem)]
    return item


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


async def test_a_hard_link_to_an_outside_file_is_replaced_not_written_through(
    root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me", encoding="utf-8")
    os.link(outside, root / "linked.txt")
    item = await _write(root, "linked.txt", "new")
    assert item.status == "success", item.output
    assert outside.read_text(encoding="utf-8") == "keep me"
    assert (root / "linked.txt").read_text(encoding="utf-8") == "new"
    assert os.stat(root / "linked.txt").st_nlink == 1


async def test_a_fifo_target_is_refused_without_blocking(root: Path) -> None:
    os.mkfifo(root / "pipe")
    item = await _write(root, "pipe", "data")
    assert item.status == "error"
    assert "regular file" in str(item.output)
    assert stat.S_ISFIFO(os.lstat(root / "pipe").st_mode)


async def test_a_directory_target_is_refused_and_kept(root: Path) -> None:
    (root / "dir").mkdir()
    (root / "dir" / "keep.txt").write_text("x", encoding="utf-8")
    item = await _write(root, "dir", "data")
    assert item.status == "error"
    assert (root / "dir" / "keep.txt").read_text(encoding="utf-8") == "x"


async def test_a_replaced_file_keeps_its_mode_and_no_temporary_file_is_left(root: Path) -> None:
    target = root / "run.sh"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o750)
    item = await _write(root, "run.sh", "new")
    assert item.status == "success", item.output
    assert target.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o750
    assert sorted(os.listdir(root)) == ["run.sh"]


async def test_new_parent_directories_are_created_inside(root: Path) -> None:
    item = await _write(root, "a/b/c.txt", "deep")
    assert item.status == "success", item.output
    assert (root / "a" / "b" / "c.txt").read_text(encoding="utf-8") == "deep"


def test_a_parent_swapped_for_an_outside_symlink_after_the_check_is_refused(
    root: Path, tmp_path: Path
) -> None:
    from actoviq.profiles.workspace import write_workspace_file

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, root / "sub")
    with pytest.raises(WorkspaceBoundaryError) as caught:
        write_workspace_file(root, "sub/x.txt", "pwned")
    assert caught.value.code == "PROFILE_WORKSPACE_DENIED"
    assert not (outside / "x.txt").exists()


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"timeout_s": float("nan")}, "PROFILE_LIMIT_INVALID"),
        ({"timeout_s": -1}, "PROFILE_LIMIT_INVALID"),
        ({"timeout_s": True}, "PROFILE_LIMIT_INVALID"),
        ({"max_output_bytes": -5}, "PROFILE_LIMIT_INVALID"),
        ({"max_output_bytes": 1.5}, "PROFILE_LIMIT_INVALID"),
        ({"test_command": "pytest -q"}, "PROFILE_DEFINITION_INVALID"),
        ({"test_command": ()}, "PROFILE_DEFINITION_INVALID"),
        ({"test_command": ("pytest", "")}, "PROFILE_DEFINITION_INVALID"),
        ({"bwrap": ""}, "PROFILE_DEFINITION_INVALID"),
    ],
)
def test_process_sandbox_settings_are_checked(options: dict[str, object], code: str) -> None:
    # Before: every one was accepted (a NaN timeout never fired; a string test command ran
    # its characters as argv).
    with pytest.raises(ActoviqError) as caught:
        ProcessSandbox(**options)  # type: ignore[arg-type]
    assert caught.value.code == code


@pytest.mark.parametrize(
    "workspaces",
    [
        {"a": None},
        {"a": ("/tmp",)},
        {"a": "/tmp\x00x"},
        {"a\x00b": "/tmp"},
        {"a": 42},
    ],
)
def test_workspace_registrations_are_checked(workspaces: dict[str, object]) -> None:
    # Before: TypeError, IndexError and ValueError escaped; a NUL id was accepted.
    with pytest.raises(WorkspaceBoundaryError) as caught:
        WorkspaceRegistry(workspaces)  # type: ignore[arg-type]
    assert caught.value.reason == "invalid"
