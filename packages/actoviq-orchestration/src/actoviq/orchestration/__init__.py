"""Actoviq orchestration: multi-agent work on the one runtime.

Every primitive (agent-as-tool, handoff, workflow graphs, presets) runs its agents through one
:class:`ChildRunner` over the shared ``AgentRuntime``, inside an :class:`OrchestrationScope`
derived from a root scope: one budget ledger, one set of concurrency permits, one deadline, one
policy and one trace for the whole tree (spec ``04-orchestration-storage.md`` §1, decision D8).

Example:
    >>> # runner = ChildRunner(runtime)
    >>> # root = runner.create_root(budget=InMemoryBudgetLedger(BudgetLimits(max_child_runs=10)))
    >>> # specialist_tool = agent_as_tool(specialist, runner, effect="read")
    >>> # runtime.tools.register(specialist_tool.as_runtime_tool())
    >>> # result = await runner.run_scope(root, manager, "question")
"""

from __future__ import annotations

from actoviq.orchestration.agent_tool import (
    AGENT_TOOL_INPUT_SCHEMA,
    AgentTool,
    AgentToolInvocation,
    agent_as_tool,
    default_map_input,
)
from actoviq.orchestration.background import (
    BackgroundChildManager,
    BackgroundConfig,
    BackgroundEngine,
    DurableChildCancelledError,
    DurableChildConflictError,
    DurableChildError,
    DurableChildFailedError,
    DurableChildHandle,
    DurableChildInterruptedError,
    DurableChildLeasedError,
    DurableChildLeaseLostError,
    DurableChildNotFoundError,
    DurableChildNotReadyError,
    DurableChildReconciliationError,
    DurableChildRecord,
    DurableChildStateError,
    RecoveryReport,
    StoreBackgroundEngine,
    register_background_engine,
)
from actoviq.orchestration.budget import (
    UNBOUNDED_COST_USD,
    UNBOUNDED_INT,
    BudgetLedger,
    BudgetLimits,
    BudgetReservation,
    BudgetSnapshot,
    InMemoryBudgetLedger,
    SubBudgetLedger,
)
from actoviq.orchestration.child_runner import ChildRunner, EventCallback, child_session_id
from actoviq.orchestration.concurrency import DEFAULT_CAPACITY, ConcurrencyController, Permit
from actoviq.orchestration.conversation import ConversationOwner, ConversationState
from actoviq.orchestration.durable_budget import DurableBudgetLedger
from actoviq.orchestration.errors import (
    AgentToolError,
    BudgetExceededError,
    ChildPolicyError,
    ChildRunError,
    ChildScopeError,
    HandoffError,
    HandoffLimitExceededError,
    OrchestrationConfigError,
    OrchestrationError,
    RunTreeConflictError,
    ScopeWideningError,
)
from actoviq.orchestration.events import ORCHESTRATION_EVENT_TYPES, ScopeEvents
from actoviq.orchestration.graph import (
    NodeContext,
    RouteContext,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowGraphError,
    WorkflowGraphResult,
    WorkflowNode,
    WorkflowNodeExecutionError,
    WorkflowNodeStatus,
)
from actoviq.orchestration.handoff import (
    HandoffFilterContext,
    HandoffInputFilter,
    HandoffResult,
    HandoffSpec,
    execute_handoff,
)
from actoviq.orchestration.handoff_loop import HandoffLoop, HandoffLoopResult, HandoffLoopStream
from actoviq.orchestration.outcomes import (
    COLLECT,
    FAIL_FAST,
    ChildError,
    ChildFailureMode,
    ChildFailurePolicy,
    ChildOutcomeStatus,
    ChildRunOutcome,
    SessionMode,
)
from actoviq.orchestration.persisted import PersistedScope, persist_scope, restore_scope
from actoviq.orchestration.policies import (
    SecurityPolicyRef,
    TenantSessionNamespace,
    WorkspaceAccess,
    WorkspacePolicy,
)
from actoviq.orchestration.presets import (
    PresetError,
    RouterRoute,
    agent_workflow_node,
    panel_preset,
    reviewer_preset,
    router_preset,
    swarm_preset,
    team_preset,
)
from actoviq.orchestration.scope import OrchestrationScope, ScopeNarrowing
from actoviq.orchestration.tree import (
    OrchestrationDeadlineExceededError,
    RunTree,
    RunTreeNodeInfo,
)

__all__ = [
    "AGENT_TOOL_INPUT_SCHEMA",
    "COLLECT",
    "DEFAULT_CAPACITY",
    "FAIL_FAST",
    "ORCHESTRATION_EVENT_TYPES",
    "UNBOUNDED_COST_USD",
    "UNBOUNDED_INT",
    "AgentTool",
    "AgentToolError",
    "AgentToolInvocation",
    "BackgroundChildManager",
    "BackgroundConfig",
    "BackgroundEngine",
    "BudgetExceededError",
    "BudgetLedger",
    "BudgetLimits",
    "BudgetReservation",
    "BudgetSnapshot",
    "ChildError",
    "ChildFailureMode",
    "ChildFailurePolicy",
    "ChildOutcomeStatus",
    "ChildPolicyError",
    "ChildRunError",
    "ChildRunOutcome",
    "ChildRunner",
    "ChildScopeError",
    "ConcurrencyController",
    "ConversationOwner",
    "ConversationState",
    "DurableBudgetLedger",
    "DurableChildCancelledError",
    "DurableChildConflictError",
    "DurableChildError",
    "DurableChildFailedError",
    "DurableChildHandle",
    "DurableChildInterruptedError",
    "DurableChildLeaseLostError",
    "DurableChildLeasedError",
    "DurableChildNotFoundError",
    "DurableChildNotReadyError",
    "DurableChildReconciliationError",
    "DurableChildRecord",
    "DurableChildStateError",
    "EventCallback",
    "HandoffError",
    "HandoffFilterContext",
    "HandoffInputFilter",
    "HandoffLimitExceededError",
    "HandoffLoop",
    "HandoffLoopResult",
    "HandoffLoopStream",
    "HandoffResult",
    "HandoffSpec",
    "InMemoryBudgetLedger",
    "NodeContext",
    "OrchestrationConfigError",
    "OrchestrationDeadlineExceededError",
    "OrchestrationError",
    "OrchestrationScope",
    "Permit",
    "PersistedScope",
    "PresetError",
    "RecoveryReport",
    "RouteContext",
    "RouterRoute",
    "RunTree",
    "RunTreeConflictError",
    "RunTreeNodeInfo",
    "ScopeEvents",
    "ScopeNarrowing",
    "ScopeWideningError",
    "SecurityPolicyRef",
    "SessionMode",
    "StoreBackgroundEngine",
    "SubBudgetLedger",
    "TenantSessionNamespace",
    "WorkflowEdge",
    "WorkflowGraph",
    "WorkflowGraphError",
    "WorkflowGraphResult",
    "WorkflowNode",
    "WorkflowNodeExecutionError",
    "WorkflowNodeStatus",
    "WorkspaceAccess",
    "WorkspacePolicy",
    "agent_as_tool",
    "agent_workflow_node",
    "child_session_id",
    "default_map_input",
    "execute_handoff",
    "panel_preset",
    "persist_scope",
    "register_background_engine",
    "restore_scope",
    "reviewer_preset",
    "router_preset",
    "swarm_preset",
    "team_preset",
]
