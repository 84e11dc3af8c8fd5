"""Exactly-once resume: an approval delivered twice, to two workers, pays once.

A payment needs approval, so the first run pauses durably. The approval webhook is then delivered
twice, to two workers sharing one checkpoint store (think: two processes behind a load balancer):
both call ``resume``. One claims the run and pays; the other is refused with
``RunStateStaleError`` and runs nothing. A late third delivery, after the run completed, is
refused too. The payment tool is a plain function: it runs in the runtime's worker threads, so
it never blocks the event loop.

Offline (``ACTOVIQ_OFFLINE=1`` or no API key) the scripted provider plays the model; with
``OPENAI_API_KEY`` or ``ANTHROPIC_API_KEY`` a real model decides to call the tool.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

from actoviq.core import AgentSpec, RunResult, ToolCallItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InMemoryCheckpointStore,
    InterruptionDecision,
    RunStateStaleError,
    StoreRunCheckpointAdapter,
    tool,
)

PAYMENTS: list[str] = []


@tool(effect="side-effect", requires_approval=True, timeout_ms=5_000)
def send_payment(invoice: str, amount: int) -> dict[str, object]:
    """Pay an invoice (needs a human approval).

    Args:
        invoice: the invoice number.
        amount: the amount in cents.
    """
    PAYMENTS.append(invoice)
    return {"paid": amount, "invoice": invoice, "thread": threading.current_thread().name}


def models() -> tuple[ModelRegistry, str, str]:
    """A real provider when a key is set (and not offline), else the scripted one."""
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        name = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        return ModelRegistry([OpenAIResponsesProvider()]), f"openai-responses:{name}", name
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        name = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        return ModelRegistry([AnthropicProvider()]), f"anthropic:{name}", name
    script = [
        ScriptedTurn(
            tool_calls=[
                ToolCallItem(
                    id="call_pay", name="send_payment", input={"invoice": "INV-42", "amount": 1250}
                )
            ]
        ),
        ScriptedTurn(text="Invoice INV-42 is paid."),
    ]
    return ModelRegistry([ScriptedProvider(script)]), "scripted:demo-model", "scripted"


def worker(registry: ModelRegistry, store: StoreRunCheckpointAdapter, agent: Any) -> AgentRuntime:
    """One worker process's runtime (here: two of them in one process, sharing one store)."""
    return AgentRuntime(
        models=registry, tools=[send_payment], checkpoint_store=store, agents=[agent]
    )


async def main() -> None:
    registry, model, label = models()
    print(f"provider: {label}")
    store = StoreRunCheckpointAdapter(InMemoryCheckpointStore())
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="payer",
        name="Payer",
        instructions="Pay invoice INV-42 (1250 cents) with send_payment, then confirm briefly.",
        model=model,
        tools=("send_payment",),
    )
    async with worker(registry, store, agent) as first:
        paused = await first.run(agent, "Please pay INV-42.", run_id="pay-42")
    if paused.status != "interrupted":
        print(f"the model did not ask to pay ({paused.status}): {paused.output}")
        return
    print(f"paused: {paused.interruptions[0].reason}")
    approve = [InterruptionDecision.approve(i.id) for i in paused.interruptions]

    # The webhook arrives twice, at two workers, at the same time.
    one, two = worker(registry, store, agent), worker(registry, store, agent)
    async with one, two:
        outcomes = await asyncio.gather(
            one.resume(paused.state, approve).result(),
            two.resume(paused.state, approve).result(),
            return_exceptions=True,
        )
        for name, outcome in zip(("worker 1", "worker 2"), outcomes, strict=True):
            if isinstance(outcome, RunResult):
                print(f"{name}: {outcome.status}: {outcome.output}")
            elif isinstance(outcome, RunStateStaleError):
                print(f"{name}: refused ({outcome.code}, {outcome.reason}), nothing ran")
            else:
                raise outcome
        try:  # a late, third delivery
            await one.resume(paused.state, approve).result()
        except RunStateStaleError as late:
            print(f"late delivery: refused (stored status {late.stored_status})")
    print(f"payments made: {len(PAYMENTS)} (exactly once)")
    assert len(PAYMENTS) == 1


if __name__ == "__main__":
    asyncio.run(main())
