"""Model-driven handoff: triage hands the conversation to billing, who becomes the owner.

The triage agent declares ``handoffs``; the runtime offers them to the model as tools, and
``HandoffLoop`` executes the handoff the model asks for (bounded by ``max_handoffs``). The target
sees the conversation once, on the same session. Offline (no API key, or ACTOVIQ_OFFLINE=1) a
scripted provider answers; with OPENAI_API_KEY or ANTHROPIC_API_KEY the real model decides.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from actoviq.core import AgentSpec, TextItem, ToolCallItem
from actoviq.orchestration import ChildRunner, HandoffLoop, HandoffSpec, TenantSessionNamespace
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InMemorySessionStore,
    RuntimeServices,
    StoreRuntimeSessionAdapter,
)


def scripted(request: ModelRequest) -> Any:
    """Offline answers, chosen by who is asking (the system prompt)."""
    system = next(
        (i.text for i in request.input if isinstance(i, TextItem) and i.role == "system"), ""
    )
    if system.startswith("[billing]"):
        return ScriptedTurn(
            text="I refunded the duplicate charge of 12 EUR.",
            stream_deltas=["I refunded ", "the duplicate charge ", "of 12 EUR."],
        )
    return ScriptedTurn(
        text="Let me get billing.",
        tool_calls=[ToolCallItem(id="h1", name="to_billing", input={"reason": "charge"})],
    )


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
    billing: AgentSpec[Any, Any] = AgentSpec(
        id="billing", name="Billing", instructions="[billing] You fix charges.", model=model
    )
    to_billing = HandoffSpec(
        id="to_billing", target=billing, description="Charges, refunds and invoices."
    )
    triage: AgentSpec[Any, Any] = AgentSpec(
        id="triage",
        name="Triage",
        instructions="[triage] Hand billing questions to billing.",
        model=model,
        handoffs=(to_billing.ref(),),
    )
    store = InMemorySessionStore()
    services = RuntimeServices({"sessions": lambda: StoreRuntimeSessionAdapter(store)})
    async with AgentRuntime(models=registry, services=services) as runtime:
        runner = ChildRunner(runtime)
        loop = HandoffLoop(runner, max_handoffs=2, handoffs=[to_billing])
        scope = runner.create_root(tenant_session=TenantSessionNamespace(session_id="chat-7"))
        async with loop.stream(scope, triage, "I was charged twice this month.") as stream:
            async for event in stream:
                if event.type == "model.text.delta" and isinstance(event.data, dict):
                    print(event.data["delta"], end="", flush=True)
                elif event.type == "handoff.requested" and isinstance(event.data, dict):
                    print(
                        f"\n[handoff {event.data['sourceAgentId']} -> "
                        f"{event.data['targetAgentId']}]"
                    )
            outcome = await stream.result()
        history = await StoreRuntimeSessionAdapter(store).load(
            tenant_id="default", session_id="chat-7"
        )
    print(f"\nowner now: {outcome.owner.agent_id} ({outcome.status})")
    print(f"session chat-7 holds {len(history.items)} items, the question once")


if __name__ == "__main__":
    asyncio.run(main())
