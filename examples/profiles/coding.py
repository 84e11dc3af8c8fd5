"""The coding profile on a real folder: contained reads, a refused escape, an approved write.

The workspace is a temporary folder with a symlink that points outside it. The (scripted) model
reads a file, tries to read through the symlink (denied before the tool runs) and writes a file:
the write has a side effect, so the run pauses for an approval; approving it resumes the run and
the file is written. Scripted because the profile's dotted tool names (``workspace.read``) are
not valid OpenAI function names.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from actoviq.core import ToolCallItem, ToolResultItem
from actoviq.profiles import (
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import InterruptionDecision


def script() -> ScriptedProvider:
    """A model that reads, tries an escape, writes, then answers."""
    return ScriptedProvider(
        [
            ScriptedTurn(
                tool_calls=[
                    ToolCallItem(id="r", name="workspace.read", input={"path": "app.py"}),
                    ToolCallItem(id="x", name="workspace.read", input={"path": "outside.txt"}),
                    ToolCallItem(
                        id="w",
                        name="workspace.write",
                        input={"path": "app.py", "content": "print('hello, world')\n"},
                    ),
                ]
            ),
            "Fixed the greeting in app.py.",
        ]
    )


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "repo"
        root.mkdir()
        (root / "app.py").write_text("print('helo')\n", encoding="utf-8")
        (Path(folder) / "secret.txt").write_text("do not read", encoding="utf-8")
        os.symlink(Path(folder) / "secret.txt", root / "outside.txt")

        registry = default_profile_registry(workspaces={"repo": root})
        coding = build_profile("coding", model="scripted:demo")
        async with create_profile_runtime(registry, models=ModelRegistry([script()])) as runtime:
            paused = await run_profile(
                runtime, coding, "Fix the typo in app.py", workspace_id="repo"
            )
            (approval,) = paused.interruptions
            print(f"paused for approval: {approval.reason}")
            resumed = runtime.resume(paused.state, [InterruptionDecision.approve(approval.id)])
            done = await resumed.result()
        for item in done.items:
            if isinstance(item, ToolResultItem):
                print(f"{item.name}: {item.status} {str(item.output)[:70]}")
        print(done.output)
        print(f"app.py now: {(root / 'app.py').read_text(encoding='utf-8').strip()}")


if __name__ == "__main__":
    asyncio.run(main())
