"""build_profile, inspect_profile and the consistency rule (spec 04 §4.1-4.3, §7.5 rows 58-65)."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from actoviq.core import RefSpec
from actoviq.profiles import (
    AGENT_PROFILE_KINDS,
    PROFILE_METADATA_KEY,
    AgentProfileConfig,
    BuiltAgentProfile,
    ProfileConsistencyError,
    ProfileDefinitionError,
    ProfileLimitError,
    ProfileSecurity,
    UnknownProfileKindError,
    build_profile,
    check_profile_consistency,
    inspect_profile,
    profile_config_from_json,
)


def _wire(profile: BuiltAgentProfile) -> dict[str, Any]:
    metadata = profile.spec.metadata
    assert metadata is not None
    return metadata[PROFILE_METADATA_KEY]  # type: ignore[return-value]


def test_kinds_in_reference_order() -> None:
    assert AGENT_PROFILE_KINDS == (
        "chat",
        "coding",
        "research",
        "workflow",
        "supervisor",
        "background",
    )


def test_coding_row_58() -> None:
    profile = build_profile("coding")
    config = profile.config
    assert config.workspace.to_json() == {
        "required": True,
        "access": "read-write",
        "containment": "workspace-root",
        "symlinkEscape": "deny",
        "resumePolicy": "same-workspace",
    }
    assert "workspace" in config.dependencies.required_services
    assert {"policy.permissions", "workspace.boundary"} <= set(
        config.dependencies.required_middleware_ids
    )
    assert {"workspace.read", "workspace.write"} <= set(config.dependencies.required_tool_ids)
    security = config.security.to_json()
    assert security["permissionPolicyRef"] == "policy.permissions"
    assert security["sideEffects"] == "approval-or-policy"
    assert security["childPolicy"] == "inherit-stricter"
    assert profile.spec.id == "coding-agent"
    assert profile.spec.name == "Coding Agent"
    assert [r.id for r in config.dependencies.optional_tools] == [
        "workspace.shell",
        "workspace.test",
        "workspace.git",
    ]


def test_research_row_59() -> None:
    profile = build_profile("research")
    deps = profile.config.dependencies
    assert "artifacts" in deps.required_services
    assert {"research.search", "artifacts.write"} <= set(deps.required_tool_ids)
    expected = {
        "artifacts": "required",
        "citations": "required",
        "citationsMetadataKey": "citations",
        "artifactItemType": "artifact_ref",
    }
    assert profile.config.result.to_json() == expected
    assert _wire(profile)["result"] == expected
    assert profile.config.security.process == "disabled"


def test_workflow_row_60() -> None:
    profile = build_profile("workflow")
    orchestration = profile.config.orchestration.to_json()
    assert orchestration["mode"] == "workflow"
    assert orchestration["refs"] == ["WorkflowGraph", "workflow.reducer"]
    assert orchestration["deterministic"] is True
    assert orchestration["reducerRequired"] is True
    assert orchestration["durable"] is False
    assert orchestration["checkpointServiceId"] == "checkpoints"
    assert orchestration["childBudget"] is None
    assert "checkpoints" in profile.config.dependencies.required_services
    assert "workflow.determinism" in profile.config.dependencies.required_middleware_ids


def test_supervisor_row_61_budget_is_capped_by_limits() -> None:
    profile = build_profile(
        "supervisor",
        limits={
            "maxSubagentDepth": 2,
            "maxSubagentFanout": 3,
            "maxTotalTokens": 250_000,
            "maxCostUsd": 20,
        },
    )
    orchestration = profile.config.orchestration
    assert orchestration.child_budget is not None
    assert orchestration.child_budget.to_json() == {
        "maxChildRuns": 3,
        "maxDepth": 2,
        "maxTotalTokens": 250_000,
        "maxCostUsd": 20,
    }
    assert orchestration.refs == ("ChildRunner", "agentAsTool", "createHandoff")
    assert orchestration.child_failure_policy == "fail-fast"
    assert profile.config.security.child_policy == "inherit-stricter"
    assert "orchestration" in profile.config.dependencies.required_services
    assert "agent.spawn" in profile.config.dependencies.required_tool_ids
    uncapped = build_profile("supervisor").config.orchestration.child_budget
    assert uncapped is not None
    assert uncapped.to_json() == {
        "maxChildRuns": 8,
        "maxDepth": 3,
        "maxTotalTokens": 1_000_000,
        "maxCostUsd": 100,
    }


def test_background_row_62() -> None:
    profile = build_profile("background")
    deps = profile.config.dependencies
    assert {"checkpoints", "background"} <= set(deps.required_services)
    assert "background.checkpoint" in deps.required_middleware_ids
    orchestration = profile.config.orchestration
    assert orchestration.mode == "background"
    assert orchestration.refs == ("BackgroundChildManager", "DurableChildStore")
    assert orchestration.durable is True
    assert orchestration.checkpoint_service_id == "checkpoints"
    assert orchestration.child_failure_policy == "fail-fast"
    assert isinstance(profile.spec.instructions, str)
    assert "idempotent" in profile.spec.instructions


def test_chat_row_63_and_opt_ins() -> None:
    chat = build_profile("chat")
    assert chat.spec.tools == ()
    assert chat.spec.middleware == ()
    assert chat.config.dependencies.required_services == ()
    assert chat.config.opt_ins.to_json() == {"memory": False, "skills": False, "compaction": False}
    full = build_profile("chat", optIns={"memory": True, "skills": True, "compaction": True})
    assert full.config.dependencies.required_services == ("memory", "skills", "compaction")
    assert full.spec.middleware == ("profile.memory", "profile.skills", "profile.compaction")
    assert full.config.dependencies.optional_services == ()
    assert full.config.dependencies.optional_middleware == ()
    truthy = build_profile("chat", opt_ins={"memory": 1, "skills": "yes", "compaction": True})
    assert truthy.config.opt_ins.to_json() == {
        "memory": False,
        "skills": False,
        "compaction": True,
    }


def test_row_65_metadata_copied_and_everything_frozen() -> None:
    caller: dict[str, Any] = {"team": {"name": "a"}}
    profile = build_profile("coding", metadata=caller)
    caller["team"]["name"] = "changed"
    caller["extra"] = 1
    assert profile.spec.metadata is not None
    assert profile.spec.metadata["team"] == {"name": "a"}
    assert "extra" not in profile.spec.metadata
    assert profile.metadata is not None
    with pytest.raises(TypeError):
        profile.metadata["team"] = {}  # type: ignore[index]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        profile.config.limits.max_turns = 1  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        profile.config = profile.config  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        profile.spec.id = "x"  # type: ignore[misc]
    assert isinstance(profile.config.dependencies.required_services, tuple)
    assert isinstance(profile.config.dependencies.required_middleware, tuple)


def test_limits_merge_and_validation() -> None:
    profile = build_profile("chat", limits={"maxTurns": 3, "max_cost_usd": 1.5})
    assert profile.config.limits.max_turns == 3
    assert profile.config.limits.max_cost_usd == 1.5
    assert profile.config.limits.run_deadline_ms == 300_000
    assert profile.spec.limits is not None
    assert profile.spec.limits.max_turns == 3
    for bad in (0, -1, float("nan"), float("inf"), "3", True):
        with pytest.raises(ProfileLimitError, match="maxTurns must be a positive finite number"):
            build_profile("chat", limits={"maxTurns": bad})
    with pytest.raises(ProfileLimitError, match="maxTurns must be a safe integer"):
        build_profile("chat", limits={"maxTurns": 2.5})
    with pytest.raises(ProfileLimitError, match="streamBufferSize"):
        build_profile("chat", limits={"streamBufferSize": 1})
    with pytest.raises(ProfileLimitError, match="Unknown profile run limit"):
        build_profile("chat", limits={"maxTurnz": 1})
    with pytest.raises(ValueError, match="positive finite"):
        build_profile("chat", limits={"maxCostUsd": 0})


def test_unknown_kind_and_blank_names() -> None:
    with pytest.raises(UnknownProfileKindError, match='Unknown agent profile "planner"') as info:
        build_profile("planner")
    assert isinstance(info.value, TypeError)
    assert info.value.code == "PROFILE_KIND_UNKNOWN"
    with pytest.raises(ProfileDefinitionError, match="Profile agent id must not be empty"):
        build_profile("chat", id="  ")
    with pytest.raises(TypeError, match="Profile agent name must not be empty"):
        build_profile("chat", name="")
    with pytest.raises(ProfileDefinitionError, match='Unknown profile option "colour"'):
        build_profile("chat", colour="red")


def test_ref_merge_keeps_first_position_and_later_value() -> None:
    profile = build_profile(
        "coding",
        tools=[
            "workspace.list",
            {"id": "workspace.read", "options": {"maxBytes": 10}},
            RefSpec(id="workspace.shell"),
        ],
        middleware=[{"id": "policy.permissions", "options": {"mode": "strict"}}],
    )
    deps = profile.config.dependencies
    assert deps.required_tool_ids == (
        "workspace.read",
        "workspace.write",
        "workspace.list",
        "workspace.shell",
    )
    assert deps.required_tools[0].to_json() == {
        "id": "workspace.read",
        "options": {"maxBytes": 10},
    }
    assert [r.id for r in deps.optional_tools] == ["workspace.test", "workspace.git"]
    first = profile.spec.tools[0]
    assert isinstance(first, RefSpec)
    assert first.options == {"maxBytes": 10}
    assert deps.required_middleware_ids[0] == "policy.permissions"
    assert _wire(profile)["requiredTools"][0] == "workspace.read"


def test_inspect_profile() -> None:
    profile = build_profile("research", model="scripted:demo")
    inspection = inspect_profile(profile)
    assert inspection.schema_version == 1
    assert inspection.kind == "research"
    assert inspection.config is profile.config
    wire = inspection.to_json()
    assert json.loads(json.dumps(wire))["config"]["schemaVersion"] == 1
    config_json: Any = wire["config"]
    assert config_json["dependencies"]["requiredServices"] == ["artifacts"]
    with pytest.raises(TypeError, match="inspectProfile requires a built agent profile"):
        inspect_profile(object())  # type: ignore[arg-type]


def test_metadata_json_shape() -> None:
    wire = _wire(build_profile("background"))
    assert set(wire) == {
        "schemaVersion",
        "kind",
        "optIns",
        "requiredServices",
        "requiredMiddleware",
        "requiredTools",
        "workspace",
        "security",
        "result",
        "orchestration",
    }
    assert wire["orchestration"]["childBudget"] == {
        "maxChildRuns": 4,
        "maxDepth": 2,
        "maxTotalTokens": 1_000_000,
        "maxCostUsd": 100,
    }
    assert wire["security"]["secrets"] == "runtime-service-only"
    assert json.loads(json.dumps(wire)) == wire


@pytest.mark.parametrize("kind", AGENT_PROFILE_KINDS)
def test_every_builtin_profile_is_consistent(kind: str) -> None:
    config = build_profile(kind).config
    check_profile_consistency(config)
    ref = config.security.permission_policy_ref
    assert ref is None or ref in config.dependencies.required_middleware_ids


def test_consistency_rule_refuses_unrequired_policy_ref() -> None:
    config: AgentProfileConfig = build_profile("chat").config
    broken = attrs.evolve(
        config, security=ProfileSecurity(permission_policy_ref="policy.permissions")
    )
    with pytest.raises(ProfileConsistencyError, match="does not require it") as info:
        check_profile_consistency(broken)
    assert info.value.code == "PROFILE_INCONSISTENT"


@pytest.mark.parametrize("kind", AGENT_PROFILE_KINDS)
def test_config_wire_round_trip(kind: str) -> None:
    config = build_profile(
        kind,
        optIns={"memory": True},
        tools=[{"id": "extra.tool", "options": {"n": 1}}],
        limits={"maxTurns": 5},
    ).config
    wire = json.loads(json.dumps(config.to_json()))
    assert profile_config_from_json(wire) == config


_DROP = object()


@pytest.mark.parametrize(
    ("section", "key", "value", "message"),
    [
        (None, "schemaVersion", 2, "schemaVersion must be 1"),
        (None, "kind", "planner", "Unknown agent profile"),
        (None, "extra", 1, "unknown keys"),
        ("workspace", "access", "everything", "access must be one of"),
        ("security", "network", _DROP, "security.network is missing"),
        ("limits", "maxTurns", 0, "limits are invalid"),
        ("optIns", "memory", "yes", "must be a boolean"),
        ("dependencies", "requiredTools", [3], "reference 3 is invalid"),
        (None, "orchestration", None, "orchestration must be an object"),
    ],
)
def test_config_wire_refuses_bad_documents(
    section: str | None, key: str, value: object, message: str
) -> None:
    wire: dict[str, Any] = json.loads(json.dumps(build_profile("coding").config.to_json()))
    target: dict[str, Any] = wire if section is None else wire[section]
    if value is _DROP:
        del target[key]
    else:
        target[key] = value
    with pytest.raises(ProfileDefinitionError, match=message):
        profile_config_from_json(wire)
