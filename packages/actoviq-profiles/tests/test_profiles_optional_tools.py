"""Optional tools the profiles name, bound by the default registry (crawl, as-tool, ...)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from actoviq.core import AgentSpec, RunResult, ToolCallItem, ToolResultItem
from actoviq.profiles import (
    ProcessSandbox,
    ProcessSandboxUnavailableError,
    ResearchDocument,
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import InMemoryCheckpointStore, InterruptionDecision

MODEL = "scripted:model"


def _call(name: str, **args: Any) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ToolCallItem(id=f"call-{name}", name=name, input=args)])


def _results(result: RunResult[Any]) -> list[ToolResultItem]:
    return [item for item in result.items if isinstance(item, ToolResultItem)]


async def test_research_crawl_follows_registered_links_only() -> None:
    documents = [
        ResearchDocument(
            id="a",
            title="A",
            url="https://example.org/a",
            text="See https://example.org/b. Also https://elsewhere.invalid/x (not registered).",
        ),
        ResearchDocument(
            id="b", title="B", url="https://example.org/b", text="Then (https://example.org/c)"
        ),
        ResearchDocument(id="c", title="C", url="https://example.org/c", text="The end."),
        ResearchDocument(id="d", title="D", url="https://example.org/d", text="Unlinked."),
    ]
    provider = ScriptedProvider(
        [_call("research.crawl", source="a", max_pages=10), "crawled"], id="scripted"
    )
    registry = default_profile_registry(sources=documents)
    profile = build_profile("research", model=MODEL, tools=["research.crawl"])
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        result = await run_profile(runtime, profile, "Follow the trail")
    (crawled,) = _results(result)
    assert crawled.status == "success"
    assert isinstance(crawled.output, dict)
    assert [page["id"] for page in crawled.output["pages"]] == ["a", "b", "c"]  # type: ignore[index, union-attr]
    assert result.metadata is not None
    assert [c["id"] for c in result.metadata["citations"]] == ["a", "b", "c"]  # type: ignore[index, union-attr]
    assert [d.id for d in registry.sources.crawl("a", max_pages=2)] == ["a", "b"]


async def test_agent_as_tool_runs_a_spawnable_agent_and_keeps_the_supervisor_in_charge() -> None:
    helper = AgentSpec(id="helper", name="Helper", instructions="Help.", model=MODEL)
    provider = ScriptedProvider(
        [
            _call("agent.as-tool", agent="helper", input="What is 2+2?"),
            "four",
            _call("agent.as-tool", agent="nobody", input="hello?"),
            "the helper said four",
        ],
        id="scripted",
    )
    registry = default_profile_registry(spawnable_agents=[helper], allow=["agent.*"])
    profile = build_profile("supervisor", model=MODEL, tools=["agent.as-tool"])
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        result = await run_profile(runtime, profile, "Ask the helper")
    answered, refused = _results(result)
    assert answered.status == "success"
    assert isinstance(answered.output, dict)
    assert answered.output["output"] == "four"
    assert answered.output["agentId"] == "helper" and answered.output["status"] == "completed"
    assert refused.status == "error"
    assert "not spawnable" in str(refused.output)
    assert result.output == "the helper said four"
    # the helper ran as a child run: its request carried the question, not the supervisor's chat
    helper_request = provider.requests[1]
    texts = [getattr(item, "text", "") for item in helper_request.input]
    assert "What is 2+2?" in texts and "Ask the helper" not in texts
    assert registry.orchestrator is not None and registry.orchestrator.open_scopes == 0


async def test_workflow_approval_waits_for_a_human_then_continues() -> None:
    provider = ScriptedProvider(
        [_call("workflow.approval", question="Ship the release?"), "shipped"], id="scripted"
    )
    registry = default_profile_registry()
    profile = build_profile("workflow", model=MODEL, tools=["workflow.approval"])
    async with create_profile_runtime(
        registry,
        models=ModelRegistry([provider]),
        checkpoints=InMemoryCheckpointStore(),
        agents=[profile.spec],
    ) as runtime:
        paused = await run_profile(runtime, profile, "Release")
        assert paused.status == "interrupted"
        (gate,) = paused.interruptions
        assert len(provider.calls) == 1
        done = await runtime.resume(paused.state, [InterruptionDecision.approve(gate.id)]).result()
    assert done.status == "completed"
    assert done.output == "shipped"
    (approved,) = _results(done)
    assert approved.output == {
        "approved": True,
        "question": "Ship the release?",
        "interruptionId": gate.id,
    }


async def test_a_denied_workflow_approval_is_a_denied_tool_call() -> None:
    provider = ScriptedProvider(
        [_call("workflow.approval", question="Ship?"), "not shipped"], id="scripted"
    )
    profile = build_profile("workflow", model=MODEL, tools=["workflow.approval"])
    async with create_profile_runtime(
        default_profile_registry(),
        models=ModelRegistry([provider]),
        checkpoints=InMemoryCheckpointStore(),
        agents=[profile.spec],
    ) as runtime:
        paused = await run_profile(runtime, profile, "Release")
        (gate,) = paused.interruptions
        done = await runtime.resume(paused.state, [InterruptionDecision.reject(gate.id)]).result()
    (denied,) = _results(done)
    assert denied.status != "success"
    assert done.output == "not shipped"


def _sandbox_works() -> bool:
    """Whether bubblewrap starts here (installed, and the kernel allows its namespaces)."""
    try:
        argv = ProcessSandbox().argv(tempfile.gettempdir(), ["/bin/true"])
        return subprocess.run(argv, capture_output=True, timeout=20, check=False).returncode == 0
    except (ProcessSandboxUnavailableError, OSError, subprocess.SubprocessError):
        return False


needs_bwrap = pytest.mark.skipif(not _sandbox_works(), reason="bubblewrap cannot start here")


@needs_bwrap
async def test_process_tools_run_sandboxed_in_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "test_ok.py").write_text(
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n"
        "        self.assertEqual(1 + 1, 2)\n",
        encoding="utf-8",
    )
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    provider = ScriptedProvider(
        [
            ScriptedTurn(
                tool_calls=[
                    ToolCallItem(
                        id="sh",
                        name="workspace.shell",
                        input={
                            "command": f"echo made > made.txt; cat made.txt; echo x > {outside}"
                        },
                    ),
                    ToolCallItem(id="git", name="workspace.git", input={"args": ["init", "-q"]}),
                    ToolCallItem(id="test", name="workspace.test", input={}),
                ]
            ),
            "done",
        ],
        id="scripted",
    )
    registry = default_profile_registry(workspaces={"repo": tmp_path}, allow=["workspace.*"])
    profile = build_profile(
        "coding", model=MODEL, tools=["workspace.shell", "workspace.git", "workspace.test"]
    )
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        result = await run_profile(runtime, profile, "build", workspace_id="repo")
    shell, git, test = (item.output for item in _results(result))
    assert isinstance(shell, dict) and isinstance(git, dict) and isinstance(test, dict)
    assert shell["stdout"] == "made\n"
    assert shell["exitCode"] != 0  # the write outside the workspace failed: read-only root
    assert (tmp_path / "made.txt").read_text(encoding="utf-8") == "made\n"
    assert not outside.exists()
    assert git["exitCode"] == 0 and (tmp_path / ".git").is_dir()
    assert test["exitCode"] == 0, test
    assert "OK" in str(test["stderr"])


@needs_bwrap
async def test_process_tools_need_a_policy_or_an_approval_and_a_writable_workspace(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider(
        [_call("workspace.shell", command="touch x"), "asked"], id="scripted"
    )
    profile = build_profile("coding", model=MODEL, tools=["workspace.shell"])
    registry = default_profile_registry(workspaces={"repo": tmp_path})
    async with create_profile_runtime(
        registry, models=ModelRegistry([provider]), checkpoints=InMemoryCheckpointStore()
    ) as runtime:
        paused = await run_profile(runtime, profile, "touch", workspace_id="repo")
    assert paused.status == "interrupted"
    assert not (tmp_path / "x").exists()

    provider = ScriptedProvider(
        [_call("workspace.shell", command="touch x"), "refused"], id="scripted"
    )
    read_only = default_profile_registry(
        workspaces={"repo": (tmp_path, "read-only")}, allow=["workspace.*"]
    )
    async with create_profile_runtime(read_only, models=ModelRegistry([provider])) as runtime:
        result = await run_profile(runtime, profile, "touch", workspace_id="repo")
    (denied,) = _results(result)
    assert denied.status != "success"
    assert not (tmp_path / "x").exists()


async def test_process_tools_refuse_to_run_without_the_sandbox(tmp_path: Path) -> None:
    sandbox = ProcessSandbox(bwrap=None)
    sandbox.bwrap = None
    with pytest.raises(ProcessSandboxUnavailableError):
        await sandbox.run(str(tmp_path), ["/bin/true"])


@needs_bwrap
async def test_a_command_past_its_timeout_is_killed(tmp_path: Path) -> None:
    # the behaviour under test is time passing: a 0.3 s limit on a command that would sleep 30 s
    sandbox = ProcessSandbox(timeout_s=0.3, max_output_bytes=4)
    outcome = await sandbox.run(str(tmp_path), ["/bin/sh", "-c", "echo 123456789; sleep 30"])
    assert outcome["timedOut"] is True
    assert outcome["exitCode"] == -9
    capped = await sandbox.run(str(tmp_path), ["/bin/sh", "-c", "echo 123456789"])
    assert capped == {
        "exitCode": 0,
        "stdout": "1234",
        "stderr": "",
        "truncated": True,
        "timedOut": False,
    }
