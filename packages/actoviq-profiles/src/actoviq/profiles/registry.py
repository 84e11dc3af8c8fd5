"""``default_profile_registry()``: working implementations of every reference a profile names.

Example:
    >>> registry = default_profile_registry()
    >>> sorted(registry.middleware_ids())[:3]
    ['background.checkpoint', 'orchestration.scope', 'policy.permissions']

``registry.install(runtime)`` registers the services, middleware and tools into a runtime (an id
the runtime already has is left alone: the host's own binding wins). Pass
``registry.tool_policy`` as ``AgentRuntime(tool_policy=...)`` so side effects the rules do not
allow wait for an approval (:func:`create_profile_runtime` does both).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Final

from actoviq.core import AgentSpec
from actoviq.profiles.background import BackgroundRuns, background_middleware, background_tools
from actoviq.profiles.coordination import (
    ProfileOrchestrator,
    determinism_middleware,
    orchestration_scope_middleware,
    supervisor_tools,
    workflow_tools,
)
from actoviq.profiles.memory import CompactionSettings, compaction_middleware, memory_middleware
from actoviq.profiles.permissions import PermissionPolicy, PermissionRules, permissions_middleware
from actoviq.profiles.processes import ProcessSandbox, process_tools
from actoviq.profiles.research import (
    ResearchDocument,
    SourceIndex,
    artifact_tools,
    citations_middleware,
    research_tools,
)
from actoviq.profiles.skills import Skill, SkillLibrary, skills_middleware
from actoviq.profiles.workspace import (
    WorkspaceAccess,
    WorkspaceRegistry,
    workspace_boundary_middleware,
    workspace_tools,
)
from actoviq.runtime import (
    AgentRuntime,
    ArtifactStore,
    DurableChildStore,
    InMemoryArtifactBlobStore,
    InMemoryArtifactMetadataStore,
    InMemoryMemoryStore,
    MemoryStore,
    MiddlewareDefinition,
    RuntimeTool,
    ServiceDefinition,
    ToolEffect,
)

__all__ = [
    "ProfileRegistry",
    "ProfileRuntime",
    "create_profile_runtime",
    "default_profile_registry",
]

_MIDDLEWARE_IDS: Final = (
    "policy.permissions",
    "workspace.boundary",
    "research.citations",
    "orchestration.scope",
    "workflow.determinism",
    "background.checkpoint",
    "profile.memory",
    "profile.skills",
    "profile.compaction",
)


class ProfileRegistry:
    """The bindings of the profile references, ready to install into a runtime.

    Attributes:
        workspaces: the ``workspace`` service (workspace roots by id).
        rules: the permission rules of ``policy.permissions`` and :attr:`tool_policy`.
        tool_policy: a :class:`PermissionPolicy` for ``AgentRuntime(tool_policy=...)``.
        artifacts: the ``artifacts`` service (an :class:`ArtifactStore`).
        sources: the research sources ``research.search`` reads.
        memory: the ``memory`` service (a :class:`MemoryStore`).
        compaction: the ``compaction`` service (its settings).
        skills: the ``skills`` service (a :class:`SkillLibrary`).
        children: where the background profile's durable children live (None: in memory).
        background_options: ``lease_ms``, ``owner_id``, ``tenant_id`` and ``effects`` of the
            :class:`BackgroundRuns` (its ``BackgroundChildManager``).
        processes: how ``workspace.shell``/``test``/``git`` run (a bubblewrap sandbox).
        orchestrator / background: the runtime-bound services, set by :meth:`install`.
    """

    def __init__(
        self,
        *,
        workspaces: WorkspaceRegistry,
        rules: PermissionRules,
        artifacts: ArtifactStore,
        sources: SourceIndex,
        memory: MemoryStore,
        compaction: CompactionSettings,
        skills: SkillLibrary | None = None,
        spawnable_agents: Iterable[AgentSpec[Any, Any]] = (),
        enforce_citations: bool = False,
        children: DurableChildStore | None = None,
        background_options: Mapping[str, Any] | None = None,
        processes: ProcessSandbox | None = None,
    ) -> None:
        self.processes = processes if processes is not None else ProcessSandbox()
        self.children = children
        self.background_options = dict(background_options or {})
        self.skills = skills if skills is not None else SkillLibrary()
        self.enforce_citations = enforce_citations
        self.workspaces = workspaces
        self.rules = rules
        self.tool_policy = PermissionPolicy(rules)
        self.artifacts = artifacts
        self.sources = sources
        self.memory = memory
        self.compaction = compaction
        self.spawnable_agents = tuple(spawnable_agents)
        self.orchestrator: ProfileOrchestrator | None = None
        self.background: BackgroundRuns | None = None

    @staticmethod
    def middleware_ids() -> tuple[str, ...]:
        """The middleware ids :meth:`install` registers."""
        return _MIDDLEWARE_IDS

    def _middleware(
        self, orchestrator: ProfileOrchestrator, background: BackgroundRuns
    ) -> dict[str, tuple[MiddlewareDefinition, ...]]:
        return {
            "policy.permissions": (permissions_middleware(self.rules),),
            "workspace.boundary": (workspace_boundary_middleware(self.workspaces),),
            "research.citations": (citations_middleware(enforce=self.enforce_citations),),
            "orchestration.scope": orchestration_scope_middleware(orchestrator),
            "workflow.determinism": determinism_middleware(),
            "background.checkpoint": (background_middleware(background),),
            "profile.memory": memory_middleware(),
            "profile.skills": (skills_middleware(self.skills),),
            "profile.compaction": (compaction_middleware(self.compaction),),
        }

    def _tools(
        self, orchestrator: ProfileOrchestrator, background: BackgroundRuns
    ) -> tuple[RuntimeTool, ...]:
        return (
            *workspace_tools(self.workspaces),
            *process_tools(self.workspaces, self.processes),
            *research_tools(self.sources),
            *artifact_tools(self.artifacts),
            *supervisor_tools(orchestrator),
            *workflow_tools(),
            *background_tools(background),
        )

    def install(self, runtime: AgentRuntime) -> AgentRuntime:
        """Register every binding the runtime does not have yet; returns ``runtime``.

        ``checkpoints`` is registered (as the runtime's checkpoint store) only when the runtime
        has one: a workflow or background profile is refused on a runtime without it. Close
        :attr:`background` (:meth:`aclose`) before the runtime, so children still running here
        are handed over (their leases released) rather than cancelled; a
        :class:`ProfileRuntime` does it.
        """
        orchestrator = ProfileOrchestrator(runtime, self.spawnable_agents)
        background = BackgroundRuns(runtime, orchestrator, self.children, **self.background_options)
        self.orchestrator, self.background = orchestrator, background
        services: dict[str, Any] = {
            "workspace": self.workspaces,
            "artifacts": self.artifacts,
            "memory": self.memory,
            "compaction": self.compaction,
            "skills": self.skills,
            "orchestration": orchestrator,
            "background": background,
        }
        if runtime.checkpoint_store is not None:
            services["checkpoints"] = runtime.checkpoint_store
        for service_id, instance in services.items():
            if not runtime.services.has(service_id):
                runtime.services.register(
                    service_id,
                    ServiceDefinition(
                        factory=_constant(instance), description=f"actoviq.profiles {service_id}"
                    ),
                )
        for group_id, definitions in self._middleware(orchestrator, background).items():
            if not runtime.middleware_registry.has(group_id):
                runtime.middleware_registry.register(group_id, definitions)
        for runtime_tool in self._tools(orchestrator, background):
            if not runtime.tools.has(runtime_tool.name):
                runtime.tools.register(runtime_tool)
        return runtime

    async def aclose(self) -> None:
        """Close the background manager of the last :meth:`install` (leases released)."""
        if self.background is not None:
            await self.background.aclose()


class ProfileRuntime(AgentRuntime):
    """An :class:`AgentRuntime` with a :class:`ProfileRegistry` installed.

    :meth:`close` first closes the registry's background manager (children still running here
    keep their durable records and are taken over by the next worker), then the runtime.
    """

    def __init__(self, registry: ProfileRegistry, **options: Any) -> None:
        super().__init__(**options)
        self.registry = registry
        registry.install(self)
        self.background = registry.background

    async def close(self) -> None:
        """Close the background manager, then the runtime (see :meth:`AgentRuntime.close`)."""
        try:
            if self.background is not None:
                await self.background.aclose()
        finally:
            await super().close()


def _constant(instance: object) -> Any:
    def factory() -> object:
        return instance

    return factory


def default_profile_registry(
    *,
    workspaces: WorkspaceRegistry
    | Mapping[str, str | os.PathLike[str] | tuple[Any, WorkspaceAccess]]
    | None = None,
    allow: Iterable[str] = (),
    deny: Iterable[str] = (),
    artifacts: ArtifactStore | None = None,
    sources: SourceIndex | Iterable[ResearchDocument] | None = None,
    memory: MemoryStore | None = None,
    compaction: CompactionSettings | None = None,
    skills: SkillLibrary | Iterable[Skill] | None = None,
    spawnable_agents: Iterable[AgentSpec[Any, Any]] = (),
    enforce_citations: bool = False,
    children: DurableChildStore | None = None,
    background_lease_ms: int = 30_000,
    background_effects: Mapping[str, ToolEffect] | None = None,
    background_owner_id: str | None = None,
    processes: ProcessSandbox | None = None,
) -> ProfileRegistry:
    """The default bindings (all working; in-memory stores unless given).

    Args:
        workspaces: a :class:`WorkspaceRegistry` or ``{id: path}`` / ``{id: (path, access)}``.
        allow: tool name patterns whose side effects run without approval.
        deny: tool name patterns that never run.
        artifacts: the artifact store (default: in-memory records and bytes).
        sources: the research sources (documents or a :class:`SourceIndex`).
        memory: the memory store (default: in-memory).
        compaction: when and how to compact long sessions.
        skills: the skills the skills opt-in draws on (a :class:`SkillLibrary` or skills).
        spawnable_agents: the agents a supervisor's ``agent.spawn`` may start.
        enforce_citations: fail a run whose profile requires citations and that cited none
            (default: the result metadata says ``citationsMissing: true``).
        children: the durable child store of the background profile's children
            (``SqliteStorage.children``; default: in memory, so they do not outlive the
            process).
        background_lease_ms: how long a child's lease outlives its worker's last heartbeat.
        background_effects: replay safety of each spawnable agent's background work by agent
            id (``read``, ``idempotent-write``; default ``side-effect``).
        background_owner_id: this worker's id in the children's leases.
        processes: the sandbox of ``workspace.shell``, ``workspace.test`` and ``workspace.git``
            (timeout, output cap, test command; default :class:`ProcessSandbox`).
    """
    if isinstance(workspaces, WorkspaceRegistry):
        registry = workspaces
    else:
        registry = WorkspaceRegistry(workspaces or {})
    index = sources if isinstance(sources, SourceIndex) else SourceIndex(sources or ())
    return ProfileRegistry(
        workspaces=registry,
        rules=PermissionRules(allow=allow, deny=deny),
        artifacts=artifacts
        if artifacts is not None
        else ArtifactStore(InMemoryArtifactMetadataStore(), InMemoryArtifactBlobStore()),
        sources=index,
        memory=memory if memory is not None else InMemoryMemoryStore(),
        compaction=compaction if compaction is not None else CompactionSettings(),
        skills=skills if isinstance(skills, SkillLibrary) else SkillLibrary(skills or ()),
        spawnable_agents=spawnable_agents,
        enforce_citations=enforce_citations,
        children=children,
        background_options={
            "lease_ms": background_lease_ms,
            "effects": dict(background_effects or {}),
            "owner_id": background_owner_id,
        },
        processes=processes,
    )


def create_profile_runtime(
    registry: ProfileRegistry | None = None, **runtime_options: Any
) -> ProfileRuntime:
    """A :class:`ProfileRuntime`: ``registry`` installed, its permission policy, closed in order.

    ``runtime_options`` are :class:`AgentRuntime`'s keyword arguments (``models`` is required);
    ``tool_policy`` defaults to ``registry.tool_policy``. ``agents`` are registered after the
    registry is installed, so specs that name the registry's middleware (a profile's ``spec``)
    can be registered up front (as ``resume`` in a new process needs).
    """
    registry = registry if registry is not None else default_profile_registry()
    runtime_options.setdefault("tool_policy", registry.tool_policy)
    agents: Iterable[AgentSpec[Any, Any]] = runtime_options.pop("agents", ())
    runtime = ProfileRuntime(registry, **runtime_options)
    for agent in agents:
        runtime.register_agent(agent)
    return runtime
