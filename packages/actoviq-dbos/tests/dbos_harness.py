"""Shared pieces of the DBOS tests: system databases, a launched DBOS, a deterministic model.

The model answers from the request alone (no script position), so a workflow replayed in a new
process and a fresh provider agree: no tool result yet → call ``charge``; else → final text.
Every real model call and every real effect appends a line to a file, so tests count them
across processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import uuid
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS, DBOSConfig

from actoviq.core import AgentSpec, ToolCallItem, ToolResultItem
from actoviq.providers import ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    MiddlewareContext,
    MiddlewareDefinition,
    Next,
    RuntimeTool,
    define_middleware,
    tool,
)

POSTGRES_URL = os.environ.get("ACTOVIQ_TEST_POSTGRES_URL")
APP_NAME = "actoviq-dbos-tests"

TARGETS = [
    "sqlite",
    pytest.param(
        "postgres",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(not POSTGRES_URL, reason="ACTOVIQ_TEST_POSTGRES_URL is not set"),
        ],
    ),
]


def system_url(kind: str, directory: Path) -> str:
    """A fresh DBOS system database: a SQLite file, or a new database on the test cluster."""
    if kind == "sqlite":
        return f"sqlite:///{directory / 'dbos-system.sqlite'}"
    assert POSTGRES_URL is not None
    base = POSTGRES_URL.rsplit("/", 1)[0]
    return f"{base}/actoviq_dbos_{uuid.uuid4().hex[:12]}"


def config(url: str) -> DBOSConfig:
    """The DBOS configuration the tests use (fast notification polling for SQLite)."""
    return {
        "name": APP_NAME,
        "system_database_url": url,
        "notification_listener_polling_interval_sec": 0.01,
        "log_level": "WARNING",
    }


@contextlib.contextmanager
def launched(url: str) -> Generator[None]:
    """DBOS configured on ``url`` and launched for the block, destroyed after it."""
    DBOS(config=config(url))
    DBOS.launch()
    try:
        yield
    finally:
        DBOS.destroy(workflow_completion_timeout_sec=0)


def append(path: Path, line: str) -> None:
    """Append one line (a model call, an effect) to a counter file."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def lines(path: Path) -> list[str]:
    """The lines of a counter file (none when it does not exist)."""
    return path.read_text("utf-8").splitlines() if path.exists() else []


def deterministic_model(calls: Path, tool_name: str = "charge") -> ScriptedProvider:
    """Calls ``tool_name`` once, then answers with the tool's output; logs each real call."""

    def answer(request: ModelRequest) -> ScriptedTurn:
        append(calls, str(os.getpid()))
        results = [item for item in request.input if isinstance(item, ToolResultItem)]
        if not results:
            call = ToolCallItem(id="call-1", name=tool_name, input={"amount": 7})
            return ScriptedTurn(tool_calls=[call])
        return ScriptedTurn(text=f"done: {json.dumps(results[-1].output)}")

    return ScriptedProvider([answer], repeat_last=True)


def agent(tool_name: str = "charge") -> AgentSpec[Any, Any]:
    """The agent every test runs."""
    return AgentSpec(
        id="biller", name="Biller", instructions="Charge.", model="scripted:m", tools=[tool_name]
    )


def charge_tool(
    directory: Path, *, approval: bool = False, crash_inside: bool = False
) -> RuntimeTool:
    """The side-effect tool ``charge``: appends to ``directory/effects``.

    With ``crash_inside`` it SIGKILLs its own process right after the effect (a crash inside a
    side-effect tool: the effect happened, its outcome was never recorded).
    """

    @tool(effect="side-effect", requires_approval=approval)
    def charge(amount: int) -> str:
        """Charge the card once."""
        append(directory / "effects", str(amount))
        if crash_inside:
            os.kill(os.getpid(), signal.SIGKILL)
        return f"receipt-{amount}"

    return charge


def crash_after_tool() -> MiddlewareDefinition:
    """``afterToolCall`` middleware that SIGKILLs the process once the tool step is recorded."""

    async def crash(ctx: MiddlewareContext, call_next: Next) -> Any:
        result = await call_next()
        os.kill(os.getpid(), signal.SIGKILL)
        return result

    return define_middleware("crash-after-tool", "afterToolCall", crash)
