"""``actoviq mcp serve``: an agent as an MCP tool, called by the official SDK's client."""

from __future__ import annotations

import asyncio
import sys
from typing import Any, cast

import pytest
from cli_testkit import Project
from mcp import Client, MCPError, StdioServerParameters

from actoviq.mcp import RUN_INTERRUPTED_CODE

pytestmark = pytest.mark.slow


def _server(project: Project) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "actoviq.cli", "mcp", "serve", "payer", "--name", "ask_payer"],
        cwd=str(project.root),
        env=project.env(),
    )


async def test_the_agent_answers_over_stdio_and_a_paused_run_resumes_from_the_cli(
    project: Project,
) -> None:
    async with Client(_server(project)) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.name == "ask_payer"
        result = await client.call_tool("ask_payer", {"input": "hello over mcp"})
        assert not result.is_error
        texts = [getattr(block, "text", None) for block in result.content]
        assert texts == ["You said: hello over mcp (message 1)"]
        with pytest.raises(MCPError) as caught:
            await client.call_tool("ask_payer", {"input": "please pay"})
    assert caught.value.code == RUN_INTERRUPTED_CODE
    data = cast(dict[str, Any], caught.value.data)
    run_id = data["runId"]
    assert project.ledger() == []
    # The server's checkpoints are the project's store: the CLI continues the run.
    resumed = await asyncio.to_thread(project.invoke, "resume", run_id, "--approve", "call_pay")
    assert resumed.exit_code == 0, resumed.output
    assert project.ledger() == ["pay INV-42 1250"]
