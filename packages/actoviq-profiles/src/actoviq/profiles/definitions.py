"""The six profile definitions (spec 04 §4.2): defaults every ``build_profile`` starts from.

One deliberate difference from the reference: research, workflow and background declare
``permissionPolicyRef: policy.permissions`` but the reference does not require that middleware;
here they require it (appended after their own middleware), so the §8.4-27 consistency rule (the
policy ref is required middleware) holds for every built-in profile.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from actoviq.core import RunLimits
from actoviq.profiles.types import (
    AgentProfileKind,
    ChildBudget,
    ProfileOrchestration,
    ProfileResult,
    ProfileSecurity,
    ProfileWorkspace,
)

__all__ = [
    "OPTIONAL_MIDDLEWARE",
    "OPTIONAL_SERVICES",
    "ProfileDefinition",
    "profile_definition",
]

OPTIONAL_SERVICES: Final = ("memory", "skills", "compaction")
"""Services every profile may use (required once the matching opt-in is on)."""
OPTIONAL_MIDDLEWARE: Final = ("profile.memory", "profile.skills", "profile.compaction")
"""Middleware every profile may use (required once the matching opt-in is on)."""


@attrs.frozen(kw_only=True, slots=True)
class ProfileDefinition:
    """The defaults of one profile kind."""

    kind: AgentProfileKind
    id: str
    name: str
    description: str
    instructions: str
    limits: RunLimits
    required_services: tuple[str, ...]
    required_middleware: tuple[str, ...]
    required_tools: tuple[str, ...]
    optional_tools: tuple[str, ...]
    workspace: ProfileWorkspace
    security: ProfileSecurity
    result: ProfileResult
    orchestration: ProfileOrchestration


def _limits(*values: Any) -> RunLimits:
    names = [field.name for field in attrs.fields(RunLimits)]
    return RunLimits(**dict(zip(names, values, strict=True)))


_CONTAINED = ProfileWorkspace(
    required=False,
    access="inherited",
    containment="workspace-root",
    symlink_escape="deny",
    resume_policy="same-workspace",
)
_POLICED = ProfileSecurity(
    permission_policy_ref="policy.permissions",
    side_effects="approval-or-policy",
    network="policy-controlled",
    process="policy-controlled",
    child_policy="inherit-stricter",
)
_OPTIONAL_RESULT = ProfileResult(
    artifacts="optional", citations="optional", artifact_item_type="artifact_ref"
)

_DEFINITIONS: Final[dict[str, ProfileDefinition]] = {
    "chat": ProfileDefinition(
        kind="chat",
        id="chat-agent",
        name="Chat Agent",
        description="A minimal conversational agent with no optional runtime ability enabled.",
        instructions=(
            "Answer the user clearly and directly. Do not claim access to tools or data that "
            "were not provided."
        ),
        limits=_limits(
            8, 300_000, 90_000, 30_000, 10_000, 1, 1, 1, 128, 128_000, 8_192, 192_000, 10
        ),
        required_services=(),
        required_middleware=(),
        required_tools=(),
        optional_tools=(),
        workspace=ProfileWorkspace(),
        security=ProfileSecurity(),
        result=ProfileResult(),
        orchestration=ProfileOrchestration(),
    ),
    "coding": ProfileDefinition(
        kind="coding",
        id="coding-agent",
        name="Coding Agent",
        description="A workspace-contained coding agent whose writes pass through runtime policy.",
        instructions=(
            "Work only inside the provided workspace. Inspect before editing, keep changes "
            "scoped to the request, and verify relevant behavior. Use registered workspace "
            "tools; writes, process execution, and network access remain subject to runtime "
            "policy."
        ),
        limits=_limits(
            96, 3_600_000, 180_000, 120_000, 30_000, 4, 2, 4, 256, 512_000, 32_768, 768_000, 50
        ),
        required_services=("workspace",),
        required_middleware=("policy.permissions", "workspace.boundary"),
        required_tools=("workspace.read", "workspace.write"),
        optional_tools=("workspace.shell", "workspace.test", "workspace.git"),
        workspace=ProfileWorkspace(
            required=True,
            access="read-write",
            containment="workspace-root",
            symlink_escape="deny",
            resume_policy="same-workspace",
        ),
        security=_POLICED,
        result=ProfileResult(
            artifacts="optional", citations="none", artifact_item_type="artifact_ref"
        ),
        orchestration=ProfileOrchestration(),
    ),
    "research": ProfileDefinition(
        kind="research",
        id="research-agent",
        name="Research Agent",
        description=(
            "A source-oriented research agent that records citations and durable artifact "
            "references."
        ),
        instructions=(
            "Research the question using only registered sources. Distinguish sourced facts "
            "from inference, preserve citation metadata, and return large outputs as artifact "
            "references."
        ),
        limits=_limits(
            24, 1_200_000, 180_000, 180_000, 30_000, 8, 2, 6, 256, 768_000, 32_768, 1_000_000, 75
        ),
        required_services=("artifacts",),
        required_middleware=("research.citations", "policy.permissions"),
        required_tools=("research.search", "artifacts.write"),
        optional_tools=("research.fetch", "research.crawl"),
        workspace=ProfileWorkspace(),
        security=attrs.evolve(_POLICED, process="disabled"),
        result=ProfileResult(
            artifacts="required",
            citations="required",
            citations_metadata_key="citations",
            artifact_item_type="artifact_ref",
        ),
        orchestration=ProfileOrchestration(),
    ),
    "workflow": ProfileDefinition(
        kind="workflow",
        id="workflow-agent",
        name="Workflow Agent",
        description=(
            "An AgentRuntime participant selected for deterministic WorkflowGraph composition."
        ),
        instructions=(
            "Complete the assigned workflow node and return only the node contract requested "
            "by the graph. Do not choose graph order or retry policy; those decisions belong "
            "to the orchestration layer."
        ),
        limits=_limits(
            12, 900_000, 120_000, 120_000, 30_000, 4, 2, 8, 256, 384_000, 16_384, 512_000, 40
        ),
        required_services=("checkpoints",),
        required_middleware=("orchestration.scope", "workflow.determinism", "policy.permissions"),
        required_tools=(),
        optional_tools=("workflow.approval",),
        workspace=_CONTAINED,
        security=_POLICED,
        result=_OPTIONAL_RESULT,
        orchestration=ProfileOrchestration(
            mode="workflow",
            refs=("WorkflowGraph", "workflow.reducer"),
            deterministic=True,
            reducer_required=True,
            durable=False,
            checkpoint_service_id="checkpoints",
            child_failure_policy="fail-fast",
        ),
    ),
    "supervisor": ProfileDefinition(
        kind="supervisor",
        id="supervisor-agent",
        name="Supervisor Agent",
        description=(
            "A bounded coordinator that delegates through ChildRunner on the same AgentRuntime."
        ),
        instructions=(
            "Delegate only when it improves the result, keep child work within the inherited "
            "budget, and synthesize child outcomes. Never relax the parent permission, "
            "deadline, workspace, tenant, or failure policy."
        ),
        limits=_limits(
            24, 1_200_000, 120_000, 180_000, 30_000, 8, 3, 8, 512, 512_000, 32_768, 1_000_000, 100
        ),
        required_services=("orchestration",),
        required_middleware=("orchestration.scope", "policy.permissions"),
        required_tools=("agent.spawn",),
        optional_tools=("agent.as-tool", "agent.handoff"),
        workspace=_CONTAINED,
        security=_POLICED,
        result=_OPTIONAL_RESULT,
        orchestration=ProfileOrchestration(
            mode="supervisor",
            refs=("ChildRunner", "agentAsTool", "createHandoff"),
            child_failure_policy="fail-fast",
            child_budget=ChildBudget(
                max_child_runs=8, max_depth=3, max_total_tokens=1_000_000, max_cost_usd=100
            ),
        ),
    ),
    "background": ProfileDefinition(
        kind="background",
        id="background-agent",
        name="Background Agent",
        description=(
            "A durable child profile whose progress is recoverable through a checkpoint-backed "
            "manager."
        ),
        instructions=(
            "Perform the assigned durable unit of work within the persisted scope. Do not "
            "assume an in-memory caller remains alive; make side effects idempotent or require "
            "reconciliation."
        ),
        limits=_limits(
            32, 3_600_000, 180_000, 300_000, 30_000, 4, 2, 4, 256, 512_000, 32_768, 1_000_000, 100
        ),
        required_services=("checkpoints", "background"),
        required_middleware=("orchestration.scope", "background.checkpoint", "policy.permissions"),
        required_tools=(),
        optional_tools=("background.query", "background.cancel"),
        workspace=_CONTAINED,
        security=_POLICED,
        result=_OPTIONAL_RESULT,
        orchestration=ProfileOrchestration(
            mode="background",
            refs=("BackgroundChildManager", "DurableChildStore"),
            durable=True,
            checkpoint_service_id="checkpoints",
            child_failure_policy="fail-fast",
            child_budget=ChildBudget(
                max_child_runs=4, max_depth=2, max_total_tokens=1_000_000, max_cost_usd=100
            ),
        ),
    ),
}


def profile_definition(kind: str) -> ProfileDefinition | None:
    """The definition of ``kind``, or None for an unknown kind."""
    return _DEFINITIONS.get(kind) if isinstance(kind, str) else None  # pyright: ignore[reportUnnecessaryIsInstance]
