"""Helpers for the runtime-core tests (imported as a plain module; see conftest.py)."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from actoviq.core import AgentSpec, JsonObject
from actoviq.events import RunEvent
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime
from actoviq.runtime.tools import RuntimeTool, ToolBehavior, ToolDescriptor, json_schema_input


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
