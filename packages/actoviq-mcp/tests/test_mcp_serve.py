"""An agent served over MCP, called by the SDK's own client (stdio subprocess and HTTP)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from mcp import Client, MCPError, StdioServerParameters

from actoviq.mcp import RUN_INTERRUPTED_CODE

SCRIPT = Path(__file__).resolve().parent / "scripts" / "agent_server.py"


def _stdio(kind: str = "text") -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(SCRIPT), "stdio", kind])


async def test_an_agent_served_over_stdio_answers_the_sdk_client() -> None:
    async with Client(_stdio()) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.name == "ask" and tool.description == "Ask the echo agent."
        assert tool.input_schema["required"] == ["input"]
        steps: list[str | None] = []

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            steps.append(message)

        result = await client.call_tool("ask", {"input": "hello there"}, progress_callback=progress)
        assert not result.is_error
        assert [block.text for block in result.content] == ["echo: hello there"]  # type: ignore[union-attr]
        assert steps == ["model turn 1 completed"]


async def test_an_approval_inside_the_agent_is_an_mcp_error_with_the_run_id() -> None:
    async with Client(_stdio()) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("ask", {"input": "please approve the transfer"})
    error = caught.value
    assert error.code == RUN_INTERRUPTED_CODE
    data = error.data
    assert isinstance(data, dict) and data["status"] == "interrupted"
    assert isinstance(data["runId"], str) and data["runId"] in error.message
    interruptions = cast(list[dict[str, Any]], data["interruptions"])
    (interruption,) = interruptions
    assert interruption["kind"] == "approval" and interruption["toolName"] == "wire_money"


async def test_bad_arguments_and_structured_output() -> None:
    async with Client(_stdio("structured")) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        result = await client.call_tool("ask", {"input": "one two three"})
        assert result.structured_content == {"words": 3}
        with pytest.raises(MCPError):
            await client.call_tool("ask", {"input": 3})
        with pytest.raises(MCPError):
            await client.call_tool("other", {"input": "x"})


@asynccontextmanager
async def _http_agent() -> AsyncGenerator[str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SCRIPT), "http", stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 60)
        assert line.startswith(b"URL "), line
        yield line.split()[1].decode()
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 20)


async def test_an_agent_served_over_streamable_http_answers() -> None:
    async with _http_agent() as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        async with Client(url) as client:
            result = await client.call_tool("ask", {"input": "over http"})
    assert [block.text for block in result.content] == ["echo: over http"]  # type: ignore[union-attr]
