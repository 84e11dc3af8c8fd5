"""Team preset: members work in parallel, a plain reducer merges their outputs.

``team_preset(members, reducer)``: the reducer here is ordinary Python (a ``reduce`` node);
it receives the members' outputs in a fixed order.
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
    WorkflowNode,
    agent_workflow_node,
    team_preset,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime

ANSWERS: dict[str, str] = {
    "frontend": "Frontend: 3 pages left.",
    "backend": "Backend: API done, 1 migration left.",
    "docs": "Docs: quickstart written.",
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


async def main() -> None:
    registry, model, label = choose_models()
    print(f"provider: {label}")
    async with AgentRuntime(models=registry) as runtime:
        runner = ChildRunner(runtime)
        members = [
            agent_workflow_node(
                area,
                runner,
                make_agent(area, f"You own the {area}. Report status in one line.", model),
                input=lambda ctx: str(ctx.input),
                output="value",
            )
            for area in ("frontend", "backend", "docs")
        ]

        def merge(ctx: NodeContext) -> str:
            return "\n".join(f"* {line}" for line in ctx.inputs.values())

        graph = team_preset(members, WorkflowNode(id="report", reduce=merge))
        async with runner.open_root("status-team") as root:
            result = await graph.execute(input="Weekly status, please.", scope=root)
    print(result.outputs["report"])


if __name__ == "__main__":
    asyncio.run(main())
