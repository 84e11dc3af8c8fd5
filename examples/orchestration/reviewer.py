"""Reviewer preset: an author drafts, reviewers comment in parallel, a reducer decides.

``reviewer_preset(author, reviewers, reducer)``: author -> each reviewer -> reducer, and
author -> reducer. The agent nodes here return the agent's text (``output="value"``).
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
    reviewer_preset,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime

ANSWERS: dict[str, str] = {
    "author": "Draft: CAS writes only if the value is unchanged.",
    "security": "Approve: no secrets exposed.",
    "style": "Approve: clear and short.",
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
        author = agent_workflow_node(
            "author",
            runner,
            make_agent("author", "You write one-sentence explanations.", model),
            input=lambda ctx: str(ctx.input),
            output="value",
        )

        def review_request(ctx: NodeContext) -> str:
            return f"Review this draft, start with Approve or Reject: {ctx.outputs['author']}"

        reviewers = [
            agent_workflow_node(
                name,
                runner,
                make_agent(name, f"You review for {name}.", model),
                input=review_request,
                output="value",
            )
            for name in ("security", "style")
        ]

        def verdict(ctx: NodeContext) -> str:
            votes = [str(v) for key, v in ctx.inputs.items() if key != "author"]
            approved = all(vote.lower().startswith("approve") for vote in votes)
            return ("accepted: " if approved else "needs work: ") + str(ctx.inputs["author"])

        graph = reviewer_preset(author, reviewers, WorkflowNode(id="verdict", reduce=verdict))
        async with runner.open_root("review") as root:
            result = await graph.execute(input="Explain compare-and-set.", scope=root)
    for node, output in result.outputs.items():
        print(f"{node}: {output}")


if __name__ == "__main__":
    asyncio.run(main())
