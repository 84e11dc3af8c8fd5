"""Helpers for the runtime-core tests (imported as a plain module; see conftest.py)."""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from actoviq.core import AbortController, AbortSignal, AgentSpec, JsonObject
from actoviq.events import RunEvent
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime
from actoviq.runtime.tools import (
    RuntimeTool,
    ToolApproval,
    ToolAuthorizationRequest,
    ToolBehavior,
    ToolDecision,
    ToolDescriptor,
    ToolEffect,
    ToolExecutionContext,
    ToolExecutionError,
    ToolFailure,
    ToolSchema,
    json_schema_input,
)


class RecordingCheckpointStore:
    """A RunCheckpointStore that keeps every saved state (deep copies) and every delete."""

    def __init__(self) -> None:
        self.saves: list[JsonObject] = []
        self.deletes: list[str] = []
        self.latest: dict[str, JsonObject] = {}

    async def save(self, state: JsonObject) -> None:
        copied = copy.deepcopy(state)
        self.saves.append(copied)
        self.latest[str(copied["runId"])] = copied

    async def load(self, run_id: str) -> JsonObject | None:
        state = self.latest.get(run_id)
        return copy.deepcopy(state) if state is not None else None

    async def delete(self, run_id: str) -> None:
        self.deletes.append(run_id)

    async def aclose(self) -> None:
        return None


def make_agent(**overrides: Any) -> AgentSpec[Any, Any]:
    values: dict[str, Any] = {
        "id": "assistant",
        "name": "Assistant",
        "instructions": "Answer briefly.",
        "model": "scripted:model-1",
    }
    values.update(overrides)
    return AgentSpec(**values)


def scripted_runtime(provider: ScriptedProvider, **options: Any) -> AgentRuntime:
    """An AgentRuntime whose only model provider is the scripted ``provider``."""
    return AgentRuntime(models=ModelRegistry([provider]), **options)


def json_tool(
    name: str,
    execute: Any,
    *,
    effect: Any = "read",
    requires_approval: bool = False,
    schema: JsonObject | None = None,
    timeout_ms: float | None = None,
) -> RuntimeTool:
    return RuntimeTool(
        descriptor=ToolDescriptor(
            name=name,
            description=f"The {name} tool.",
            input=json_schema_input(schema if schema is not None else {"type": "object"}),
            behavior=ToolBehavior(
                effect=effect, requires_approval=requires_approval, timeout_ms=timeout_ms
            ),
        ),
        execute=execute,
    )


_EVENT_SEQUENCE = itertools.count(1)


def run_event(type: str, data: object = None) -> RunEvent:
    """A RunEvent of ``type`` for run ``r`` with the next sequence number of this test session."""
    sequence = next(_EVENT_SEQUENCE)
    return RunEvent(
        event_id=f"e{sequence}",
        sequence=sequence,
        run_id="r",
        trace_id="a" * 32,
        span_id="b" * 16,
        type=type,
        timestamp="2026-01-01T00:00:00.000Z",
        data=data,  # type: ignore[arg-type]
    )


NUMBER_INPUT = json_schema_input(
    {
        "type": "object",
        "properties": {"value": {"type": "integer"}},
        "required": ["value"],
        "additionalProperties": False,
    }
)


class Recorder:
    """Counts executions and records the contexts tools saw."""

    def __init__(self, result: Callable[[Any], object] = lambda args: args["value"] * 2) -> None:
        self.calls = 0
        self.contexts: list[ToolExecutionContext] = []
        self._result = result

    def __call__(self, ctx: ToolExecutionContext, args: Any) -> object:
        self.calls += 1
        self.contexts.append(ctx)
        return self._result(args)


def make_tool(
    name: str = "double",
    execute: Callable[[ToolExecutionContext, Any], object] | None = None,
    *,
    effect: ToolEffect | None = None,
    requires_approval: bool = False,
    timeout_ms: float | None = None,
    output: ToolSchema | None = None,
    input: ToolSchema = NUMBER_INPUT,
) -> RuntimeTool:
    return RuntimeTool(
        descriptor=ToolDescriptor(
            name=name,
            description=f"{name} tool",
            input=input,
            output=output,
            behavior=ToolBehavior(
                effect=effect, requires_approval=requires_approval, timeout_ms=timeout_ms
            ),
        ),
        execute=execute if execute is not None else Recorder(),
    )


def tool_context(
    call_id: str = "call-1",
    *,
    signal: AbortSignal | None = None,
    deadline: float | None = None,
    approval: ToolApproval | None = None,
) -> ToolExecutionContext:
    return ToolExecutionContext(
        run_id="run-1",
        call_id=call_id,
        signal=signal if signal is not None else AbortController().signal,
        deadline=deadline,
        approval=approval,
    )


class StaticPolicy:
    """A ToolPolicy that returns one decision and records every request."""

    def __init__(self, decision: ToolDecision) -> None:
        self.decision = decision
        self.requests: list[ToolAuthorizationRequest] = []

    async def authorize(self, request: ToolAuthorizationRequest) -> ToolDecision:
        self.requests.append(request)
        return self.decision


async def expect_failure(awaitable: Awaitable[object]) -> ToolFailure:
    with pytest.raises(ToolExecutionError) as caught:
        await awaitable
    return caught.value.failure


def signalled_turn(
    turn: ScriptedTurn, called: asyncio.Event
) -> Callable[[ModelRequest], ScriptedTurn]:
    """A scripted turn that sets ``called`` when the provider is asked for it (no sleep needed
    to know a run reached its model call)."""

    def answer(request: ModelRequest) -> ScriptedTurn:
        called.set()
        return turn

    return answer


async def wait_event(event: asyncio.Event, seconds: float = 10) -> None:
    """Wait for ``event``, failing after a generous deadline instead of hanging."""
    async with asyncio.timeout(seconds):
        await event.wait()
