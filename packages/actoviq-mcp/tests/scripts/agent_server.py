"""An agent served over MCP for the serving tests: ``agent_server.py stdio`` or ``... http``.

The scripted model echoes its input; a message containing "approve" makes it call ``wire_money``
(a local tool that requires approval), so the run stops for a decision. ``structured`` serves an
agent with a JSON output schema.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from actoviq.core import AgentSpec, OutputSchema, TextItem, ToolCallItem, ToolResultItem
from actoviq.mcp import serve_agent_mcp
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    RuntimeTool,
    ToolBehavior,
    ToolDescriptor,
    ToolExecutionContext,
    json_schema_input,
)


def respond(request: ModelRequest) -> Any:
    last = request.input[-1]
    if isinstance(last, ToolResultItem):
        return "wired"
    text = last.text if isinstance(last, TextItem) else ""
    if "approve" in text:
        return ScriptedTurn(tool_calls=[ToolCallItem(id="w1", name="wire_money", input={})])
    if request.output_schema is not None:
        return ScriptedTurn(structured_output={"words": len(text.split())}, text="")
    return f"echo: {text}"


async def wire(ctx: ToolExecutionContext, args: Any) -> str:
    return "sent"


WIRE = RuntimeTool(
    descriptor=ToolDescriptor(
        name="wire_money",
        input=json_schema_input({"type": "object"}),
        behavior=ToolBehavior(effect="side-effect", requires_approval=True),
    ),
    execute=wire,
)


async def main(transport: str, kind: str) -> None:
    provider = ScriptedProvider([respond], repeat_last=True)
    output: OutputSchema[Any] | None = (
        OutputSchema(
            name="count",
            schema={"type": "object", "properties": {"words": {"type": "integer"}}},
        )
        if kind == "structured"
        else None
    )
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="echo",
        name="Echo",
        instructions="Echo the input.",
        model="scripted:model-1",
        tools=("wire_money",),
        output=output,
    )
    async with AgentRuntime(models=ModelRegistry([provider]), tools=[WIRE]) as runtime:
        if transport == "stdio":
            await serve_agent_mcp(runtime, agent, name="ask", description="Ask the echo agent.")
        else:
            await serve_agent_mcp(
                runtime,
                agent,
                name="ask",
                transport="streamable-http",
                port=0,
                on_listening=lambda url: print(f"URL {url}", flush=True),
            )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "text"))
