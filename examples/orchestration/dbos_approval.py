"""A durable agent on DBOS with an approval given from a second process.

The run is a DBOS workflow (its system database is a SQLite file here; PostgreSQL for several
workers): each model call and tool call is a recorded DBOS step. The agent asks to refund an
order; ``refund`` needs approval, so the run waits durably inside its workflow. A second
process (this script with ``approve``) sends the approval through a ``DBOSClient`` -- twice, to
show a duplicate is harmless -- and the first process's run resumes and refunds exactly once.

Offline (``ACTOVIQ_OFFLINE=1`` or no API key) a scripted provider plays the model; with
``OPENAI_API_KEY`` or ``ANTHROPIC_API_KEY`` a real model decides to call the tool.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from dbos import DBOS, DBOSClient

from actoviq.core import AgentSpec, ToolCallItem, ToolResultItem
from actoviq.dbos import DbosRuntime, approve, pending
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import tool

REFUNDS: list[str] = []


@tool(effect="side-effect", requires_approval=True)
def refund(order: str, cents: int) -> str:
    """Refund an order (needs a human's approval)."""
    REFUNDS.append(order)
    return f"refunded {cents} cents on {order}"


def scripted(request: ModelRequest) -> ScriptedTurn:
    """The offline model: ask for the refund, then report the tool's answer."""
    results = [item for item in request.input if isinstance(item, ToolResultItem)]
    if not results:
        call = ToolCallItem(
            id="call-refund", name="refund", input={"order": "order-9", "cents": 1250}
        )
        return ScriptedTurn(tool_calls=[call])
    return ScriptedTurn(text=f"Done: {results[-1].output}")


def models() -> tuple[ModelRegistry, str]:
    """A real provider when a key is set (and not offline), else the scripted one."""
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        name = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        return ModelRegistry([OpenAIResponsesProvider()]), f"openai-responses:{name}"
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        name = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        return ModelRegistry([AnthropicProvider()]), f"anthropic:{name}"
    return ModelRegistry([ScriptedProvider([scripted], repeat_last=True)]), "scripted:m"


async def approver(system_database_url: str, run_id: str) -> None:
    """The second process: no DBOS launched, only a client of the system database."""
    client = DBOSClient(system_database_url=system_database_url)
    try:
        for attempt in (1, 2):  # the second delivery is stored once and never read
            answered = await approve(run_id, "call-refund", timeout_seconds=30, client=client)
            print(f"[approver pid {os.getpid()}] approval {attempt} sent for {answered.tool_name}")
    finally:
        client.destroy()


async def main() -> None:
    registry, model = models()
    agent = AgentSpec(
        id="refunds",
        name="Refunds",
        instructions="Refund order-9 (1250 cents) with the refund tool, then say what happened.",
        model=model,
        tools=["refund"],
    )
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'dbos.sqlite'}"
        DBOS(config={"name": "refunds", "system_database_url": url, "log_level": "WARNING"})
        durable = DbosRuntime(name="refunds", models=registry, tools=[refund], agents=[agent])
        DBOS.launch()  # inside the running loop: recovered runs would resume on it
        try:
            run = await durable.start(agent, "Please refund order-9.", run_id="refund-order-9")
            waiting = await pending(run.run_id, timeout_seconds=60)
            print(f"[runner pid {os.getpid()}] waiting for: {[i.tool_name for i in waiting]}")
            second = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "approve", url, run.run_id
            )
            await asyncio.wait_for(second.wait(), 120)
            result = await asyncio.wait_for(run.result(), 120)
            print(f"[runner] {result.status}: {result.output}")
            print(f"[runner] refunds executed: {REFUNDS} (once)")
        finally:
            await durable.close()
            DBOS.destroy(workflow_completion_timeout_sec=0)


if __name__ == "__main__":
    if sys.argv[1:2] == ["approve"]:
        asyncio.run(approver(sys.argv[2], sys.argv[3]))
    else:
        asyncio.run(main())
