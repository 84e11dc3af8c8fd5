"""Router preset: a router agent picks a route; only that specialist runs.

``router_preset(router, routes, reducer)``: each route has a ``when`` predicate over the
router's output; the reducer joins whichever route ran (activation ``any``).
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
    RouterRoute,
    WorkflowNode,
    agent_workflow_node,
    router_preset,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime

ANSWERS: dict[str, str] = {
    "router": "billing",
    "billing": "Refund issued for the duplicate charge.",
    "tech": "Restart the router.",
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


def route_to(name: str) -> Any:
    def when(route: RouteContext) -> bool:
        return name in str(route.source_output).lower()

    return when


async def main() -> None:
    registry, model, label = choose_models()
    print(f"provider: {label}")
    async with AgentRuntime(models=registry) as runtime:
        runner = ChildRunner(runtime)
        router = agent_workflow_node(
            "router",
            runner,
            make_agent("router", "Answer with one word: billing or tech.", model),
            input=lambda ctx: str(ctx.input),
            output="value",
        )
        routes = [
            RouterRoute(
                node=agent_workflow_node(
                    name,
                    runner,
                    make_agent(name, f"You are {name} support. One sentence.", model),
                    input=lambda ctx: str(ctx.input),
                    output="value",
                ),
                when=route_to(name),
            )
            for name in ("billing", "tech")
        ]

        def answer(ctx: NodeContext) -> str:
            return str(next(iter(ctx.inputs.values())))

        graph = router_preset(router, routes, WorkflowNode(id="answer", reduce=answer))
        async with runner.open_root("help-desk") as root:
            result = await graph.execute(input="I was charged twice.", scope=root)
    for node, status in result.statuses.items():
        print(f"{node}: {status}")
    print(f"answer: {result.outputs['answer']}")


if __name__ == "__main__":
    asyncio.run(main())
