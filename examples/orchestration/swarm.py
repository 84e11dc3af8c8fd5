"""Swarm preset: agents joined by conditional routes, a reducer after the leaves.

``swarm_preset(agents, routes, reducer)``: routes are edges with ``when`` predicates; the
reducer follows every leaf (an agent that routes nowhere). Graphs are acyclic: for agents
that hand a conversation back and forth, use ``HandoffLoop`` (handoff.py).
Offline (no API key, or ACTOVIQ_OFFLINE=1) a scripted provider answers; with OPENAI_API_KEY or
ANTHROPIC_API_KEY the same graph runs against the real model.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from actoviq.core import AgentSpec, TextItem
from actoviq.orchestration import (
    ChildRunner,
    NodeContext,
    RouteContext,
    WorkflowEdge,
    WorkflowNode,
    agent_workflow_node,
    swarm_preset,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime

ANSWERS: dict[str, str] = {
    "scout": "Found 2 leads: pricing page, changelog.",
    "analyst": "Pricing changed on Monday.",
    "writer": "Brief: competitor pricing changed Monday.",
}


def scripted(request: ModelRequest) -> Any:
    """Offline answers, chosen by who is asking (the agent id in the system prompt)."""
    system = next(
        (i.text for i in request.input if isinstance(i, TextItem) and i.role == "system"), ""
    )
    return next((text for who, text in ANSWERS.items() if f"[{who}]" in system), "ok")


def choose_models() -> tuple[ModelRegistry, str, str]:
    """OpenAI or Anthropic when a key is set (and not ACTOVIQ_OFFLINE=1), else scripted."""
    if os.environ.get("ACTOVIQ_OFFLINE") != "1" and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        model = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        return ModelRegistry([OpenAIResponsesProvider()]), f"openai-responses:{model}", "OpenAI"
    if os.environ.get("ACTOVIQ_OFFLINE") != "1" and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        model = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        return ModelRegistry([AnthropicProvider()]), f"anthropic:{model}", "Anthropic"
    provider = ScriptedProvider([scripted], repeat_last=True)
    return ModelRegistry([provider]), "scripted:demo", "scripted provider (offline)"


def make_agent(agent_id: str, role: str, model: str) -> AgentSpec[Any, Any]:
    """An agent whose system prompt names it (the offline script answers by that tag)."""
    return AgentSpec(
        id=agent_id, name=agent_id.title(), instructions=f"[{agent_id}] {role}", model=model
    )


def has_leads(route: RouteContext) -> bool:
    return "lead" in str(route.source_output).lower()


def follow(source: str) -> Any:
    def prompt(ctx: NodeContext) -> str:
        return f"{ctx.input}\nPrevious step: {ctx.outputs.get(source, '')}"

    return prompt


async def main() -> None:
    registry, model, label = choose_models()
    print(f"provider: {label}")
    async with AgentRuntime(models=registry) as runtime:
        runner = ChildRunner(runtime)
        agents = [
            agent_workflow_node(
                name,
                runner,
                make_agent(name, f"You are the {name}. One sentence.", model),
                input=follow(previous),
                output="value",
            )
            for name, previous in (("scout", ""), ("analyst", "scout"), ("writer", "analyst"))
        ]
        routes = [
            WorkflowEdge(source="scout", target="analyst", when=has_leads),
            WorkflowEdge(source="analyst", target="writer"),
        ]

        def brief(ctx: NodeContext) -> str:
            return " | ".join(str(value) for value in ctx.inputs.values())

        graph = swarm_preset(agents, routes, WorkflowNode(id="brief", reduce=brief))
        async with runner.open_root("market-watch") as root:
            result = await graph.execute(input="What did the competitor change?", scope=root)
    for node, output in result.outputs.items():
        print(f"{node}: {output}")


if __name__ == "__main__":
    asyncio.run(main())
