"""Manager-as-tool: a manager calls two specialists like tools and stays the conversation owner.

Each specialist runs as a child of the manager's scope (one budget, one set of permits, one trace)
on the same runtime and providers. Offline (no API key, or ACTOVIQ_OFFLINE=1) a scripted provider
answers; with OPENAI_API_KEY or ANTHROPIC_API_KEY the same code talks to the real model.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from actoviq.core import AgentSpec, TextItem, ToolCallItem, ToolResultItem
from actoviq.orchestration import BudgetLimits, ChildRunner, InMemoryBudgetLedger, agent_as_tool
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime


def scripted(request: ModelRequest) -> Any:
    """Offline answers, chosen by who is asking (the system prompt) and what happened so far."""
    system = next(
        (i.text for i in request.input if isinstance(i, TextItem) and i.role == "system"), ""
    )
    if system.startswith("[researcher]"):
        return "CAS writes a value only if it still equals the one you read."
    if system.startswith("[editor]"):
        return "Compare-and-set: update only when nobody changed it since you looked."
    answered = [item for item in request.input if isinstance(item, ToolResultItem)]
    if not answered:
        return ScriptedTurn(
            tool_calls=[
                ToolCallItem(id="c1", name="researcher", input={"input": "What is CAS?"}),
                ToolCallItem(id="c2", name="editor", input={"input": "Say it plainly."}),
            ]
        )
    return "Summary: CAS updates a value only if it is unchanged since you read it."


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


async def main() -> None:
    registry, model, label = choose_models()
    print(f"provider: {label}")
    researcher: AgentSpec[Any, Any] = AgentSpec(
        id="researcher",
        name="Researcher",
        instructions="[researcher] Answer precisely.",
        model=model,
    )
    editor: AgentSpec[Any, Any] = AgentSpec(
        id="editor", name="Editor", instructions="[editor] Use plain words.", model=model
    )
    manager: AgentSpec[Any, Any] = AgentSpec(
        id="manager",
        name="Manager",
        instructions="[manager] Ask the researcher and the editor, then summarise.",
        model=model,
        tools=("researcher", "editor"),
    )
    # --8<-- [start:manager]
    async with AgentRuntime(models=registry) as runtime:
        runner = ChildRunner(runtime)
        for specialist in (researcher, editor):
            runtime.tools.register(
                agent_as_tool(specialist, runner, effect="read").as_runtime_tool()
            )
        async with runner.open_root(
            "newsroom", budget=InMemoryBudgetLedger(BudgetLimits(max_child_runs=10))
        ) as root:
            scope = runner.tree.derive_child(root)
            result = await runner.run_scope(scope, manager, "Explain CAS for a newcomer.")
            budget = await root.budget.snapshot()
    # --8<-- [end:manager]
    print(f"owner: {result.agent_id} ({result.status})")
    for item in result.items:
        if isinstance(item, ToolResultItem) and isinstance(item.output, dict):
            print(f"  {item.name}: {item.output['output']}")
    print(f"answer: {result.output}")
    print(f"children started: {budget.child_runs_started}")


if __name__ == "__main__":
    asyncio.run(main())
