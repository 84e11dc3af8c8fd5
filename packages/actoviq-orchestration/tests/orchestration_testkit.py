"""Helpers for the orchestration tests: one scripted provider per agent, one shared runtime."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn, TurnLike
from actoviq.runtime import AgentRuntime, RuntimeServices


def agent(agent_id: str, **overrides: Any) -> AgentSpec[Any, Any]:
    """An agent whose model is its own scripted provider (``<id>:model``)."""
    values: dict[str, Any] = {
        "id": agent_id,
        "name": agent_id.title(),
        "instructions": f"You are {agent_id}.",
        "model": f"{agent_id}:model",
    }
    values.update(overrides)
    return AgentSpec(**values)


def script(agent_id: str, turns: Sequence[TurnLike], **options: Any) -> ScriptedProvider:
    """The scripted provider of ``agent_id`` (its id is the agent id)."""
    return ScriptedProvider(turns, id=agent_id, **options)


def runtime_for(*providers: ScriptedProvider, **options: Any) -> AgentRuntime:
    """A runtime whose models are ``providers`` (default services: none registered)."""
    options.setdefault("services", RuntimeServices())
    return AgentRuntime(models=ModelRegistry(list(providers)), **options)


def call(tool: str, call_id: str = "call-1", **arguments: Any) -> ScriptedTurn:
    """A model turn that calls ``tool`` once."""
    return ScriptedTurn(tool_calls=[ToolCallItem(id=call_id, name=tool, input=arguments)])


def usage(total: int, cost: float = 0.0) -> dict[str, Any]:
    """A usage mapping for a scripted turn."""
    return {"inputTokens": total, "outputTokens": 0, "totalTokens": total, "costUsd": cost}
