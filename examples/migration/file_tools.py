"""File tools confined to a workspace: typed tools, a registry, and a policy that says no.

0.x file tools trusted their paths. In 1.0 a tool is a ``RuntimeTool`` (here from ``@tool``) in
a ``ToolRegistry``, and a ``ToolPolicy`` decides each call before it runs, on the parsed input:
this one refuses any path outside the run's workspace (``workspace_id`` run option, resolved by
the host's workspace map) and asks for an approval before any write. A denied call never runs;
the model sees a ``denied`` result. The approval pauses the run; the host approves and resumes.
Offline (no API key, or ACTOVIQ_OFFLINE=1) a scripted model makes the calls; with
OPENAI_API_KEY or ANTHROPIC_API_KEY the real model chooses them.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from actoviq.core import AgentSpec, ToolCallItem, ToolResultItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn, TurnLike
from actoviq.runtime import (
    AgentRuntime,
    AllowDecision,
    DenyDecision,
    InterruptDecision,
    InterruptionDecision,
    ToolAuthorizationRequest,
    ToolDecision,
    ToolExecutionContext,
    approval_interruption_id,
    tool,
)


def choose_models(script: Sequence[TurnLike]) -> tuple[ModelRegistry, str, str]:
    """OpenAI with OPENAI_API_KEY, else Anthropic with ANTHROPIC_API_KEY, else the script."""
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        name = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        registry = ModelRegistry([OpenAIResponsesProvider()])
        return registry, f"openai-responses:{name}", f"OpenAI ({name})"
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        name = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        registry = ModelRegistry([AnthropicProvider()])
        return registry, f"anthropic:{name}", f"Anthropic ({name})"
    registry = ModelRegistry([ScriptedProvider(script)])
    return registry, "scripted:demo-model", "scripted provider (offline)"


class Workspaces:
    """The host's workspace service: workspace id -> a folder."""

    def __init__(self, folders: dict[str, Path]) -> None:
        self.folders = {key: folder.resolve() for key, folder in folders.items()}

    def resolve(self, workspace_id: str | None, relative: str) -> Path | None:
        """The file inside the workspace, or None when the path leaves it."""
        root = self.folders.get(workspace_id or "")
        if root is None:
            return None
        target = (root / relative).resolve()
        return target if target.is_relative_to(root) else None


def workspace_file(ctx: ToolExecutionContext, path: str) -> Path:
    workspaces: Workspaces = ctx.context["workspaces"]
    target = workspaces.resolve(ctx.workspace_id, path)
    if target is None:  # the policy refuses these first; this is the second wall
        raise PermissionError(f"{path} is outside the workspace")
    return target


@tool(effect="read")
def read_file(path: str, ctx: ToolExecutionContext) -> str:
    """Read a text file of the workspace.

    Args:
        path: the path relative to the workspace.
    """
    return workspace_file(ctx, path).read_text("utf-8")


@tool(effect="side-effect")
def write_file(path: str, text: str, ctx: ToolExecutionContext) -> str:
    """Write a text file in the workspace.

    Args:
        path: the path relative to the workspace.
        text: the new content.
    """
    workspace_file(ctx, path).write_text(text, "utf-8")
    return f"wrote {len(text)} characters to {path}"


class WorkspacePolicy:
    """Deny paths outside the run's workspace; ask before any side effect."""

    def authorize(self, request: ToolAuthorizationRequest) -> ToolDecision:
        ctx = request.context
        parsed: object = request.input
        fields = cast(dict[str, object], parsed) if isinstance(parsed, dict) else {}
        path = str(fields.get("path", ""))
        workspaces: Workspaces = ctx.context["workspaces"]
        if workspaces.resolve(ctx.workspace_id, path) is None:
            return DenyDecision(reason=f"{path!r} is outside workspace {ctx.workspace_id!r}")
        if request.tool.effect == "side-effect":
            return InterruptDecision(
                interruption_id=approval_interruption_id(ctx.run_id, ctx.call_id),
                reason=f"{request.tool.name} changes {path}",
            )
        return AllowDecision()


SCRIPT = [
    ScriptedTurn(
        tool_calls=[
            ToolCallItem(id="r1", name="read_file", input={"path": "notes.txt"}),
            ToolCallItem(id="r2", name="read_file", input={"path": "../secrets.txt"}),
        ]
    ),
    ScriptedTurn(
        tool_calls=[
            ToolCallItem(
                id="w1", name="write_file", input={"path": "summary.txt", "text": "Ship on Friday."}
            )
        ]
    ),
    ScriptedTurn(text="Summary written; the secrets file is outside the workspace."),
]


async def main() -> None:
    registry, model, label = choose_models(SCRIPT)
    print(f"provider: {label}")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "secrets.txt").write_text("hunter2", "utf-8")
        project = root / "project"
        project.mkdir()
        (project / "notes.txt").write_text("Release: ship on Friday.", "utf-8")
        context: dict[str, Any] = {"workspaces": Workspaces({"project": project})}

        agent: AgentSpec[Any, Any] = AgentSpec(
            id="editor",
            name="Editor",
            instructions="Read notes.txt and ../secrets.txt, then write a one-line summary.txt.",
            model=model,
            tools=("read_file", "write_file"),
        )
        async with AgentRuntime(
            models=registry, tools=[read_file, write_file], tool_policy=WorkspacePolicy()
        ) as runtime:
            options: dict[str, Any] = {"workspace_id": "project", "context": context}
            result = await runtime.run(agent, "Summarise the notes.", **options)
            while result.status == "interrupted":
                for pending in result.interruptions:
                    print(f"approval asked: {pending.reason}")
                decisions = [InterruptionDecision.approve(i.id) for i in result.interruptions]
                # The state keeps the workspace id; the context object is the host's to pass again.
                result = await runtime.resume(result.state, decisions, context=context).result()
            print(f"result: {result.output}")
        refused = [i for i in result.items if isinstance(i, ToolResultItem) and i.status == "error"]
        print(f"refused calls the model was told about: {[i.call_id for i in refused]}")
        print(f"summary.txt: {(project / 'summary.txt').read_text('utf-8')!r}")


if __name__ == "__main__":
    asyncio.run(main())
