"""workspace.boundary, the workspace tools and policy.permissions on real files."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, cast

import pytest

from actoviq.core import AbortSignal, AgentSpec, RunResult, ToolCallItem, ToolResultItem
from actoviq.profiles import (
    WorkspaceBoundaryError,
    WorkspaceRegistry,
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.profiles.workspace import workspace_tools
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, InterruptionDecision, ToolExecutionContext, tool

MODEL = "scripted:model"


def _calls(*calls: tuple[str, dict[str, Any]]) -> ScriptedTurn:
    return ScriptedTurn(
        tool_calls=[
            ToolCallItem(id=f"c{n}", name=name, input=args) for n, (name, args) in enumerate(calls)
        ]
    )


def _results(result: RunResult[Any]) -> list[ToolResultItem]:
    return [item for item in result.items if isinstance(item, ToolResultItem)]


def _denied(item: ToolResultItem) -> bool:
    return (
        item.status == "error" and isinstance(item.output, dict) and item.output["kind"] == "denied"
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hi')\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("top secret", encoding="utf-8")
    os.symlink(tmp_path / "secret.txt", root / "escape.txt")
    os.symlink(tmp_path, root / "up")
    os.symlink(root / "src" / "main.py", root / "inside.py")
    return root


def test_registry_resolves_inside_and_refuses_escapes(workspace: Path) -> None:
    registry = WorkspaceRegistry({"ws": workspace})
    assert registry.resolve("ws", "src/main.py") == (workspace / "src" / "main.py").resolve()
    assert registry.resolve("ws", "inside.py") == (workspace / "src" / "main.py").resolve()
    assert registry.resolve("ws", "new/dir/file.txt", write=True).name == "file.txt"
    for path in (
        "../secret.txt",
        "escape.txt",
        "up/secret.txt",
        str(workspace.parent),
        "/etc/passwd",
    ):
        with pytest.raises(WorkspaceBoundaryError) as info:
            registry.resolve("ws", path)
        assert info.value.reason == "outside"
        assert info.value.code == "PROFILE_WORKSPACE_DENIED"
    with pytest.raises(WorkspaceBoundaryError) as unknown:
        registry.resolve("nope", "a.txt")
    assert unknown.value.reason == "unknown"
    with pytest.raises(WorkspaceBoundaryError) as invalid:
        registry.resolve("ws", "a\x00b")
    assert invalid.value.reason == "invalid"


def test_read_only_workspace_refuses_writes(workspace: Path) -> None:
    registry = WorkspaceRegistry({"ro": (workspace, "read-only")})
    assert registry.resolve("ro", "src/main.py").exists()
    with pytest.raises(WorkspaceBoundaryError) as info:
        registry.resolve("ro", "src/main.py", write=True)
    assert info.value.reason == "read-only"


async def test_coding_profile_reads_writes_and_lists_inside(workspace: Path) -> None:
    provider = ScriptedProvider(
        [
            _calls(
                ("workspace.read", {"path": "src/main.py"}),
                ("workspace.write", {"path": "src/new.py", "content": "x = 1\n"}),
                ("workspace.list", {"path": "src"}),
            ),
            "done",
        ],
        id="scripted",
    )
    registry = default_profile_registry(workspaces={"ws": workspace}, allow=["workspace.write"])
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        result = await run_profile(
            runtime,
            build_profile("coding", model=MODEL, tools=["workspace.list"]),
            "edit",
            workspace_id="ws",
        )
    read, write, listing = _results(result)
    assert read.status == "success"
    assert read.output["content"] == "print('hi')\n"  # type: ignore[index]
    assert write.status == "success"
    assert (workspace / "src" / "new.py").read_text(encoding="utf-8") == "x = 1\n"
    names = [entry["name"] for entry in listing.output["entries"]]  # type: ignore[index]
    assert names == ["main.py", "new.py"]


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("workspace.read", {"path": "../secret.txt"}),
        ("workspace.read", {"path": "escape.txt"}),
        ("workspace.read", {"path": "up/secret.txt"}),
        ("workspace.write", {"path": "escape.txt", "content": "pwned"}),
        ("workspace.write", {"path": "../secret.txt", "content": "pwned"}),
        ("workspace.list", {"path": ".."}),
    ],
)
async def test_escapes_are_denied_before_the_tool_runs(
    workspace: Path, name: str, args: dict[str, Any]
) -> None:
    provider = ScriptedProvider([_calls((name, args)), "ok"], id="scripted")
    registry = default_profile_registry(workspaces={"ws": workspace}, allow=["workspace.write"])
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        result = await run_profile(
            runtime,
            build_profile("coding", model=MODEL, tools=["workspace.list"]),
            "go",
            workspace_id="ws",
        )
    (denied,) = _results(result)
    assert _denied(denied)
    assert "outside workspace" in str(denied.output)
    assert (workspace.parent / "secret.txt").read_text(encoding="utf-8") == "top secret"


async def test_tools_contain_even_without_the_middleware(workspace: Path) -> None:
    registry = default_profile_registry(workspaces={"ws": workspace})
    provider = ScriptedProvider(
        [_calls(("workspace.read", {"path": "escape.txt"})), "ok"], id="scripted"
    )
    agent = AgentSpec(
        id="plain", name="Plain", instructions="x", model=MODEL, tools=["workspace.read"]
    )
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        result = await runtime.run(agent, "go", workspace_id="ws")
    (failed,) = _results(result)
    assert failed.status == "error"
    assert "top secret" not in str(failed.output)


async def test_read_only_workspace_write_denied(workspace: Path) -> None:
    registry = default_profile_registry(
        workspaces={"ro": (workspace, "read-only")}, allow=["workspace.write"]
    )
    provider = ScriptedProvider(
        [_calls(("workspace.write", {"path": "a.txt", "content": "x"})), "ok"], id="scripted"
    )
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        result = await run_profile(
            runtime, build_profile("coding", model=MODEL), "go", workspace_id="ro"
        )
    (denied,) = _results(result)
    assert _denied(denied)
    assert "read-only" in str(denied.output)
    assert not (workspace / "a.txt").exists()


async def test_approval_or_policy_asks_then_writes_after_approval(workspace: Path) -> None:
    provider = ScriptedProvider(
        [_calls(("workspace.write", {"path": "a.txt", "content": "approved"})), "written"],
        id="scripted",
    )
    registry = default_profile_registry(workspaces={"ws": workspace})
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        first = await run_profile(
            runtime, build_profile("coding", model=MODEL), "go", workspace_id="ws"
        )
        assert first.status == "interrupted"
        assert not (workspace / "a.txt").exists()
        (interruption,) = first.interruptions
        assert interruption.kind == "approval"
        handle = runtime.resume(
            first.state, [InterruptionDecision(interruption_id=interruption.id, outcome="approve")]
        )
        second = await handle.result()
    assert second.status == "completed"
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "approved"


async def test_approval_or_policy_without_an_approval_path_denies(workspace: Path) -> None:
    provider = ScriptedProvider(
        [_calls(("workspace.write", {"path": "a.txt", "content": "x"})), "ok"], id="scripted"
    )
    registry = default_profile_registry(workspaces={"ws": workspace})
    async with AgentRuntime(models=ModelRegistry([provider])) as runtime:  # no tool_policy
        registry.install(runtime)
        result = await run_profile(
            runtime, build_profile("coding", model=MODEL), "go", workspace_id="ws"
        )
    (denied,) = _results(result)
    assert _denied(denied)
    assert "no approval path" in str(denied.output)
    assert not (workspace / "a.txt").exists()


async def test_deny_by_default_and_deny_rules() -> None:
    ran: list[str] = []

    @tool(name="send_email", effect="side-effect")
    def send_email(to: str) -> str:
        """Send an email.

        Args:
            to: the recipient.
        """
        ran.append(to)
        return "sent"

    @tool(name="lookup", effect="read")
    def lookup(q: str) -> str:
        """Look something up.

        Args:
            q: the query.
        """
        return f"found {q}"

    provider = ScriptedProvider(
        [_calls(("send_email", {"to": "a@example.org"}), ("lookup", {"q": "x"})), "ok"],
        id="scripted",
    )
    registry = default_profile_registry(deny=["rm_*"])
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        runtime.tools.register(send_email)
        runtime.tools.register(lookup)
        chat = build_profile(
            "chat", model=MODEL, tools=["send_email", "lookup"], middleware=["policy.permissions"]
        )
        result = await run_profile(runtime, chat, "go")
    email, found = _results(result)
    assert _denied(email)
    assert "denies by default" in str(email.output)
    assert found.status == "success"
    assert ran == []


async def test_read_refuses_fifos_and_oversized_files_without_blocking(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    (workspace / "big.txt").write_text("x" * 64, encoding="utf-8")
    registry = WorkspaceRegistry({"ws": workspace})
    read = next(
        t for t in workspace_tools(registry, max_read_bytes=16) if t.name == "workspace.read"
    )
    provider = ScriptedProvider(
        [
            _calls(("workspace.read", {"path": "pipe"}), ("workspace.read", {"path": "big.txt"})),
            "ok",
        ],
        id="scripted",
    )
    agent = AgentSpec(id="reader", name="Reader", instructions="x", model=MODEL, tools=[read.name])
    async with AgentRuntime(models=ModelRegistry([provider]), tools=[read]) as runtime:
        result = await asyncio.wait_for(runtime.run(agent, "go", workspace_id="ws"), timeout=30)
    pipe, big = _results(result)
    assert pipe.status == "error"
    assert "not a regular file" in str(pipe.output)
    assert big.status == "error"
    assert "larger than 16 bytes" in str(big.output)


class _StaleRegistry(WorkspaceRegistry):
    """Answers every resolve with the path checked before the swap (the race window)."""

    def __init__(self, root: Path, stale: Path) -> None:
        super().__init__({"ws": root})
        self.stale = stale

    def resolve(self, workspace_id: str | None, path: str, *, write: bool = False) -> Path:
        return self.stale


async def test_a_symlink_swapped_in_after_the_check_is_not_followed(
    workspace: Path, tmp_path: Path
) -> None:
    checked = WorkspaceRegistry({"ws": workspace}).resolve("ws", "src/main.py")  # inside
    (workspace / "src" / "main.py").unlink()
    os.symlink(tmp_path / "secret.txt", workspace / "src" / "main.py")  # swapped afterwards
    registry = _StaleRegistry(workspace, checked)
    read = next(t for t in workspace_tools(registry) if t.name == "workspace.read")
    ctx = ToolExecutionContext(run_id="r", call_id="c", signal=AbortSignal(), workspace_id="ws")
    with pytest.raises(WorkspaceBoundaryError, match="symbolic link") as info:
        await cast(
            Awaitable[object],
            read.execute(ctx, read.descriptor.input.parse({"path": "src/main.py"})),
        )
    assert info.value.reason == "symlink"
