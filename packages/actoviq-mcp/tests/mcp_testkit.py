"""Helpers for the actoviq.mcp tests: real SDK servers (subprocess, HTTP), ledgers, runtimes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any

import psutil

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.events import RunEvent
from actoviq.mcp import McpServer, RestartPolicy
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn, TurnLike
from actoviq.runtime import AgentRuntime

HERE = Path(__file__).resolve().parent
TOOLBOX = HERE / "servers" / "toolbox_server.py"
PYTHON = sys.executable


def read_ledger(path: Path) -> list[dict[str, Any]]:
    """Every JSON line the toolbox server appended."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def events_named(path: Path, event: str) -> list[dict[str, Any]]:
    return [entry for entry in read_ledger(path) if entry["event"] == event]


def server_pids(path: Path) -> list[int]:
    return [int(entry["pid"]) for entry in events_named(path, "start")]


def process_running(pid: int) -> bool:
    """True when ``pid`` is a live (non-zombie) toolbox server process."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return any("toolbox_server.py" in part for part in process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def toolbox(ledger: Path, **options: Any) -> McpServer:
    """The toolbox server over stdio, recording into ``ledger``."""
    options.setdefault("restart", RestartPolicy(initial_backoff_ms=0))
    return McpServer.stdio(
        PYTHON, [str(TOOLBOX), "stdio"], env={"ACTOVIQ_MCP_LEDGER": str(ledger)}, **options
    )


@contextlib.asynccontextmanager
async def toolbox_http(ledger: Path, transport: str = "http") -> AsyncGenerator[str]:
    """Start the toolbox server on 127.0.0.1 (``http``: streamable HTTP, or ``sse``); yields
    its endpoint URL."""
    process = await asyncio.create_subprocess_exec(
        PYTHON,
        str(TOOLBOX),
        transport,
        env={**os.environ, "ACTOVIQ_MCP_LEDGER": str(ledger)},
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 60)
        assert line.startswith(b"PORT "), line
        path = "/sse" if transport == "sse" else "/mcp"
        yield f"http://127.0.0.1:{int(line.split()[1])}{path}"
    finally:
        if process.returncode is None:
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()


def call(call_id: str, tool_name: str, /, **arguments: Any) -> ToolCallItem:
    return ToolCallItem(id=call_id, name=tool_name, input=arguments)


def scripted(*turns: TurnLike) -> ScriptedProvider:
    return ScriptedProvider(list(turns))


def tool_turn(*calls: ToolCallItem) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=list(calls))


def runtime_with(provider: ScriptedProvider, **options: Any) -> AgentRuntime:
    return AgentRuntime(models=ModelRegistry([provider]), **options)


def agent(tools: Sequence[str], **overrides: Any) -> AgentSpec[Any, Any]:
    values: dict[str, Any] = {
        "id": "mcp-agent",
        "name": "MCP agent",
        "instructions": "Use the tools.",
        "model": "scripted:model-1",
        "tools": tuple(tools),
    }
    values.update(overrides)
    return AgentSpec(**values)


async def collect(runtime: AgentRuntime, spec: AgentSpec[Any, Any], text: str) -> list[RunEvent]:
    events: list[RunEvent] = []
    async with runtime.stream(spec, text) as handle:
        async for event in handle:
            events.append(event)
    return events
