"""One host process of the cross-process approval test.

``approval_host.py start LEDGER STATE``: run the agent until it asks to approve ``append_line``,
save the run state to STATE, exit. ``approval_host.py resume LEDGER STATE``: a new process with a
new runtime and a new server process resumes the saved run with an approval.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.mcp import McpServer, mcp_tools
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, InterruptionDecision

TOOLBOX = Path(__file__).resolve().parent.parent / "servers" / "toolbox_server.py"


async def main(mode: str, ledger: Path, state_file: Path) -> None:
    if mode == "start":
        append = ToolCallItem(id="c1", name="append_line", input={"text": "once"})
        provider = ScriptedProvider([ScriptedTurn(tool_calls=[append])])
    else:
        provider = ScriptedProvider(["appended once"])
    async with AgentRuntime(models=ModelRegistry([provider])) as runtime:
        server = McpServer.stdio(
            sys.executable, [str(TOOLBOX), "stdio"], env={"ACTOVIQ_MCP_LEDGER": str(ledger)}
        )
        toolset = await mcp_tools(server.attach(runtime), registry=runtime.tools)
        agent: AgentSpec[Any, Any] = AgentSpec(
            id="host",
            name="Host",
            instructions="Append when asked.",
            model="scripted:model-1",
            tools=toolset.names(),
        )
        runtime.register_agent(agent)
        if mode == "start":
            result = await runtime.run(agent, "append once")
            interruption = result.interruptions[0].id
            text = json.dumps({"state": result.state, "id": interruption})
            await asyncio.to_thread(state_file.write_text, text, "utf-8")
        else:
            saved = json.loads(await asyncio.to_thread(state_file.read_text, "utf-8"))
            decision = InterruptionDecision.approve(saved["id"])
            result = await runtime.resume(saved["state"], [decision]).result()
        print(
            json.dumps({"status": result.status, "runId": result.run_id, "output": result.output})
        )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])))
