"""The supervisor profile: delegate to child agents within the profile's child budget.

The supervisor runs in its own orchestration scope whose budget ledger is the profile's
``childBudget`` (capped by its limits: here one child). The first ``agent.spawn`` runs the
translator as a child run on the same runtime; the second is refused by the budget before the
child ever calls the model.
"""

from __future__ import annotations

import asyncio

from actoviq.core import AgentSpec, ToolCallItem, ToolResultItem
from actoviq.profiles import (
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn


def spawn(call_id: str, task: str) -> ScriptedTurn:
    """One ``agent.spawn`` call for the translator."""
    return ScriptedTurn(
        tool_calls=[
            ToolCallItem(
                id=call_id, name="agent.spawn", input={"agent": "translator", "task": task}
            )
        ]
    )


async def main() -> None:
    translator = AgentSpec(
        id="translator",
        name="Translator",
        instructions="Translate to French.",
        model="scripted:demo",
    )
    provider = ScriptedProvider(
        [
            spawn("a", "hello"),
            "bonjour",
            spawn("b", "goodbye"),
            "Translated: bonjour (budget used up).",
        ]
    )
    registry = default_profile_registry(allow=["agent.spawn"], spawnable_agents=[translator])
    supervisor = build_profile("supervisor", model="scripted:demo", limits={"maxSubagentFanout": 1})
    budget = supervisor.config.orchestration.child_budget
    print(f"child budget: {budget.to_json() if budget else None}")
    async with create_profile_runtime(registry, models=ModelRegistry([provider])) as runtime:
        result = await run_profile(runtime, supervisor, "Translate hello and goodbye")
    for item in result.items:
        if isinstance(item, ToolResultItem):
            print(f"{item.call_id}: {item.status} {str(item.output)[:90]}")
    print(result.output)
    print(f"model requests: {len(provider.calls)}")


if __name__ == "__main__":
    asyncio.run(main())
