"""The workflow profile: deterministic nodes of a WorkflowGraph, merged by the reducer.

Two workflow-profile agents run as nodes of an orchestration ``WorkflowGraph`` (children of the
graph's scope, on the same runtime); the ``merge`` node is the ``workflow.reducer`` and merges
their outputs in node order, whatever order they finished in. The billing node tries a
side-effect tool, which ``workflow.determinism`` refuses (a node may be replayed after a crash,
so only read and idempotent tools run).
"""

from __future__ import annotations

import asyncio

from actoviq.core import TextItem, ToolCallItem
from actoviq.orchestration import WorkflowEdge, WorkflowGraph
from actoviq.profiles import (
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    profile_workflow_node,
    reducer_workflow_node,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import InMemoryCheckpointStore, tool

SENT: list[str] = []


@tool(name="send_invoice", effect="side-effect")
def send_invoice(customer: str) -> str:
    """Send an invoice (a side effect).

    Args:
        customer: who gets it.
    """
    SENT.append(customer)
    return f"sent to {customer}"


def answer(request: ModelRequest) -> str | ScriptedTurn:
    """The scripted model: billing tries to send, then prepares; summary summarises."""
    texts = " ".join(item.text for item in request.input if isinstance(item, TextItem))
    if "billing" not in texts:
        return "summary: 3 open items"
    if not any(item.type == "tool_result" for item in request.input):
        call = ToolCallItem(id="i", name="send_invoice", input={"customer": "acme"})
        return ScriptedTurn(tool_calls=[call])
    return "billing: invoice prepared, not sent (sending is not replay-safe)"


async def main() -> None:
    registry = default_profile_registry(allow=["send_invoice"])
    async with create_profile_runtime(
        registry,
        models=ModelRegistry([ScriptedProvider([answer] * 3)]),
        checkpoints=InMemoryCheckpointStore(),
    ) as runtime:
        runtime.tools.register(send_invoice)
        assert registry.orchestrator is not None
        runner = registry.orchestrator.runner
        billing = build_profile(
            "workflow", id="billing-node", model="scripted:demo", tools=["send_invoice"]
        )
        summary = build_profile("workflow", id="summary-node", model="scripted:demo")
        graph = WorkflowGraph(
            nodes=[
                profile_workflow_node(
                    "summary", runner, summary, input=lambda c: f"summary {c.input}"
                ),
                profile_workflow_node(
                    "billing", runner, billing, input=lambda c: f"billing {c.input}"
                ),
                reducer_workflow_node("merge"),
            ],
            edges=[
                WorkflowEdge(source="summary", target="merge"),
                WorkflowEdge(source="billing", target="merge"),
            ],
        )
        result = await graph.execute(input="for acme", scope=runner.create_root())
    for entry in result.outputs["merge"]:
        print(f"{entry['node']}: {entry['output']}")
    print(f"invoices actually sent: {len(SENT)}")


if __name__ == "__main__":
    asyncio.run(main())
