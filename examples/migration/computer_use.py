"""0.x computer use in 1.0: desktop actions as side-effect tools behind a policy and an approval.

The compat façade refuses the 0.x ``computerUse`` option and names the replacement. In 1.0 each
desktop action is a ``RuntimeTool``: a ``RuleToolPolicy`` lets the agent look (``screenshot``)
freely, asks before it acts (``click``) and refuses everything else. The run stops at the
approval; the host decides and resumes it. Offline (no OPENAI_API_KEY, or ACTOVIQ_OFFLINE=1) a
scripted model drives a simulated screen and the click is approved automatically; with a key the
real model drives it and you approve at the prompt.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, cast

from actoviq.compat import configure_compat_diagnostics, create_agent_sdk
from actoviq.core import ToolCallItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    AgentSpec,
    Interruption,
    InterruptionDecision,
    RuleToolPolicy,
    tool,
)

OFFLINE = os.environ.get("ACTOVIQ_OFFLINE") == "1" or not os.environ.get("OPENAI_API_KEY")
SCREEN: dict[str, bool] = {"Deploy": False, "Cancel": False}  # button -> pressed


def models() -> ModelRegistry | None:
    """None with a key (the runtime then uses the environment's providers), else a script."""
    if not OFFLINE:
        return None
    look = ToolCallItem(id="c1", name="screenshot", input={})
    press = ToolCallItem(id="c2", name="click", input={"button": "Deploy"})
    script = [
        ScriptedTurn(tool_calls=[look]),
        ScriptedTurn(tool_calls=[press]),
        ScriptedTurn(text="Pressed Deploy."),
    ]
    return ModelRegistry([ScriptedProvider(script)], default_model="scripted:demo")


@tool(effect="read")
def screenshot() -> str:
    """Describe what is on the screen."""
    return "buttons: " + ", ".join(
        f"{name} ({'pressed' if on else 'up'})" for name, on in SCREEN.items()
    )


@tool(effect="side-effect")
def click(button: str) -> str:
    """Press a button on the screen.

    Args:
        button: the button's label.
    """
    if button not in SCREEN:
        return f"no button {button!r}"
    SCREEN[button] = True
    return f"pressed {button}"


async def decide(ask: Interruption) -> InterruptionDecision:
    prompt = f"Allow {ask.tool_name}({ask.input})? [y/N] "
    if OFFLINE or await asyncio.to_thread(input, prompt) == "y":
        return InterruptionDecision.approve(ask)
    return InterruptionDecision.reject(ask)


async def compat_refuses_computer_use() -> None:
    configure_compat_diagnostics(warn_once=False)  # the refusal below is the message we want
    try:
        await cast(Any, create_agent_sdk)(model="demo", computerUse=True)
    except NotImplementedError as error:
        print(f"compat: {error}")


async def main() -> None:
    await compat_refuses_computer_use()
    agent = AgentSpec(
        id="operator",
        name="Operator",
        instructions="Operate the screen with the tools; look before you click.",
        tools=["screenshot", "click"],
    )
    policy = RuleToolPolicy(allow=["screenshot"], ask=["click"], default="deny")
    async with AgentRuntime(
        models=models(), tools=[screenshot, click], tool_policy=policy
    ) as runtime:
        result = await runtime.run(agent, "Press the Deploy button.")
        while result.status == "interrupted":
            print(f"waiting for approval: {[ask.tool_name for ask in result.interruptions]}")
            decisions = [await decide(ask) for ask in result.interruptions]
            result = await runtime.resume(result.state, decisions).result()
        print(f"{result.output}  screen: {SCREEN}")


if __name__ == "__main__":
    asyncio.run(main())
