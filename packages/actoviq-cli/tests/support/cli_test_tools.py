"""Tools, middleware and an agent the CLI tests load by ``module:attribute`` (copied per project).

Side effects are appended to the file named by ``$ACTOVIQ_TEST_LEDGER`` at call time, so tests
in one process and in subprocesses count them the same way.
"""

from __future__ import annotations

import os
from typing import Any

from actoviq.core import AgentSpec
from actoviq.runtime import define_middleware, tool


def _ledger(entry: str) -> None:
    with open(os.environ["ACTOVIQ_TEST_LEDGER"], "a", encoding="utf-8") as handle:
        handle.write(entry + "\n")


@tool(effect="side-effect", requires_approval=True, timeout_ms=30_000)
def send_payment(invoice: str, amount: int) -> dict[str, object]:
    """Pay an invoice (needs approval).

    Args:
        invoice: the invoice number.
        amount: the amount in cents.
    """
    _ledger(f"pay {invoice} {amount}")
    return {"paid": amount, "invoice": invoice}


@tool(effect="read")
def lookup(q: str) -> str:
    """Look something up.

    Args:
        q: the query.
    """
    return f"result for {q}"


def shout(text: str) -> str:
    """Upper-case a text (a plain function: the CLI wraps it with @tool).

    Args:
        text: the text.
    """
    return text.upper()


async def _timed(ctx: Any, next: Any) -> Any:
    return await next()


async def _audited(ctx: Any, next: Any) -> Any:
    return await next()


timing = define_middleware("timing", "wrapModelCall", _timed, priority=10)
audit = [
    define_middleware("audit-model", "wrapModelCall", _audited, priority=20),
    define_middleware("audit-tool", "wrapToolCall", _audited, priority=5),
]

coder: AgentSpec[Any, Any] = AgentSpec(
    id="coder", name="Coder", instructions="Shout what you are given.", tools=("shout",)
)
not_an_agent = 42


@tool(effect="side-effect", timeout_ms=600_000)
def hang_payment(invoice: str) -> str:
    """Record the start of a payment, say so through ``$ACTOVIQ_TEST_FIFO``, then never return.

    Args:
        invoice: the invoice number.
    """
    import threading

    _ledger(f"begin {invoice}")
    with open(os.environ["ACTOVIQ_TEST_FIFO"], "w", encoding="utf-8") as fifo:
        fifo.write("started\n")
    threading.Event().wait()  # the test kills the process here
    return "unreachable"
