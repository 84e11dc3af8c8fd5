"""Actoviq profiles: six ready agent compositions on the one ``AgentRuntime`` (spec 04 §4).

A profile is composition data plus an immutable :class:`~actoviq.core.AgentSpec`: it names the
services, middleware and tools the runtime must provide. :func:`build_profile` builds one,
:func:`run_profile` checks the runtime (no I/O, before any model call) and runs it.

Example:
    >>> profile = build_profile("coding", model="scripted:demo")
    >>> profile.config.dependencies.required_services
    ('workspace',)
"""

from __future__ import annotations

from actoviq.profiles.background import (
    BackgroundCheckpointRequiredError,
    BackgroundChildAccessError,
    BackgroundRuns,
)
from actoviq.profiles.build import (
    PROFILE_METADATA_KEY,
    ProfileOptions,
    build_profile,
    check_profile_consistency,
    inspect_profile,
    profile_config_of,
)
from actoviq.profiles.coordination import (
    ProfileOrchestrator,
    WorkflowDeterminismError,
    reduce_node_outputs,
)
from actoviq.profiles.definitions import OPTIONAL_MIDDLEWARE, OPTIONAL_SERVICES
from actoviq.profiles.errors import (
    ProfileConsistencyError,
    ProfileDefinitionError,
    ProfileError,
    ProfileLimitError,
    ProfileRuntimeConfigurationError,
    UnknownProfileKindError,
)
from actoviq.profiles.graphs import profile_workflow_node, reducer_workflow_node
from actoviq.profiles.memory import (
    COMPACTION_METADATA_KEY,
    CompactionError,
    CompactionSettings,
    estimate_tokens,
)
from actoviq.profiles.permissions import PermissionPolicy, PermissionRules
from actoviq.profiles.processes import ProcessSandbox, ProcessSandboxUnavailableError
from actoviq.profiles.registry import (
    ProfileRegistry,
    ProfileRuntime,
    create_profile_runtime,
    default_profile_registry,
)
from actoviq.profiles.research import (
    CitationsRequiredError,
    ResearchDocument,
    SourceIndex,
    collect_citations,
)
from actoviq.profiles.run import (
    assert_profile_runtime,
    missing_profile_dependencies,
    run_profile,
    stream_profile,
)
from actoviq.profiles.skills import Skill, SkillLibrary
from actoviq.profiles.types import (
    AGENT_PROFILE_KINDS,
    PROFILE_SCHEMA_VERSION,
    AgentProfileConfig,
    AgentProfileInspection,
    AgentProfileKind,
    BuiltAgentProfile,
    ChildBudget,
    ProfileDependencies,
    ProfileOptIns,
    ProfileOrchestration,
    ProfileRef,
    ProfileResult,
    ProfileSecurity,
    ProfileWorkspace,
)
from actoviq.profiles.wire import profile_config_from_json
from actoviq.profiles.workspace import (
    Workspace,
    WorkspaceBoundaryError,
    WorkspaceRegistry,
)

__all__ = [
    "AGENT_PROFILE_KINDS",
    "COMPACTION_METADATA_KEY",
    "OPTIONAL_MIDDLEWARE",
    "OPTIONAL_SERVICES",
    "PROFILE_METADATA_KEY",
    "PROFILE_SCHEMA_VERSION",
    "AgentProfileConfig",
    "AgentProfileInspection",
    "AgentProfileKind",
    "BackgroundCheckpointRequiredError",
    "BackgroundChildAccessError",
    "BackgroundRuns",
    "BuiltAgentProfile",
    "ChildBudget",
    "CitationsRequiredError",
    "CompactionError",
    "CompactionSettings",
    "PermissionPolicy",
    "PermissionRules",
    "ProcessSandbox",
    "ProcessSandboxUnavailableError",
    "ProfileConsistencyError",
    "ProfileDefinitionError",
    "ProfileDependencies",
    "ProfileError",
    "ProfileLimitError",
    "ProfileOptIns",
    "ProfileOptions",
    "ProfileOrchestration",
    "ProfileOrchestrator",
    "ProfileRef",
    "ProfileRegistry",
    "ProfileResult",
    "ProfileRuntime",
    "ProfileRuntimeConfigurationError",
    "ProfileSecurity",
    "ProfileWorkspace",
    "ResearchDocument",
    "Skill",
    "SkillLibrary",
    "SourceIndex",
    "UnknownProfileKindError",
    "WorkflowDeterminismError",
    "Workspace",
    "WorkspaceBoundaryError",
    "WorkspaceRegistry",
    "assert_profile_runtime",
    "build_profile",
    "check_profile_consistency",
    "collect_citations",
    "create_profile_runtime",
    "default_profile_registry",
    "estimate_tokens",
    "inspect_profile",
    "missing_profile_dependencies",
    "profile_config_from_json",
    "profile_config_of",
    "profile_workflow_node",
    "reduce_node_outputs",
    "reducer_workflow_node",
    "run_profile",
    "stream_profile",
]
