"""Panel preset: three panelists answer in parallel, a chair reads every answer and decides.

``panel_preset(panelists, synthesize)`` returns a ``WorkflowGraph``; every member is an agent
node run by the one ``ChildRunner`` (one runtime, one provider, one budget, one trace).
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
    agent_workflow_node,
    panel_preset,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime

ANSWERS: dict[str, str] = {
    "optimist": "Ship it: the tests are green.",
    "skeptic": "Wait: nobody load-tested it.",
    "pragmatist": "Ship behind a flag.",
    "chair": "Decision: ship behind a flag, load-test this week.",
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
    question = "Should we release version 2 on Friday?"
    async with AgentRuntime(models=registry) as runtime:
        runner = ChildRunner(runtime)
        panelists = [
            agent_workflow_node(
                name,
                runner,
                make_agent(name, f"You are the {name}. One sentence.", model),
                input=lambda ctx: str(ctx.input),
                output="value",
            )
            for name in ("optimist", "skeptic", "pragmatist")
        ]

        def briefing(ctx: NodeContext) -> str:
            views = "\n".join(f"- {who}: {said}" for who, said in ctx.outputs.items())
            return f"{ctx.input}\nThe panel said:\n{views}\nDecide."

        chair = agent_workflow_node(
            "chair",
            runner,
            make_agent("chair", "You chair the panel and decide.", model),
            input=briefing,
            output="value",
        )
        graph = panel_preset(panelists, chair)
        async with runner.open_root("release-panel") as root:
            result = await graph.execute(input=question, scope=root)
    for node, output in result.outputs.items():
        print(f"{node}: {output}")


if __name__ == "__main__":
    asyncio.run(main())
