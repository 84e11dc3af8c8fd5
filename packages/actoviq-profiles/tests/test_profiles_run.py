"""assert_profile_runtime / run_profile: all six profiles on one runtime (§7.5 rows 57 and 64)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.profiles import (
    AGENT_PROFILE_KINDS,
    ProfileRuntimeConfigurationError,
    ResearchDocument,
    assert_profile_runtime,
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
    stream_profile,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, InMemoryCheckpointStore

MODEL = "profile-fake:model"


async def test_row_57_six_profiles_in_order_on_one_runtime(tmp_path: Path) -> None:
    provider = ScriptedProvider([f"profile-{n}" for n in range(1, 7)], id="profile-fake")
    registry = default_profile_registry(workspaces={"ws": tmp_path})
    async with create_profile_runtime(
        registry, models=ModelRegistry([provider]), checkpoints=InMemoryCheckpointStore()
    ) as runtime:
        outputs: list[str] = []
        for kind in AGENT_PROFILE_KINDS:
            profile = build_profile(kind, model=MODEL)
            result = await run_profile(
                runtime, profile, f"run {kind}", workspace_id="ws" if kind == "coding" else None
            )
            outputs.append(result.output)
            if kind == "research":
                assert result.metadata == {"citations": [], "citationsMissing": True}
    assert outputs == [f"profile-{n}" for n in range(1, 7)]
    assert len(provider.calls) == 6
    assert {getattr(call.request.model, "provider_id", None) for call in provider.calls} == {
        "profile-fake"
    }


async def test_six_profiles_end_to_end_with_working_bindings(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("hello", encoding="utf-8")
    helper = AgentSpec(id="helper", name="Helper", instructions="Help.", model=MODEL)
    registry = default_profile_registry(
        workspaces={"ws": tmp_path},
        allow=["workspace.write", "artifacts.write", "agent.spawn"],
        sources=[
            ResearchDocument(
                id="py", title="Python", url="https://example.org/python", text="Python language"
            )
        ],
        spawnable_agents=[helper],
    )
    turns = [
        "profile-1",
        ScriptedTurn(
            tool_calls=[
                ToolCallItem(id="c1", name="workspace.read", input={"path": "README.md"}),
                ToolCallItem(
                    id="c2", name="workspace.write", input={"path": "out.txt", "content": "done"}
                ),
            ]
        ),
        "profile-2",
        ScriptedTurn(
            tool_calls=[
                ToolCallItem(id="r1", name="research.search", input={"query": "python"}),
                ToolCallItem(
                    id="r2", name="artifacts.write", input={"name": "notes", "content": "x" * 10}
                ),
            ]
        ),
        "profile-3",
        "profile-4",
        ScriptedTurn(
            tool_calls=[
                ToolCallItem(id="s1", name="agent.spawn", input={"agent": "helper", "task": "t"})
            ]
        ),
        "child-done",
        "profile-5",
        "profile-6",
    ]
    provider = ScriptedProvider(turns, id="profile-fake")
    async with create_profile_runtime(
        registry, models=ModelRegistry([provider]), checkpoints=InMemoryCheckpointStore()
    ) as runtime:
        results = [
            await run_profile(
                runtime,
                build_profile(kind, model=MODEL),
                f"run {kind}",
                workspace_id="ws" if kind == "coding" else None,
            )
            for kind in AGENT_PROFILE_KINDS
        ]
    assert [r.output for r in results] == [f"profile-{n}" for n in range(1, 7)]
    assert all(r.status == "completed" for r in results)
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "done"
    research = results[2].metadata
    assert research is not None
    assert research["citations"] == [
        {"id": "py", "title": "Python", "url": "https://example.org/python"}
    ]
    spawned = [item for item in results[4].items if getattr(item, "call_id", None) == "s1"]
    assert spawned and spawned[0].output["output"] == "child-done"  # type: ignore[union-attr]
    assert len(provider.calls) == 10


async def test_row_64_bare_runtime_lists_everything_missing() -> None:
    coding = build_profile("coding", model=MODEL)
    async with AgentRuntime(models=ModelRegistry([])) as bare:
        with pytest.raises(ProfileRuntimeConfigurationError) as info:
            assert_profile_runtime(coding, bare, {})
    message = str(info.value)
    assert re.search(
        r"services: workspace.*middleware: policy.permissions.*tools: workspace.read.*workspaceId",
        message,
    )
    assert message == (
        'Profile "coding" is missing runtime composition (services: workspace; middleware: '
        "policy.permissions, workspace.boundary; tools: workspace.read, workspace.write; "
        "workspaceId)."
    )
    error = info.value
    assert error.code == "PROFILE_RUNTIME_CONFIGURATION"
    assert error.missing_services == ("workspace",)
    assert error.missing_tools == ("workspace.read", "workspace.write")
    assert error.missing_workspace_id is True


@pytest.mark.parametrize("kind", AGENT_PROFILE_KINDS)
async def test_missing_dependency_refused_with_zero_provider_calls(kind: str) -> None:
    provider = ScriptedProvider(["never"], id="profile-fake")
    profile = build_profile(kind, model=MODEL, middleware=["custom.audit"])
    async with AgentRuntime(models=ModelRegistry([provider])) as bare:
        with pytest.raises(ProfileRuntimeConfigurationError, match=r"custom\.audit"):
            await run_profile(bare, profile, "hello", workspace_id="ws")
        with pytest.raises(ProfileRuntimeConfigurationError):
            stream_profile(bare, profile, "hello", workspace_id="ws")
    assert provider.calls == []


async def test_workspace_id_blank_is_missing_and_only_coding_needs_it(tmp_path: Path) -> None:
    registry = default_profile_registry(workspaces={"ws": tmp_path})
    async with create_profile_runtime(
        registry, models=ModelRegistry([]), checkpoints=InMemoryCheckpointStore()
    ) as runtime:
        with pytest.raises(ProfileRuntimeConfigurationError, match=r"\(workspaceId\)"):
            assert_profile_runtime(build_profile("coding"), runtime, {"workspaceId": "  "})
        assert_profile_runtime(build_profile("coding"), runtime, workspace_id="ws")
        for kind in AGENT_PROFILE_KINDS:
            if kind != "coding":
                assert_profile_runtime(build_profile(kind), runtime)


async def test_checkpoints_service_only_with_a_checkpoint_store() -> None:
    registry = default_profile_registry()
    async with create_profile_runtime(registry, models=ModelRegistry([])) as runtime:
        with pytest.raises(ProfileRuntimeConfigurationError, match="services: checkpoints"):
            assert_profile_runtime(build_profile("workflow"), runtime)
        with pytest.raises(ProfileRuntimeConfigurationError, match=r"services: checkpoints\)"):
            assert_profile_runtime(build_profile("background"), runtime)


async def test_create_profile_runtime_registers_profile_agents_after_install() -> None:
    background = build_profile("background", model=MODEL)
    runtime = create_profile_runtime(
        default_profile_registry(),
        models=ModelRegistry([]),
        checkpoints=InMemoryCheckpointStore(),
        agents=[background.spec],
    )
    async with runtime:
        assert runtime.get_agent(background.spec.id) is background.spec
        assert_profile_runtime(background, runtime)
