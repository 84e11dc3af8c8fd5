"""Supervisor and workflow bindings on actoviq-orchestration.

- ``orchestration`` service: a :class:`ProfileOrchestrator` (one :class:`ChildRunner` and run
  tree on the runtime, plus the agents a supervisor may spawn).
- ``orchestration.scope`` middleware: a run that is not already a scope of the tree becomes a
  root scope at ``beforeRun`` whose budget ledger is the profile's ``childBudget`` (children
  claimed past ``maxChildRuns`` or deeper than ``maxDepth`` are refused by the ledger); the
  scope is completed when the run ends.
- ``agent.spawn`` tool: runs one child agent under the calling run's scope (fail-fast).
- ``agent.as-tool`` tool: calls a spawnable agent like a tool through actoviq-orchestration's
  :class:`~actoviq.orchestration.AgentTool` (the supervisor stays the owner; a failed child is
  an error result; a child waiting for an approval suspends the call until it is resumed).
- ``workflow.approval`` tool: a human gate inside a workflow node (an approval interruption the
  host answers; replay-safe, so the determinism middleware lets it run).
- ``workflow.determinism`` middleware: a workflow node may be replayed, so only ``read`` and
  ``idempotent-write`` tools run and handoffs (graph order) are refused;
  :func:`reduce_node_outputs` is the deterministic reducer (node-id order, independent of
  completion order).

The ``background`` bindings live in :mod:`actoviq.profiles.background`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, cast

from actoviq.core import AbortSignal, AgentSpec, JsonObject, JsonValue, RunResult
from actoviq.orchestration import (
    FAIL_FAST,
    BudgetLimits,
    ChildRunner,
    InMemoryBudgetLedger,
    OrchestrationScope,
    agent_as_tool,
)
from actoviq.profiles.errors import ProfileError
from actoviq.runtime import (
    AgentRuntime,
    MiddlewareDefinition,
    RuntimeMiddlewareContext,
    RuntimeTool,
    ToolBehavior,
    ToolCallDenied,
    ToolDescriptor,
    ToolExecutionContext,
    define_middleware,
    json_schema_input,
    tool,
)

__all__ = [
    "ProfileOrchestrator",
    "WorkflowDeterminismError",
    "determinism_middleware",
    "orchestration_scope_middleware",
    "reduce_node_outputs",
    "supervisor_tools",
    "workflow_tools",
]


class WorkflowDeterminismError(ProfileError):
    """A workflow node tried something that breaks replay (a handoff)."""

    default_code: ClassVar[str] = "PROFILE_WORKFLOW_NONDETERMINISTIC"


def _profile(agent: AgentSpec[Any, Any] | None) -> Mapping[str, Any]:
    metadata = agent.metadata if agent is not None else None
    value = metadata.get("hadamardProfile") if metadata else None
    return value if isinstance(value, dict) else {}


def _child_budget(agent: AgentSpec[Any, Any] | None) -> BudgetLimits | None:
    orchestration = _profile(agent).get("orchestration")
    if not isinstance(orchestration, Mapping):
        return None
    budget = cast(Mapping[str, Any], orchestration).get("childBudget")
    if not isinstance(budget, Mapping):
        return None
    budget = cast(Mapping[str, Any], budget)
    return BudgetLimits(
        max_child_runs=budget.get("maxChildRuns"),
        max_depth=budget.get("maxDepth"),
        max_total_tokens=budget.get("maxTotalTokens"),
        max_cost_usd=budget.get("maxCostUsd"),
    )


def _nothing() -> None:
    return None


class ProfileOrchestrator:
    """The ``orchestration`` service: one child runner on the runtime and the spawnable agents.

    Args:
        runtime: the shared runtime.
        agents: the agents ``agent.spawn`` may start (by id).
    """

    def __init__(self, runtime: AgentRuntime, agents: Iterable[AgentSpec[Any, Any]] = ()) -> None:
        self.runtime = runtime
        self.runner = ChildRunner(runtime)
        self.agents: dict[str, AgentSpec[Any, Any]] = {agent.id: agent for agent in agents}
        self._owned: dict[str, Callable[[], None]] = {}

    def add_agent(self, agent: AgentSpec[Any, Any]) -> None:
        """Allow ``agent.spawn`` to start ``agent``."""
        self.agents[agent.id] = agent

    def enter(
        self, run_id: str, agent: AgentSpec[Any, Any] | None, signal: Any
    ) -> OrchestrationScope:
        """The run's scope: the existing one, or a new root carrying the profile's budget."""
        scope = self.runner.tree.scope(run_id)
        if scope is not None:
            return scope
        limits = _child_budget(agent)
        scope = self.runner.create_root(
            run_id=run_id,
            signal=signal,
            budget=InMemoryBudgetLedger(limits) if limits is not None else None,
        )
        # a cancelled run reaches neither afterRun nor onError: its abort completes the scope
        remove: Callable[[], None] = (
            signal.add_listener(lambda _reason: self.leave(run_id))
            if isinstance(signal, AbortSignal)
            else _nothing
        )
        self._owned[run_id] = remove
        return scope

    def leave(self, run_id: str) -> None:
        """Complete the root scope :meth:`enter` created for ``run_id`` (no-op otherwise)."""
        remove = self._owned.pop(run_id, None)
        if remove is not None:
            remove()
            self.runner.tree.complete(run_id)

    @property
    def open_scopes(self) -> int:
        """How many root scopes :meth:`enter` created are still open."""
        return len(self._owned)

    async def spawn(self, parent_run_id: str, agent_id: str, input: str) -> JsonObject:
        """Run ``agent_id`` as a child of the run ``parent_run_id`` (fail-fast).

        Raises:
            LookupError: the agent is not spawnable or the parent has no scope.
        """
        agent = self.agents.get(agent_id)
        if agent is None:
            raise LookupError(f'Agent "{agent_id}" is not spawnable here.')
        parent = self.runner.tree.scope(parent_run_id)
        if parent is None:
            raise LookupError("agent.spawn needs the orchestration.scope middleware on the run.")
        outcome = await self.runner.run(parent, agent, input, failure_policy=FAIL_FAST)
        result: RunResult[Any] | None = outcome.result
        output: JsonValue = None
        if result is not None:
            value = result.output
            output = value if isinstance(value, str | int | float | bool | None) else str(value)
        return {
            "agentId": agent_id,
            "childRunId": outcome.child_run_id,
            "status": outcome.status,
            "output": output,
        }


def orchestration_scope_middleware(
    orchestrator: ProfileOrchestrator, *, priority: int = -300
) -> tuple[MiddlewareDefinition, ...]:
    """``beforeRun`` (enter the run's scope) and ``afterRun``/``onError`` (leave it)."""

    def enter(ctx: RuntimeMiddlewareContext, next: Any) -> Any:
        if ctx.run is not None:
            orchestrator.enter(ctx.run.run_id, ctx.agent, ctx.run.signal)
        return next()

    async def leave(ctx: RuntimeMiddlewareContext, next: Any) -> Any:
        try:
            return await next()
        finally:
            if ctx.run is not None:
                orchestrator.leave(ctx.run.run_id)

    async def on_error(ctx: Any, next: Any) -> Any:
        source = getattr(ctx, "source_context", None)
        run = getattr(source, "run", None)
        if run is not None:
            orchestrator.leave(run.run_id)
        return await next()

    return (
        define_middleware("orchestration.scope", "beforeRun", enter, priority=priority),
        define_middleware("orchestration.scope.leave", "afterRun", leave, priority=priority),
        define_middleware("orchestration.scope.error", "onError", on_error, priority=priority),
    )


def supervisor_tools(orchestrator: ProfileOrchestrator) -> tuple[RuntimeTool, ...]:
    """``agent.spawn`` (a child run) and ``agent.as-tool`` (an agent tool) on spawnable agents."""

    @tool(name="agent.spawn", effect="side-effect")
    async def spawn(ctx: ToolExecutionContext, agent: str, task: str) -> dict[str, Any]:
        """Delegate a task to another agent and get its answer.

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
            agent: the id of the agent to run.
            task: what the agent should do.
        """
        return await orchestrator.spawn(ctx.run_id, agent, task)

    agent_tools: dict[str, RuntimeTool] = {}

    def agent_tool(agent_id: object) -> RuntimeTool:
        if not isinstance(agent_id, str) or agent_id not in orchestrator.agents:
            raise LookupError(f'Agent "{agent_id}" is not spawnable here.')
        found = agent_tools.get(agent_id)
        if found is None:
            found = agent_as_tool(orchestrator.agents[agent_id], orchestrator.runner)
            found = agent_tools[agent_id] = found.as_runtime_tool()
        return found

    async def as_tool(ctx: ToolExecutionContext, value: Any) -> Any:
        arguments = cast(Mapping[str, Any], value)
        delegate = agent_tool(arguments["agent"])
        outcome = delegate.execute(ctx, {"input": arguments["input"]})
        return await outcome if inspect.isawaitable(outcome) else outcome

    as_tool_schema: JsonObject = {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "The id of the agent to call."},
            "input": {"type": "string", "description": "The request for the agent."},
        },
        "required": ["agent", "input"],
        "additionalProperties": False,
    }
    call_agent = RuntimeTool(
        descriptor=ToolDescriptor(
            name="agent.as-tool",
            description=(
                "Ask another agent and get its answer as this tool's result; you stay in "
                "charge of the conversation."
            ),
            input=json_schema_input(as_tool_schema),
            behavior=ToolBehavior(effect="side-effect"),
        ),
        execute=as_tool,
    )
    return (spawn, call_agent)


def workflow_tools() -> tuple[RuntimeTool, ...]:
    """``workflow.approval``: wait for a human's approval before the node goes on."""

    @tool(name="workflow.approval", effect="idempotent-write", requires_approval=True)
    def approval(ctx: ToolExecutionContext, question: str) -> dict[str, Any]:
        """Ask a human to approve something before the workflow node continues.

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
            question: what the human is asked to approve.
        """
        decision = ctx.approval
        return {
            "approved": True,
            "question": question,
            "interruptionId": decision.interruption_id if decision is not None else None,
        }

    return (approval,)


def determinism_middleware(*, priority: int = -150) -> tuple[MiddlewareDefinition, ...]:
    """``beforeToolCall``: only read/idempotent tools; ``beforeHandoff``: no handoffs."""

    def tools(ctx: RuntimeMiddlewareContext, next: Any) -> Any:
        call = ctx.tool_call
        if call is None or ctx.runtime is None:
            return next()
        registered = ctx.runtime.tools.resolve(call.name)
        effect = registered.descriptor.effect if registered is not None else "side-effect"
        if effect not in ("read", "idempotent-write"):
            raise ToolCallDenied(
                f'Workflow nodes may be replayed: tool "{call.name}" ({effect}) is not '
                "read-only or idempotent."
            )
        return next()

    def handoffs(ctx: RuntimeMiddlewareContext, next: Any) -> Any:
        raise WorkflowDeterminismError(
            "Workflow nodes do not choose graph order: handoffs are refused."
        )

    return (
        define_middleware("workflow.determinism", "beforeToolCall", tools, priority=priority),
        define_middleware(
            "workflow.determinism.handoff", "beforeHandoff", handoffs, priority=priority
        ),
    )


def reduce_node_outputs(outputs: Mapping[str, JsonValue]) -> list[JsonObject]:
    """The deterministic reduction of node outputs: ``[{node, output}]`` in node-id order."""
    return [{"node": node, "output": outputs[node]} for node in sorted(outputs)]
