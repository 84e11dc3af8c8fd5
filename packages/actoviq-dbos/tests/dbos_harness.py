"""Shared pieces of the DBOS tests: system databases, a launched DBOS, a deterministic model.

The model answers from the request alone (no script position), so a workflow replayed in a new
process and a fresh provider agree: no tool result yet → call ``charge``; else → final text.
Every real model call and every real effect appends a line to a file, so tests count them
across processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncGenerator, Generator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from dbos import DBOS, DBOSConfig

from actoviq.core import (
    AgentSpec,
    ToolCallItem,
    ToolResultItem,
)
from actoviq.dbos import DbosQueueSettings
from actoviq.orchestration import BackgroundChildManager, ChildRunner
from actoviq.orchestration.background import AgentResolver, Clock
from actoviq.orchestration.background.conformance import KitAgent, scripted_kit_provider
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    DurableChildStore,
    MiddlewareContext,
    MiddlewareDefinition,
    Next,
    RuntimeServices,
    RuntimeTool,
    ToolExecutionContext,
    define_middleware,
    tool,
)
from actoviq.storage.sqlite import SqliteStorage

POSTGRES_URL = os.environ.get("ACTOVIQ_TEST_POSTGRES_URL")
APP_NAME = "actoviq-dbos-tests"
# DBOS 3.4 creates its SQLite tables with ``unixepoch('subsec')`` defaults on Python >= 3.12,
# which SQLite < 3.42 does not know (every insert then fails NOT NULL): DBOS on SQLite needs
# Python 3.11 or SQLite >= 3.42. PostgreSQL is not affected.
SQLITE_OK = sys.version_info < (3, 12) or sqlite3.sqlite_version_info >= (3, 42)
SQLITE_SKIP = (
    f"DBOS 3.4 on SQLite needs SQLite >= 3.42 on Python >= 3.12 (here {sqlite3.sqlite_version})"
)

TARGETS = [
    pytest.param("sqlite", marks=pytest.mark.skipif(not SQLITE_OK, reason=SQLITE_SKIP)),
    pytest.param(
        "postgres",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(not POSTGRES_URL, reason="ACTOVIQ_TEST_POSTGRES_URL is not set"),
        ],
    ),
]


def default_kind() -> str:
    """SQLite where DBOS runs on it here, else PostgreSQL (skips when neither is available)."""
    if SQLITE_OK:
        return "sqlite"
    if POSTGRES_URL is None:
        pytest.skip(SQLITE_SKIP)
    return "postgres"


def system_url(kind: str, directory: Path) -> str:
    """A fresh DBOS system database: a SQLite file, or a new database on the test cluster."""
    if kind == "sqlite":
        if not SQLITE_OK:
            pytest.skip(SQLITE_SKIP)
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


@attrs.frozen
class KitBackend:
    """The child store one kit check shares between its workers, and its tenant."""

    store: DurableChildStore
    tenant_id: str


class EngineHarness:
    """Runs the background conformance kit against an engine chosen by name ("store"/"dbos").

    Records live in ``SqliteStorage`` on a SQLite file or the PostgreSQL test database; the DBOS
    engine's queue polls every 10 ms.
    """

    def __init__(self, engine: str, kind: str, tmp_path: Path) -> None:
        self.engine = engine
        self.kind = kind
        self.tmp_path = tmp_path

    def runtime(self, agents: Sequence[KitAgent], tools: Sequence[RuntimeTool]) -> AgentRuntime:
        return AgentRuntime(
            models=ModelRegistry([scripted_kit_provider(agent) for agent in agents]),
            tools=list(tools),
            services=RuntimeServices(),
        )

    @contextlib.asynccontextmanager
    async def backend(self) -> AsyncGenerator[KitBackend]:
        tenant = f"kit-{uuid.uuid4().hex}"
        if self.kind == "sqlite":
            url = str(self.tmp_path / tenant / "children.db")
        else:
            assert POSTGRES_URL is not None
            url = POSTGRES_URL.replace("postgresql://", "postgresql+asyncpg://", 1)
        async with await SqliteStorage.open(url) as storage:
            yield KitBackend(storage.children, tenant)

    def manager(
        self,
        backend: Any,
        runner: ChildRunner,
        *,
        owner_id: str,
        lease_ms: int,
        clock: Clock | None,
        resolve_agent: AgentResolver | None,
    ) -> BackgroundChildManager:
        chosen: KitBackend = backend
        return BackgroundChildManager(
            runner,
            chosen.store,
            engine=self.engine,
            tenant_id=chosen.tenant_id,
            owner_id=owner_id,
            lease_ms=lease_ms,
            clock=clock,
            resolve_agent=resolve_agent,
            options={"queue": KIT_QUEUE} if self.engine == "dbos" else {},
        )


KIT_QUEUE = DbosQueueSettings(name="actoviq-kit", polling_interval_sec=0.01)
"""The queue the kit's DBOS workers share."""


QUEUE_CONCURRENCY = 4
"""The global concurrency of the queue in the 100-children test."""
CHILD_QUEUE = DbosQueueSettings(
    name="actoviq-hundred", concurrency=QUEUE_CONCURRENCY, polling_interval_sec=0.02
)
"""The queue of the 100-children test."""


def records_url(kind: str, directory: Path) -> str:
    """Where the 100-children test keeps its child records (a file, or the PostgreSQL test DB)."""
    if kind == "sqlite":
        return str(directory / "children.db")
    assert POSTGRES_URL is not None
    return POSTGRES_URL.replace("postgresql://", "postgresql+asyncpg://", 1)


def worker_agent() -> AgentSpec[Any, Any]:
    """The child agent of the queue test: calls ``work`` once, then answers."""
    return AgentSpec(
        id="worker", name="Worker", instructions="Work.", model="scripted:m", tools=["work"]
    )


def work_model() -> ScriptedProvider:
    """Calls ``work`` with the run's input, then answers ``done``."""

    def answer(request: ModelRequest) -> ScriptedTurn:
        if any(isinstance(item, ToolResultItem) for item in request.input):
            return ScriptedTurn(text="done")
        call = ToolCallItem(id="work-1", name="work", input={})
        return ScriptedTurn(tool_calls=[call])

    return ScriptedProvider([answer], repeat_last=True)


def work_tool(directory: Path, *, crash_after: int | None = None) -> RuntimeTool:
    """A ``read`` tool that logs ``start``/``end`` lines (pid, run id, time) around 20 ms of work.

    With ``crash_after``, the process SIGKILLs itself once every child is spawned and that many
    have ended.
    """

    @tool(effect="read")
    async def work(ctx: ToolExecutionContext) -> str:
        """Do a child's work."""
        log = directory / "work.log"
        append(log, f"start {os.getpid()} {ctx.run_id} {time.time()}")
        await asyncio.sleep(0.02)  # the work itself (not ordering anything)
        append(log, f"end {os.getpid()} {ctx.run_id} {time.time()}")
        if crash_after is not None:
            ended = sum(1 for line in lines(log) if line.startswith("end "))
            if ended >= crash_after and (directory / "spawned").exists():
                os.kill(os.getpid(), signal.SIGKILL)
        return "worked"

    return work


def max_running(log: Path) -> int:
    """The most children running at once, from ``work.log`` (a killed process's open starts end
    at its last logged time)."""
    events: list[tuple[float, int]] = []
    open_starts: dict[tuple[str, str], float] = {}
    last_seen: dict[str, float] = {}
    for line in lines(log):
        kind, pid, run_id, stamp = line.split(" ")
        moment = float(stamp)
        last_seen[pid] = max(last_seen.get(pid, 0.0), moment)
        if kind == "start":
            open_starts[(pid, run_id)] = moment
        else:
            events.append((open_starts.pop((pid, run_id)), 1))
            events.append((moment, -1))
    for (pid, _), started in open_starts.items():
        events.append((started, 1))
        events.append((last_seen[pid], -1))
    running = peak = 0
    for _, delta in sorted(events, key=lambda event: (event[0], event[1])):
        running += delta
        peak = max(peak, running)
    return peak
