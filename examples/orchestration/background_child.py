"""Durable background children: spawn, survive the worker, take over, resume, reconcile.

Two "workers" share one SQLite file (two processes, or two machines on PostgreSQL, work the
same way). Worker A spawns three background children and then goes away mid-work:

* ``summary`` (a read) is taken over by worker B once A's lease is released, and completes;
* ``payout`` (a side effect) may have paid before A went away: B never replays it, it moves to
  ``needs_reconciliation`` and an operator records what the bank said;
* ``refund`` stops at its approval: B resumes it with the approval, exactly once.

Offline (``ACTOVIQ_OFFLINE=1`` or no API key) a scripted provider plays the model; with
``OPENAI_API_KEY`` or ``ANTHROPIC_API_KEY`` a real model decides to call the tools.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

from actoviq.core import AgentSpec, TextItem, ToolCallItem, ToolResultItem
from actoviq.orchestration import BackgroundChildManager, ChildRunner
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, InterruptionDecision, RuntimeTool, tool
from actoviq.storage.sqlite import SqliteStorage

PAID: list[str] = []
STUCK = asyncio.Event()  # worker A's tools never get past this: A "goes away" mid-work
ENTERED: dict[str, asyncio.Event] = {"fetch_logs": asyncio.Event(), "send_payout": asyncio.Event()}


def make_tools(hold: bool) -> list[RuntimeTool]:
    """The three tools; in worker A the first two hang (the worker dies before they return)."""

    @tool(effect="read")
    async def fetch_logs(service: str) -> str:
        """Read a service's recent logs.

        Args:
            service: the service name.
        """
        ENTERED["fetch_logs"].set()
        if hold:
            await STUCK.wait()
        return f"{service}: 3 warnings, 0 errors"

    @tool(effect="side-effect")
    async def send_payout(account: str, amount: int) -> str:
        """Pay an account.

        Args:
            account: the account id.
            amount: the amount in cents.
        """
        PAID.append(account)
        ENTERED["send_payout"].set()
        if hold:
            await STUCK.wait()
        return f"paid {amount} to {account}"

    @tool(effect="side-effect", requires_approval=True)
    def send_refund(order: str) -> str:
        """Refund an order (a human approves first).

        Args:
            order: the order id.
        """
        PAID.append(order)
        return f"refunded {order}"

    return [fetch_logs, send_payout, send_refund]


CALLS = {
    "summarizer": ToolCallItem(id="c1", name="fetch_logs", input={"service": "api"}),
    "payer": ToolCallItem(id="c1", name="send_payout", input={"account": "acct-7", "amount": 500}),
    "refunder": ToolCallItem(id="c1", name="send_refund", input={"order": "order-9"}),
}


def scripted(request: ModelRequest) -> Any:
    """Offline: call the agent's tool once, then report (the agent id is in the system text)."""
    results = [item for item in request.input if isinstance(item, ToolResultItem)]
    if results:
        return f"Report: {results[-1].output}"
    system = next(
        (i.text for i in request.input if isinstance(i, TextItem) and i.role == "system"), ""
    )
    call = next(c for who, c in CALLS.items() if f"[{who}]" in system)
    return ScriptedTurn(tool_calls=[call])


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
    return ModelRegistry([ScriptedProvider([scripted], repeat_last=True)]), "scripted:m", "offline"


def agents(model: str) -> dict[str, AgentSpec[Any, Any]]:
    """The three agents (identical in every worker, so any worker can run any child)."""
    tasks = {
        "summarizer": ("Summarise the api service's logs with fetch_logs.", ("fetch_logs",)),
        "payer": ("Pay 500 cents to acct-7 with send_payout.", ("send_payout",)),
        "refunder": ("Refund order-9 with send_refund.", ("send_refund",)),
    }
    return {
        name: AgentSpec(
            id=name, name=name.title(), instructions=f"[{name}] {text}", model=model, tools=tools
        )
        for name, (text, tools) in tasks.items()
    }


async def main() -> None:
    registry, model, label = models()
    print(f"provider: {label}")
    team = agents(model)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "children.db"
        async with await SqliteStorage.open(db) as storage:
            # -- worker A: spawns, then goes away while two children are mid-run ---------------
            async with AgentRuntime(models=registry, tools=make_tools(hold=True)) as runtime:
                runner = ChildRunner(runtime)
                async with BackgroundChildManager(
                    runner, storage.children, owner_id="worker-a"
                ) as a:
                    root = runner.create_root(run_id="nightly")
                    await a.spawn(root, team["summarizer"], "go", child_id="summary", effect="read")
                    await a.spawn(root, team["payer"], "go", child_id="payout")
                    await a.spawn(root, team["refunder"], "go", child_id="refund")
                    await ENTERED["fetch_logs"].wait()
                    await ENTERED["send_payout"].wait()
                    async with asyncio.timeout(30):
                        refund = await a.wait("refund")
                    print(f"refund: {refund.status}, waiting for {refund.interruptions[0].id}")
                    # Leaving the block releases A's leases: worker A is gone.
            # -- worker B: picks up what A left ---------------------------------------------------
            async with (
                AgentRuntime(
                    models=registry, tools=make_tools(hold=False), agents=list(team.values())
                ) as runtime,
                BackgroundChildManager(
                    ChildRunner(runtime), storage.children, owner_id="worker-b"
                ) as b,
            ):
                report = await b.recover()
                print(f"taken over: {list(report.started)}")
                print(f"needs a human: {list(report.needs_reconciliation)}")
                print(f"summary: {(await b.result('summary')).output}")
                settled = await b.reconcile(
                    "payout",
                    "completed",
                    actor="ops@example.com",
                    note="bank statement shows the payout",
                    output="paid 500 to acct-7",
                )
                print(f"payout: {settled.status} by {settled.reconciliations[0].actor}")
                pending = await b.query("refund")
                approve = [InterruptionDecision.approve(i.id) for i in pending.interruptions]
                await b.resume("refund", approve)
                print(f"refund: {(await b.result('refund')).output}")
    print(f"money moved: {PAID} (the payout once, never replayed)")


if __name__ == "__main__":
    asyncio.run(main())
