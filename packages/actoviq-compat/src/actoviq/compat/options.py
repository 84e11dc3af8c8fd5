"""The 0.x options the façade accepts, and the ones it refuses with their replacements.

Options keep their 0.x (camelCase) names, as keyword arguments::

    sdk = await create_agent_sdk(provider="openai", model="gpt-4.1-mini", systemPrompt="Be brief.")
    result = await sdk.run("hello", temperature=0.2)

Only options that map onto the one runtime are accepted (spec 04 §5.2 item 1). Every other 0.x
option raises ``NotImplementedError`` naming what replaces it; an option 0.x never had raises
``TypeError`` like any unexpected keyword argument.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypedDict

from actoviq.compat.permissions import PermissionMode, PermissionRule
from actoviq.core import AbortSignal
from actoviq.providers.legacy import ModelApi
from actoviq.runtime import RuntimeTool, ToolRegistry

__all__ = [
    "CLIENT_REPLACEMENTS",
    "RUN_REPLACEMENTS",
    "AgentRunOptions",
    "CreateAgentSdkOptions",
    "check_options",
]


class CreateAgentSdkOptions(TypedDict, total=False):
    """What ``create_agent_sdk`` accepts (all optional).

    Attributes:
        provider: ``"anthropic"`` (the 0.x default) or ``"openai"`` (the Responses API); needs
            the matching extra (``pip install 'actoviq-compat[openai]'``).
        apiKey: the provider API key (else the SDK reads its environment variable).
        authToken: an Anthropic bearer token instead of an API key.
        baseURL: the provider endpoint.
        model: a full model id (the 0.x tiers ``min``/``medium``/``max`` are not supported).
        modelApi: a legacy ``ModelApi`` (e.g. ``ModelProviderLegacyAdapter(provider)``).
        maxTokens: the output-token cap of each request.
        temperature: sampling temperature.
        timeoutMs: the per-model-call timeout (also the SDK request timeout).
        maxRetries: SDK retries (with ``provider`` only).
        runTimeoutMs: the whole-run deadline.
        toolTimeoutMs: the per-tool-call timeout.
        maxToolIterations: model calls per run (the runtime's ``max_turns``).
        systemPrompt: the default system prompt.
        tools: runtime tools (``@tool`` functions, ``RuntimeTool`` s or a ``ToolRegistry``).
        permissionMode: ``default``, ``acceptEdits``, ``bypassPermissions``, ``plan`` or ``auto``.
        permissions: 0.x permission rules ``{toolName, behavior, matcher?}``.
        sessionDirectory: the JSON v1 root for sessions (``<dir>/sessions/<id>.json``).
        userId: sent as request metadata ``user_id``.
        metadata: request metadata sent with every model call.
        effort: reasoning effort ``low``, ``medium``, ``high`` or ``max``.
    """

    provider: Literal["anthropic", "openai"]
    apiKey: str
    authToken: str
    baseURL: str
    model: str
    modelApi: ModelApi
    maxTokens: int
    temperature: float
    timeoutMs: int
    maxRetries: int
    runTimeoutMs: int
    toolTimeoutMs: int
    maxToolIterations: int
    systemPrompt: str
    tools: Sequence[RuntimeTool] | ToolRegistry
    permissionMode: PermissionMode
    permissions: Sequence[PermissionRule]
    sessionDirectory: str | os.PathLike[str]
    userId: str
    metadata: Mapping[str, Any]
    effort: Literal["low", "medium", "high", "max"]


class AgentRunOptions(TypedDict, total=False):
    """What ``AgentClient.run`` / ``stream`` accept per run (all optional).

    Attributes:
        systemPrompt: replaces the client's system prompt for this run.
        model: another model id of the same provider.
        maxTokens: the output-token cap of each request.
        temperature: sampling temperature.
        topP: nucleus sampling.
        toolChoice: a legacy tool choice ``{type: "auto"|"any"|"tool"|"none", name?}``.
        userId: request metadata ``user_id``.
        metadata: request metadata.
        effort: reasoning effort (``auto`` leaves it to the model).
        signal: an :class:`~actoviq.core.AbortSignal` that cancels the run.
        permissionMode: overrides the client's mode (needs a client-level mode or rules).
        permissions: overrides the client's rules.
        sessionId: run in this session of ``sessionDirectory`` (0.x: ``session.send``).
    """

    systemPrompt: str
    model: str
    maxTokens: int
    temperature: float
    topP: float
    toolChoice: Mapping[str, Any]
    userId: str
    metadata: Mapping[str, Any]
    effort: Literal["auto", "low", "medium", "high", "max"]
    signal: AbortSignal
    permissionMode: PermissionMode
    permissions: Sequence[PermissionRule]
    sessionId: str


_HOOKS: Final = "runtime middleware (actoviq.runtime.define_middleware, e.g. beforeRun / afterRun)"
_AGENTS: Final = (
    "AgentSpec declarations run through actoviq.orchestration (agent_as_tool, execute_handoff)"
)
_SKILLS: Final = "a skills service in RuntimeServices with opt-in middleware (actoviq.profiles)"
_APPROVAL: Final = (
    "a ToolPolicy that returns InterruptDecision, then AgentRuntime.resume(state, decisions) "
    "(AgentClient.runtime is the façade's runtime)"
)
_MCP: Final = "actoviq.mcp (McpServer, mcp_tools) with the tools registered on an AgentRuntime"

CLIENT_REPLACEMENTS: Final[Mapping[str, str]] = {
    "homeDir": "sessionDirectory (the façade reads no home-directory configuration)",
    "workDir": "a workspace: RunOptions.workspace_id and the coding profile's workspace.boundary",
    "clientName": "default headers on your own SDK client (OpenAIResponsesProvider(client=...))",
    "clientVersion": "default headers on your own SDK client (OpenAIResponsesProvider(client=...))",
    "fallbackModel": "a wrapModelCall middleware that retries on another model",
    "promptCachingEnabled": "ModelSettings.prompt_cache_key on an AgentSpec run by AgentRuntime",
    "mcpServers": _MCP,
    "mcpTimeoutMs": _MCP,
    "hookTimeoutMs": _HOOKS,
    "hooks": _HOOKS,
    "typedHooks": _HOOKS,
    "agents": _AGENTS,
    "agentDirectories": _AGENTS,
    "loadDefaultAgentDirectories": _AGENTS,
    "disableDefaultAgents": _AGENTS,
    "maxSubagentDepth": "RunLimits.max_subagent_depth with actoviq.orchestration",
    "maxSubagentFanout": "RunLimits.max_subagent_fanout with actoviq.orchestration",
    "skills": _SKILLS,
    "skillDirectories": _SKILLS,
    "externalSkills": _SKILLS,
    "disableDefaultSkills": _SKILLS,
    "loadDefaultSkillDirectories": _SKILLS,
    "compact": "StoreRuntimeSessionAdapter.compact or the profiles' compaction opt-in",
    "classifier": _APPROVAL,
    "approver": _APPROVAL,
    "computerUse": "side-effect RuntimeTools behind a ToolPolicy and approvals",
    "browserUse": "side-effect RuntimeTools behind a ToolPolicy and approvals",
    "sessionManager": "sessionDirectory and AgentClient.sessions (LegacyJsonV1SessionStore)",
    "sandbox": "actoviq.workflow executors (LocalIsolatedProcessWorkflowExecutor)",
    "languageServers": "a RuntimeTool that talks to your language server",
    "autoWorktree": "a host-managed workspace per run (RunOptions.workspace_id)",
    "policyDocuments": "a ToolPolicy (actoviq.runtime.RuleToolPolicy) or policy.permissions",
}
"""0.x ``create_agent_sdk`` options the façade refuses, with what to use instead."""

RUN_REPLACEMENTS: Final[Mapping[str, str]] = {
    "tools": "tools given to create_agent_sdk (or AgentRuntime(tools=...))",
    "mcpServers": _MCP,
    "modelApi": "one modelApi per client: create_agent_sdk(modelApi=...)",
    "hooks": _HOOKS,
    "classifier": _APPROVAL,
    "approver": _APPROVAL,
    "canUseTool": _APPROVAL,
    "drainQueuedInputs": "one AgentRuntime.run per input, driven by the host",
    "drainFollowUpInputs": "one AgentRuntime.run per input, driven by the host",
    "workDir": "RunOptions.workspace_id with the coding profile's workspace.boundary",
    "inheritWorktree": "RunOptions.workspace_id with the coding profile's workspace.boundary",
    "sessionWorkDir": "RunOptions.workspace_id with the coding profile's workspace.boundary",
}
"""0.x per-run options the façade refuses, with what to use instead."""


def check_options(
    given: Mapping[str, Any],
    accepted: frozenset[str],
    replacements: Mapping[str, str],
    where: str,
) -> None:
    """Refuse 0.x options that have a replacement and names that were never options.

    Raises:
        NotImplementedError: a 0.x option the façade does not support (names the replacement).
        TypeError: a name that is no option at all.
    """
    for name in given:
        if name in accepted:
            continue
        replacement = replacements.get(name)
        if replacement is not None:
            raise NotImplementedError(
                f"{where}: the 0.x option {name!r} is not supported by actoviq.compat; use "
                f"{replacement} instead."
            )
        raise TypeError(f"{where}() got an unexpected keyword argument {name!r}")


CLIENT_OPTIONS: Final = frozenset(CreateAgentSdkOptions.__annotations__)
RUN_OPTIONS: Final = frozenset(AgentRunOptions.__annotations__)
