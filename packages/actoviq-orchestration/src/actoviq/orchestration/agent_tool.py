"""Agent-as-tool: a manager calls a specialist like a tool and stays the owner (spec 04 §1.7).

The specialist runs as a child of the manager's scope (its own child session, or none), exactly
one ``tool_result`` comes back, and the child's transcript is never merged into the manager's
conversation. Run through the runtime (:meth:`AgentTool.as_runtime_tool`), a failed child is an
**error** tool result (``status: "error"``), never a successful value holding an error
(§8.2-19); a child that waits for an approval suspends the manager's call, so the approval
surfaces in the manager's result and is resumed through the manager (§8.2-15).

Example:
    >>> # runner = ChildRunner(runtime)
    >>> # tool = agent_as_tool(specialist, runner, effect="read")
    >>> # runtime.tools.register(tool.as_runtime_tool())
    >>> # manager = AgentSpec(..., tools=(tool.name,))
    >>> # result = await runner.run_scope(runner.create_root(), manager, "question")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, cast

import attrs

from actoviq.core import (
    AgentSpec,
    Interruption,
    ItemValidationError,
    JsonObject,
    JsonValue,
    JsonValueError,
    ToolResultItem,
    dumps_compact,
    find_json_violation,
)
from actoviq.events import current_trace_context
from actoviq.orchestration.child_runner import ChildRunner
from actoviq.orchestration.child_support import check_policy_declaration
from actoviq.orchestration.conversation import ConversationOwner, ConversationState
from actoviq.orchestration.errors import AgentToolError
from actoviq.orchestration.outcomes import COLLECT, ChildFailurePolicy, ChildRunOutcome
from actoviq.orchestration.scope import OrchestrationScope, ScopeNarrowing
from actoviq.runtime import (
    AgentInput,
    RuntimeTool,
    ToolBehavior,
    ToolDescriptor,
    ToolEffect,
    ToolExecutionContext,
    ToolExecutionError,
    ToolFailure,
    ToolResumption,
    ToolSuspension,
    json_schema_input,
)

__all__ = [
    "AGENT_TOOL_INPUT_SCHEMA",
    "AgentTool",
    "AgentToolInvocation",
    "agent_as_tool",
    "default_map_input",
]

AGENT_TOOL_INPUT_SCHEMA: Final[JsonObject] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The request for the agent."}},
    "required": ["input"],
    "additionalProperties": False,
}
"""The default input of an agent tool: ``{"input": "<request text>"}``."""

_CHILD_STATE: Final = "childState"


def default_map_input(value: JsonValue) -> AgentInput:
    """Text passes through, ``{"input": text}`` becomes the text, anything else compact JSON.

    The JSON text is what ``JSON.stringify`` writes (integral floats as integers, D2).

    Raises:
        JsonValueError: ``value`` is not strict JSON.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and set(value) == {"input"} and isinstance(value["input"], str):
        return value["input"]
    return dumps_compact(value, "agent tool input")


def _usage_json(outcome: ChildRunOutcome) -> JsonObject:
    assert outcome.result is not None
    return cast(JsonObject, outcome.result.usage.to_json())


@attrs.frozen(kw_only=True, slots=True, eq=False)
class AgentToolInvocation:
    """The result of :meth:`AgentTool.invoke`: the manager stays the owner.

    ``tool_result`` is None only when the child is ``interrupted`` (nothing to report yet); the
    conversation then has no new item.
    """

    mode: Literal["agent-as-tool"] = "agent-as-tool"
    owner_before: ConversationOwner
    owner_after: ConversationOwner
    conversation: ConversationState
    tool_result: ToolResultItem | None
    child: ChildRunOutcome


class AgentTool:
    """A specialist agent offered to a manager as one tool.

    Args:
        agent: the specialist.
        runner: the :class:`ChildRunner` of the manager's runtime.
        name: the tool name (default ``agent.id``; blank raises "name").
        description: default ``agent.description`` or ``"Delegate to <agent.name>."``.
        input_schema: the tool's JSON Schema (default :data:`AGENT_TOOL_INPUT_SCHEMA`).
        map_input: tool input → the child's input (default :func:`default_map_input`).
        child_context: tool input → the child's run context.
        failure_policy: default ``collect`` (a failed child is an error tool result).
        effect: the child's effect (default ``side-effect``); ``read`` tools may run in parallel.
        idempotency_key: tool input → the key of an ``idempotent-write`` child.
        metadata: merged into the child's run metadata.
        requires_approval: the manager's call needs an approval before the child starts.
        timeout_ms: the tool's own timeout.
        narrow: how the child's scope is stricter than the manager's.
        reserve_tokens: tokens reserved on the ledger for each child.

    Raises:
        AgentToolError: a blank name.
        ChildPolicyError: ``retry-safe`` for a side-effect child, or for an idempotent write
            without ``idempotency_key`` (every call would refuse it).
    """

    def __init__(
        self,
        agent: AgentSpec[Any, Any],
        runner: ChildRunner,
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, object] | None = None,
        map_input: Callable[[JsonValue], AgentInput] | None = None,
        child_context: Callable[[JsonValue], Any] | None = None,
        failure_policy: ChildFailurePolicy | None = None,
        effect: ToolEffect | None = None,
        idempotency_key: Callable[[JsonValue], str | None] | None = None,
        metadata: JsonObject | None = None,
        requires_approval: bool = False,
        timeout_ms: float | None = None,
        narrow: ScopeNarrowing | None = None,
        reserve_tokens: int = 0,
    ) -> None:
        resolved = (name if name is not None else agent.id).strip()
        if not resolved:
            raise AgentToolError("Agent tool name must not be empty.", details={"field": "name"})
        check_policy_declaration(failure_policy, effect, keyed=idempotency_key is not None)
        self.agent = agent
        self.runner = runner
        self.name = resolved
        self.description = description or agent.description or f"Delegate to {agent.name}."
        self.input_schema: JsonObject = dict(input_schema or AGENT_TOOL_INPUT_SCHEMA)  # type: ignore[arg-type]
        self.map_input = map_input or default_map_input
        self.child_context = child_context
        self.failure_policy = failure_policy or COLLECT
        self.effect: ToolEffect | None = effect
        self.idempotency_key = idempotency_key
        self.metadata = metadata
        self.requires_approval = requires_approval
        self.timeout_ms = timeout_ms
        self.narrow = narrow
        self.reserve_tokens = reserve_tokens
        self._implicit_roots: dict[str, int] = {}

    # -- direct invocation ------------------------------------------------------------------------

    async def _child(
        self, parent: OrchestrationScope, input: JsonValue, context: Any
    ) -> ChildRunOutcome:
        return await self.runner.run(
            parent,
            self.agent,
            self.map_input(input),
            context=context if context is not None else self._context(input),
            metadata=self.metadata,
            effect=self.effect,
            idempotency_key=self.idempotency_key(input) if self.idempotency_key else None,
            failure_policy=self.failure_policy,
            narrow=self.narrow,
            reserve_tokens=self.reserve_tokens,
        )

    def _context(self, input: JsonValue) -> Any:
        return self.child_context(input) if self.child_context is not None else None

    def tool_result(self, call_id: str, outcome: ChildRunOutcome) -> ToolResultItem | None:
        """The one ``tool_result`` for ``outcome`` (None while the child is interrupted).

        Raises:
            AgentToolError: a completed child's output is not strict JSON.
        """
        if outcome.status == "interrupted":
            return None
        if outcome.status == "completed":
            assert outcome.result is not None
            payload: JsonObject = {
                "childRunId": outcome.child_run_id,
                "agentId": outcome.result.agent_id,
                "status": outcome.result.status,
                "output": outcome.result.output,
                "usage": _usage_json(outcome),
            }
            try:  # the item checks its output is strict JSON (one walk)
                return ToolResultItem(
                    call_id=call_id, name=self.name, status="success", output=payload
                )
            except (ItemValidationError, JsonValueError) as error:
                raise AgentToolError(
                    f'Agent tool "{self.name}" output must be finite, acyclic JSON.',
                    details={"childRunId": outcome.child_run_id},
                ) from error
        error = outcome.error
        return ToolResultItem(
            call_id=call_id,
            name=self.name,
            status="error",
            output={
                "childRunId": outcome.child_run_id,
                "status": outcome.status,
                "error": {
                    "name": error.name if error else "Error",
                    "message": error.message if error else outcome.status,
                    "code": error.code if error else None,
                },
            },
        )

    async def invoke(
        self,
        *,
        parent: OrchestrationScope,
        conversation: ConversationState,
        call_id: str,
        input: JsonValue,
        context: Any = None,
    ) -> AgentToolInvocation:
        """Run the specialist for one call of the manager (the manager stays the owner).

        Raises:
            AgentToolError: a blank ``call_id`` ("callId"), or non-JSON child output.
            ChildRunError: the child failed under ``fail-fast``.
        """
        if not isinstance(call_id, str) or not call_id.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise AgentToolError(
                "Agent tool callId must not be empty.", details={"field": "callId"}
            )
        outcome = await self._child(parent, input, context)
        result = self.tool_result(call_id, outcome)
        owner = conversation.owner
        items = (*conversation.items, result) if result is not None else conversation.items
        return AgentToolInvocation(
            owner_before=owner,
            owner_after=owner,
            conversation=ConversationState(owner=owner, items=items),
            tool_result=result,
            child=outcome,
        )

    # -- inside a manager run ---------------------------------------------------------------------

    def as_runtime_tool(self) -> RuntimeTool:
        """This agent tool as a :class:`RuntimeTool` for the manager's runtime."""
        schema = self.input_schema
        return RuntimeTool(
            descriptor=ToolDescriptor(
                name=self.name,
                description=self.description,
                input=json_schema_input(schema, _strict_json),
                behavior=ToolBehavior(
                    effect=self.effect or "side-effect",
                    requires_approval=self.requires_approval,
                    timeout_ms=self.timeout_ms,
                ),
                metadata={"agentTool": {"agentId": self.agent.id}},
            ),
            execute=self._execute,
        )

    def _enter_parent(self, ctx: ToolExecutionContext) -> OrchestrationScope:
        tree = self.runner.tree
        scope = tree.scope(ctx.run_id)
        if scope is not None and ctx.run_id not in self._implicit_roots:
            return scope
        # The manager was not started through the runner: its run becomes an implicit root
        # (its trace, its signal); it is completed when its last agent-tool call ends.
        count = self._implicit_roots.get(ctx.run_id, 0)
        if scope is None:
            trace = current_trace_context()
            scope = self.runner.create_root(
                run_id=ctx.run_id,
                signal=ctx.signal,
                trace=trace if trace is not None and trace.run_id == ctx.run_id else None,
            )
        self._implicit_roots[ctx.run_id] = count + 1
        return scope

    def _leave_parent(self, run_id: str) -> None:
        count = self._implicit_roots.get(run_id)
        if count is None:
            return
        if count > 1:
            self._implicit_roots[run_id] = count - 1
            return
        del self._implicit_roots[run_id]
        self.runner.tree.complete(run_id)

    async def _execute(self, ctx: ToolExecutionContext, input: Any) -> JsonValue:
        parent = self._enter_parent(ctx)
        try:
            if ctx.resumption is not None:
                outcome = await self._resume(parent, ctx.resumption, input, ctx)
            else:
                outcome = await self._child(parent, input, ctx.context)
        finally:
            self._leave_parent(ctx.run_id)
        if outcome.status == "interrupted":
            raise ToolSuspension(self._suspended(outcome))
        result = self.tool_result(ctx.call_id, outcome)
        assert result is not None
        if result.status == "success":
            return result.output
        error = outcome.error
        detail = (
            f"{error.message} [{error.code}]"
            if error and error.code
            else (error.message if error else outcome.status)
        )
        raise ToolExecutionError(
            ToolFailure(
                kind="execution",
                tool_name=self.name,
                call_id=ctx.call_id,
                message=f'Agent "{self.agent.id}" {outcome.status} '
                f"(child run {outcome.child_run_id}): {detail}",
            )
        )

    def _suspended(self, outcome: ChildRunOutcome) -> list[Interruption]:
        assert outcome.result is not None
        assert outcome.result.state is not None
        marks: JsonObject = {
            "agentTool": self.name,
            "childAgentId": self.agent.id,
            "childRunId": outcome.child_run_id,
        }
        nested: list[Interruption] = []
        for index, interruption in enumerate(outcome.interruptions):
            metadata: JsonObject = {**(interruption.metadata or {}), **marks}
            if index == 0:
                metadata[_CHILD_STATE] = outcome.result.state
            nested.append(attrs.evolve(interruption, metadata=metadata))
        return nested

    async def _resume(
        self,
        parent: OrchestrationScope,
        resumption: ToolResumption,
        input: JsonValue,
        ctx: ToolExecutionContext,
    ) -> ChildRunOutcome:
        state = next(
            (
                (i.metadata or {}).get(_CHILD_STATE)
                for i in resumption.interruptions
                if isinstance((i.metadata or {}).get(_CHILD_STATE), dict)
            ),
            None,
        )
        if not isinstance(state, dict):
            raise ToolExecutionError(
                ToolFailure(
                    kind="execution",
                    tool_name=self.name,
                    call_id=ctx.call_id,
                    message=f'Agent tool "{self.name}" lost its child state; cannot resume.',
                )
            )
        context = ctx.context if ctx.context is not None else self._context(input)
        return await self.runner.resume(
            parent,
            self.agent,
            cast(JsonObject, state),
            resumption.decisions,
            context=context,
            failure_policy=self.failure_policy,
        )


def _strict_json(value: object) -> object:
    if find_json_violation(value) is not None:
        raise AgentToolError("Agent tool input must be finite, acyclic JSON.")
    return value


def agent_as_tool(agent: AgentSpec[Any, Any], runner: ChildRunner, **options: Any) -> AgentTool:
    """``AgentTool(agent, runner, **options)`` (see :class:`AgentTool` for the options)."""
    return AgentTool(agent, runner, **options)
