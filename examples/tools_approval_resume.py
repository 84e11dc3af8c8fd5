"""Tools with approval: the run pauses durably, the host approves, resume finishes the turn.

The checkpoint store keeps the interrupted state; a *new* runtime (think: another process) loads
it and resumes with the decision. The side-effect tool runs exactly once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from support import choose_models

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.providers.testing import ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InMemoryCheckpointStore,
    InterruptionDecision,
    StoreRunCheckpointAdapter,
    ToolRegistry,
    tool,
)

SENT: list[str] = []


@tool(effect="side-effect", requires_approval=True)
def send_email(to: str, subject: str) -> dict[str, object]:
    """Send an email (requires approval).

    Args:
        to: recipient address.
        subject: subject line.
    """
    SENT.append(to)
    return {"sent": True, "messageId": f"email-{len(SENT)}", "to": to}


@tool(effect="read")
def get_status(service: str) -> str:
    """Deployment status of a service.

    Args:
        service: the service name.
    """
    return f"{service}: deployed"


SCRIPT = [
    ScriptedTurn(
        tool_calls=[
            ToolCallItem(id="call_status", name="get_status", input={"service": "api"}),
            ToolCallItem(
                id="call_email",
                name="send_email",
                input={"to": "ops@example.test", "subject": "Deploy done"},
            ),
        ]
    ),
    ScriptedTurn(text="Done: the API is deployed and ops were emailed."),
]


def build_runtime(models_registry: object, store: StoreRunCheckpointAdapter) -> AgentRuntime:
    from actoviq.providers import ModelRegistry

    assert isinstance(models_registry, ModelRegistry)
    return AgentRuntime(
        models=models_registry,
        tools=ToolRegistry([send_email, get_status]),
        checkpoint_store=store,
    )


async def main() -> None:
    models = choose_models(SCRIPT)
    print(f"provider: {models.label}")
    store = StoreRunCheckpointAdapter(InMemoryCheckpointStore())
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="mailer",
        name="Mailer",
        instructions="Check the api service status with get_status, then email ops@example.test.",
        model=models.model,
        tools=("get_status", "send_email"),
    )
    runtime = build_runtime(models.registry, store)
    result = await runtime.run(agent, "Tell ops that the deploy is done.", run_id="deploy-1")
    print(f"first leg: {result.status}")
    for interruption in result.interruptions:
        print(f"  needs {interruption.kind}: {interruption.reason} (id {interruption.id})")
    print(f"  emails sent so far: {len(SENT)}")
    await runtime.close()

    # Later, maybe in another process: a new runtime resumes from the checkpoint.
    saved = await store.load("deploy-1")
    assert saved is not None
    resumed_runtime = AgentRuntime(
        models=models.registry,
        tools=ToolRegistry([send_email, get_status]),
        checkpoint_store=store,
        agents=[agent],
    )
    async with resumed_runtime:
        decisions = [
            InterruptionDecision.approve(entry.id)
            for entry in result.interruptions
            if entry.kind == "approval"
        ]
        print(f"approving {len(decisions)} call(s) and resuming...")
        async with resumed_runtime.resume(saved, decisions) as handle:
            async for event in handle:
                if event.type == "model.text.delta" and isinstance(event.data, dict):
                    print(event.data.get("delta", ""), end="", flush=True)
                elif event.type in ("tool.started", "tool.completed") and isinstance(
                    event.data, dict
                ):
                    print(f"  [{event.type} {event.data.get('name')}] (seq {event.sequence})")
            final = await handle.result()
    print(f"\nsecond leg: {final.status}: {final.output}")
    print(f"emails sent: {len(SENT)} (exactly once)")


if __name__ == "__main__":
    asyncio.run(main())
