"""Profile data: the configuration sections of spec 04 §4.1, frozen, camelCase on the wire.

Every class is a frozen attrs value; lists are tuples and JSON options are deep-frozen, so a built
profile cannot be changed after :func:`~actoviq.profiles.build_profile` returns it (assigning a
field raises :class:`attrs.exceptions.FrozenInstanceError`, an ``AttributeError``).
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

import attrs

from actoviq.core import AgentSpec, JsonObject, JsonValue, RunLimits
from actoviq.runtime import FrozenJson, freeze_json, thaw_json

__all__ = [
    "AGENT_PROFILE_KINDS",
    "PROFILE_SCHEMA_VERSION",
    "AgentProfileConfig",
    "AgentProfileInspection",
    "AgentProfileKind",
    "ArtifactPolicy",
    "BuiltAgentProfile",
    "ChildBudget",
    "CitationPolicy",
    "OrchestrationMode",
    "ProfileDependencies",
    "ProfileOptIns",
    "ProfileOrchestration",
    "ProfileRef",
    "ProfileResult",
    "ProfileSecurity",
    "ProfileWorkspace",
    "SideEffectPolicy",
    "WorkspaceAccessMode",
    "limits_to_json",
]

AgentProfileKind: TypeAlias = Literal[
    "chat", "coding", "research", "workflow", "supervisor", "background"
]
"""The six profile kinds, in the reference order."""
AGENT_PROFILE_KINDS: Final[tuple[AgentProfileKind, ...]] = (
    "chat",
    "coding",
    "research",
    "workflow",
    "supervisor",
    "background",
)
"""The six profile kinds, in the order the reference runs them."""

PROFILE_SCHEMA_VERSION: Final = 1
"""The version of a profile's serialised configuration."""

WorkspaceAccessMode: TypeAlias = Literal["none", "read-only", "read-write", "inherited"]
SideEffectPolicy: TypeAlias = Literal["none", "deny-by-default", "approval-or-policy"]
ArtifactPolicy: TypeAlias = Literal["none", "optional", "required"]
CitationPolicy: TypeAlias = Literal["none", "optional", "required"]
OrchestrationMode: TypeAlias = Literal["none", "workflow", "supervisor", "background"]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def limits_to_json(limits: RunLimits) -> JsonObject:
    """The 13 run limits as camelCase JSON (``maxTurns`` ... ``maxCostUsd``)."""
    return {_camel(field.name): getattr(limits, field.name) for field in attrs.fields(RunLimits)}


def _freeze_options(value: object) -> FrozenJson:
    return None if value is None else freeze_json(value, "profile ref options")


@attrs.frozen(kw_only=True, slots=True)
class ProfileRef:
    """A registry reference: an ``id`` and optional JSON ``options`` (deep-frozen)."""

    id: str
    options: FrozenJson = attrs.field(default=None, converter=_freeze_options)

    def to_json(self) -> JsonValue:
        """The id alone, or ``{id, options}`` when options are set."""
        if self.options is None:
            return self.id
        return {"id": self.id, "options": thaw_json(self.options)}


@attrs.frozen(kw_only=True, slots=True)
class ProfileOptIns:
    """Opt-in abilities; each is on only when given as the literal ``True``."""

    memory: bool = False
    skills: bool = False
    compaction: bool = False

    def to_json(self) -> JsonObject:
        """``{memory, skills, compaction}``."""
        return {"memory": self.memory, "skills": self.skills, "compaction": self.compaction}


@attrs.frozen(kw_only=True, slots=True)
class ProfileDependencies:
    """What the runtime must (required) or may (optional) provide for the profile."""

    required_services: tuple[str, ...] = ()
    optional_services: tuple[str, ...] = ()
    required_middleware: tuple[ProfileRef, ...] = ()
    optional_middleware: tuple[ProfileRef, ...] = ()
    required_tools: tuple[ProfileRef, ...] = ()
    optional_tools: tuple[ProfileRef, ...] = ()

    @property
    def required_middleware_ids(self) -> tuple[str, ...]:
        """The ids of :attr:`required_middleware`, in order."""
        return tuple(ref.id for ref in self.required_middleware)

    @property
    def required_tool_ids(self) -> tuple[str, ...]:
        """The ids of :attr:`required_tools`, in order."""
        return tuple(ref.id for ref in self.required_tools)

    def to_json(self) -> JsonObject:
        """The six lists, camelCase."""
        return {
            "requiredServices": list(self.required_services),
            "optionalServices": list(self.optional_services),
            "requiredMiddleware": [ref.to_json() for ref in self.required_middleware],
            "optionalMiddleware": [ref.to_json() for ref in self.optional_middleware],
            "requiredTools": [ref.to_json() for ref in self.required_tools],
            "optionalTools": [ref.to_json() for ref in self.optional_tools],
        }


@attrs.frozen(kw_only=True, slots=True)
class ProfileWorkspace:
    """Whether a run needs a workspace and how it may touch it."""

    required: bool = False
    access: WorkspaceAccessMode = "none"
    containment: Literal["not-applicable", "workspace-root"] = "not-applicable"
    symlink_escape: Literal["not-applicable", "deny"] = "not-applicable"
    resume_policy: Literal["not-applicable", "same-workspace"] = "not-applicable"

    def to_json(self) -> JsonObject:
        """``{required, access, containment, symlinkEscape, resumePolicy}``."""
        return {
            "required": self.required,
            "access": self.access,
            "containment": self.containment,
            "symlinkEscape": self.symlink_escape,
            "resumePolicy": self.resume_policy,
        }


@attrs.frozen(kw_only=True, slots=True)
class ProfileSecurity:
    """The security posture; ``permission_policy_ref`` names the enforcing middleware."""

    permission_policy_ref: str | None = None
    side_effects: SideEffectPolicy = "deny-by-default"
    network: Literal["disabled", "policy-controlled"] = "disabled"
    process: Literal["disabled", "policy-controlled"] = "disabled"
    child_policy: Literal["none", "inherit-stricter"] = "none"
    secrets: Literal["runtime-service-only"] = "runtime-service-only"

    def to_json(self) -> JsonObject:
        """The camelCase JSON; ``permissionPolicyRef`` is null when absent."""
        return {
            "permissionPolicyRef": self.permission_policy_ref,
            "sideEffects": self.side_effects,
            "network": self.network,
            "process": self.process,
            "childPolicy": self.child_policy,
            "secrets": self.secrets,
        }


@attrs.frozen(kw_only=True, slots=True)
class ProfileResult:
    """What the run result must carry: artifacts and citations."""

    artifacts: ArtifactPolicy = "none"
    citations: CitationPolicy = "none"
    citations_metadata_key: str | None = None
    artifact_item_type: Literal["artifact_ref"] | None = None

    def to_json(self) -> JsonObject:
        """The camelCase JSON (absent optional fields are null)."""
        return {
            "artifacts": self.artifacts,
            "citations": self.citations,
            "citationsMetadataKey": self.citations_metadata_key,
            "artifactItemType": self.artifact_item_type,
        }


@attrs.frozen(kw_only=True, slots=True)
class ChildBudget:
    """The budget of a supervisor's or background agent's children (capped by the limits)."""

    max_child_runs: int
    max_depth: int
    max_total_tokens: int
    max_cost_usd: float

    def to_json(self) -> JsonObject:
        """``{maxChildRuns, maxDepth, maxTotalTokens, maxCostUsd}``."""
        return {
            "maxChildRuns": self.max_child_runs,
            "maxDepth": self.max_depth,
            "maxTotalTokens": self.max_total_tokens,
            "maxCostUsd": self.max_cost_usd,
        }


@attrs.frozen(kw_only=True, slots=True)
class ProfileOrchestration:
    """How the profile takes part in orchestration."""

    mode: OrchestrationMode = "none"
    refs: tuple[str, ...] = ()
    deterministic: bool = False
    reducer_required: bool = False
    durable: bool = False
    checkpoint_service_id: str | None = None
    child_failure_policy: Literal["fail-fast"] | None = None
    child_budget: ChildBudget | None = None

    def to_json(self) -> JsonObject:
        """The camelCase JSON (absent optional fields are null)."""
        return {
            "mode": self.mode,
            "refs": list(self.refs),
            "deterministic": self.deterministic,
            "reducerRequired": self.reducer_required,
            "durable": self.durable,
            "checkpointServiceId": self.checkpoint_service_id,
            "childFailurePolicy": self.child_failure_policy,
            "childBudget": None if self.child_budget is None else self.child_budget.to_json(),
        }


@attrs.frozen(kw_only=True, slots=True)
class AgentProfileConfig:
    """A profile's composition data (``schemaVersion`` 1), everything but the agent itself."""

    kind: AgentProfileKind
    limits: RunLimits
    opt_ins: ProfileOptIns
    dependencies: ProfileDependencies
    workspace: ProfileWorkspace
    security: ProfileSecurity
    result: ProfileResult
    orchestration: ProfileOrchestration
    schema_version: Literal[1] = 1

    def to_json(self) -> JsonObject:
        """The camelCase wire form."""
        return {
            "schemaVersion": self.schema_version,
            "kind": self.kind,
            "limits": limits_to_json(self.limits),
            "optIns": self.opt_ins.to_json(),
            "dependencies": self.dependencies.to_json(),
            "workspace": self.workspace.to_json(),
            "security": self.security.to_json(),
            "result": self.result.to_json(),
            "orchestration": self.orchestration.to_json(),
        }

    def metadata_json(self) -> JsonObject:
        """The ``hadamardProfile`` value a built spec carries in its metadata (§4.3 step 6)."""
        deps = self.dependencies
        return {
            "schemaVersion": self.schema_version,
            "kind": self.kind,
            "optIns": self.opt_ins.to_json(),
            "requiredServices": list(deps.required_services),
            "requiredMiddleware": list(deps.required_middleware_ids),
            "requiredTools": list(deps.required_tool_ids),
            "workspace": self.workspace.to_json(),
            "security": self.security.to_json(),
            "result": self.result.to_json(),
            "orchestration": self.orchestration.to_json(),
        }


@attrs.frozen(kw_only=True, slots=True)
class BuiltAgentProfile:
    """A built profile: its kind, the immutable :class:`AgentSpec` and the config.

    ``metadata`` is the spec's metadata deep-frozen (the spec itself keeps a private copy).
    """

    kind: AgentProfileKind
    spec: AgentSpec[Any, Any]
    config: AgentProfileConfig
    metadata: FrozenJson = None


@attrs.frozen(kw_only=True, slots=True)
class AgentProfileInspection:
    """What :func:`~actoviq.profiles.inspect_profile` reports (``schemaVersion`` 1)."""

    kind: AgentProfileKind
    spec: AgentSpec[Any, Any]
    config: AgentProfileConfig
    schema_version: Literal[1] = 1

    def to_json(self) -> JsonObject:
        """``{schemaVersion, kind, spec: {id, name, ...}, config}``."""
        spec = self.spec
        return {
            "schemaVersion": self.schema_version,
            "kind": self.kind,
            "spec": {
                "id": spec.id,
                "name": spec.name,
                "description": spec.description,
                "instructions": spec.instructions if isinstance(spec.instructions, str) else None,
                "tools": [ref if isinstance(ref, str) else ref.id for ref in spec.tools],
                "middleware": [ref if isinstance(ref, str) else ref.id for ref in spec.middleware],
                "metadata": spec.metadata,
            },
            "config": self.config.to_json(),
        }
