"""The workflow profile: deterministic nodes whose outputs are reduced independently of order.

Two node runs of the workflow profile answer in parallel; one of them tries a side-effect tool,
which the ``workflow.determinism`` middleware refuses (a node may be replayed after a crash, so
only read and idempotent tools run). ``reduce_node_outputs`` merges the outputs in node order,
whatever order the nodes finished in.
"""

from __future__ import annotations

import asyncio

from actoviq.core import ToolCallItem, ToolResultItem
from actoviq.profiles import (
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    reduce_node_outputs,
    run_profile,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import InMemoryCheckpointStore, tool


@tool(name="send_invoice", effect="side-effect")
def send_invoice(customer: str) -> str:
    """Send an invoice (a side effect).

    Args:
        customer: who gets it.
    """
    return f"sent to {customer}"


async def main() -> None:
    provider = ScriptedProvider(
        [
            ScriptedTurn(
                tool_calls=[ToolCallItem(id="i", name="send_invoice", input={"customer": "acme"})]
            ),
            "billing: invoice prepared, not sent",
            "summary: 3 open items",
        ]
    )
    registry = default_profile_registry(allow=["send_invoice"])
    async with create_profile_runtime(
        registry, models=ModelRegistry([provider]), checkpoints=InMemoryCheckpointStore()
    ) as runtime:
        runtime.tools.register(send_invoice)
        billing = build_profile(
            "workflow", id="billing-node", model="scripted:demo", tools=["send_invoice"]
        )
        summary = build_profile("workflow", id="summary-node", model="scripted:demo")
        billed = await run_profile(runtime, billing, "Prepare the invoice for acme")
        summed = await run_profile(runtime, summary, "Summarise the open items")
    for item in billed.items:
        if isinstance(item, ToolResultItem):
            print(f"{item.name}: {item.status} {str(item.output)[:80]}")
    outputs = {"summary": summed.output, "billing": billed.output}
    print(reduce_node_outputs(outputs))


if __name__ == "__main__":
    asyncio.run(main())
