"""Newcomer program 1: an agent whose tool needs approval, streaming its answer to the terminal.

Offline (no OPENAI_API_KEY, or ACTOVIQ_OFFLINE=1) a scripted model answers and the call is
approved automatically; with a key the real model answers and you approve at the prompt.
"""

from __future__ import annotations

import asyncio
import os

from actoviq.core import ToolCallItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, AgentSpec, Interruption, InterruptionDecision, tool

OFFLINE = os.environ.get("ACTOVIQ_OFFLINE") == "1" or not os.environ.get("OPENAI_API_KEY")


def models() -> ModelRegistry | None:
    """None with a key (the runtime then uses the environment's providers), else a script."""
    if not OFFLINE:
        return None
    call = ToolCallItem(
        id="c1", name="send_email", input={"to": "ops@example.test", "subject": "Deployed"}
    )
    done = ScriptedTurn(text="I emailed ops.", stream_deltas=["I emailed ", "ops."])
    script = ScriptedProvider([ScriptedTurn(tool_calls=[call]), done])
    return ModelRegistry([script], default_model="scripted:demo")


# --- the program ---------------------------------------------------------------------------------


@tool(requires_approval=True)
def send_email(to: str, subject: str) -> str:
    """Send an email."""
    return f"sent {subject!r} to {to}"


agent = AgentSpec(id="mailer", name="Mailer", instructions="Email ops.", tools=["send_email"])


async def decide(ask: Interruption) -> InterruptionDecision:
    prompt = f"\nApprove {ask.tool_name}({ask.input})? [y/N] "
    if OFFLINE or await asyncio.to_thread(input, prompt) == "y":
        return InterruptionDecision.approve(ask)
    return InterruptionDecision.reject(ask)


async def main() -> None:
    async with AgentRuntime(models=models(), tools=[send_email]) as runtime:
        handle = runtime.stream(agent, "Tell ops the deploy is done.")
        while True:
            async for text in handle.text_deltas():
                print(text, end="", flush=True)
            result = await handle.result()
            if result.status != "interrupted":
                break
            decisions = [await decide(ask) for ask in result.interruptions]
            handle = runtime.resume(result.state, decisions)
    print()


if __name__ == "__main__":
    asyncio.run(main())
