"""An agent using a local MCP server's tools: effects from annotations, an approval, progress.

This one file is both sides: ``python mcp_tools.py`` runs the agent, which launches
``python mcp_tools.py --serve`` as a stdio MCP server (written with the official SDK's
``MCPServer``). The server's read-only tools run freely; its destructive tool pauses the run for
an approval; progress notifications arrive as ``tool.progress`` events; closing the runtime stops
the server process.

Offline (``ACTOVIQ_OFFLINE=1`` or no API key) a scripted model drives the agent; with
``OPENAI_API_KEY`` or ``ANTHROPIC_API_KEY`` a real model chooses the calls.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

SELF = os.path.abspath(__file__)
NOTES: dict[str, str] = {"standup": "Ship the MCP package.", "lunch": "Noodles at 12:30."}


def serve() -> None:
    """The MCP server: two read tools (one reports progress) and one destructive tool."""
    app: MCPServer[Any] = MCPServer("notes", log_level="WARNING")

    @app.tool(annotations=ToolAnnotations(read_only_hint=True))
    def list_notes() -> list[str]:
        """List the titles of all notes."""
        return sorted(NOTES)

    @app.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def read_notes(titles: list[str], ctx: Context[Any]) -> dict[str, str]:
        """Read several notes, reporting progress per note."""
        found: dict[str, str] = {}
        for index, title in enumerate(titles, start=1):
            found[title] = NOTES.get(title, "(no such note)")
            await ctx.report_progress(index, len(titles), f"read {title}")
        return found

    @app.tool(annotations=ToolAnnotations(destructive_hint=True))
    def delete_note(title: str) -> str:
        """Delete a note (destructive: the agent must get an approval first)."""
        NOTES.pop(title, None)
        return f"deleted {title}"

    app.run()  # stdio


async def run_agent() -> None:
    from actoviq.core import AgentSpec, ToolCallItem
    from actoviq.mcp import McpServer, mcp_tools
    from actoviq.providers import ModelRegistry
    from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
    from actoviq.runtime import AgentRuntime, InterruptionDecision

    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        models, model = ModelRegistry([OpenAIResponsesProvider()]), "openai-responses:gpt-4.1-mini"
    elif not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        models, model = ModelRegistry([AnthropicProvider()]), "anthropic:claude-3-5-haiku-latest"
    else:
        script = [
            ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="notes_list_notes", input={})]),
            ScriptedTurn(
                tool_calls=[
                    ToolCallItem(
                        id="c2", name="notes_read_notes", input={"titles": ["standup", "lunch"]}
                    ),
                    ToolCallItem(id="c3", name="notes_delete_note", input={"title": "lunch"}),
                ]
            ),
            ScriptedTurn(text="Standup: ship the MCP package. I deleted the lunch note."),
        ]
        models, model = ModelRegistry([ScriptedProvider(script)]), "scripted:demo-model"

    async with AgentRuntime(models=models) as runtime:
        # The server starts on first use, belongs to the runtime and stops when it closes.
        # --8<-- [start:client]
        server = McpServer.stdio(sys.executable, [SELF, "--serve"])
        toolset = await mcp_tools(server.attach(runtime), prefix="notes_", registry=runtime.tools)
        # --8<-- [end:client]
        for tool in toolset:
            behavior = tool.descriptor.behavior
            print(f"tool {tool.name}: {behavior.effect}, approval={behavior.requires_approval}")
        agent: AgentSpec[Any, Any] = AgentSpec(
            id="notes-keeper",
            name="Notes keeper",
            instructions="Read the standup note, then delete the lunch note. Be brief.",
            model=model,
            tools=toolset.names(),
        )
        result = await runtime.run(agent, "Summarise standup and clean up lunch.")
        while result.status == "interrupted":
            for interruption in result.interruptions:
                print(f"approval needed: {interruption.tool_name} {interruption.input}")
            decisions = [InterruptionDecision.approve(i.id) for i in result.interruptions]
            async with runtime.resume(result.state, decisions) as handle:
                async for event in handle:
                    if event.type == "tool.progress" and isinstance(event.data, dict):
                        progress: Any = event.data["progress"]
                        print(
                            f"  progress {progress['progress']:g}/{progress['total']:g}: "
                            f"{progress['message']}"
                        )
                    elif event.type == "tool.completed" and isinstance(event.data, dict):
                        print(f"  completed {event.data['name']}")
                result = await handle.result()
        print(f"{result.status}: {result.output}")
    print(f"server closed with the runtime: {server.closed}")


if __name__ == "__main__":
    if "--serve" in sys.argv:
        serve()
    else:
        asyncio.run(run_agent())
