"""Run an untrusted workflow script behind the kernel layers, then read its output safely.

The local isolated executor starts a fresh interpreter per run with no-new-privs, an unprivileged
uid (when this process is root), a Landlock domain and a seccomp filter. The script may call the
host capabilities it was granted, write inside its workspace, and nothing else. No model or
network is needed; runs the same offline and online.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import cast

from actoviq.core import JsonValue
from actoviq.workflow import (
    CapabilityCallContext,
    LocalIsolatedProcessWorkflowExecutor,
    SandboxPolicy,
    UntrustedWorkflowRequest,
    WorkflowExecutorError,
    WorkflowPermissionError,
    WorkflowWorkspaceError,
    read_workspace_file,
)

SCRIPT = """
async def main(context):
    prices = await context["capabilities"]["prices"]({"items": context["input"]})
    total = sum(prices.values())
    with open("report.txt", "w") as report:
        for name, price in sorted(prices.items()):
            report.write(f"{name}: {price}\\n")
        report.write(f"total: {total}\\n")
    return {"total": total}
"""

ATTACK = """
import os
def main(context):
    os.symlink("/etc/shadow", "report.txt")  # leave a trap for the host's reader
    return open("/etc/shadow").read()
"""


def prices(value: JsonValue, context: CapabilityCallContext) -> JsonValue:
    """A host capability: the handler, not the script, decides what is allowed."""
    table = {"apple": 3, "pear": 4, "plum": 2}
    items: object = value.get("items") if isinstance(value, dict) else None
    names = [str(item) for item in cast("list[object]", items)] if isinstance(items, list) else []
    return {name: table.get(name, 0) for name in names}


async def main() -> None:
    executor = LocalIsolatedProcessWorkflowExecutor(capabilities={"prices": prices})
    status = executor.capabilities()
    if not status.available:
        # Fail closed by default; running weaker is the host's explicit choice.
        print(f"kernel layers missing here ({status.reason}); running best-effort")
        weaker = SandboxPolicy(landlock="best-effort", seccomp="best-effort")
        executor = LocalIsolatedProcessWorkflowExecutor(
            capabilities={"prices": prices}, sandbox=weaker
        )
        status = executor.capabilities()
    print(
        f"layers: {', '.join(status.layers)}; uid {status.uid}; Landlock ABI {status.landlock_abi}"
    )
    with tempfile.TemporaryDirectory() as directory:
        workspace = Path(directory)
        # --8<-- [start:run]
        async with executor:
            result = await executor.execute(
                UntrustedWorkflowRequest(
                    source=SCRIPT,
                    workspace_dir=str(workspace),
                    input=["apple", "plum"],
                    capabilities=["prices"],
                )
            )
            print(f"result: {result.value} in {result.duration_ms} ms")
            # --8<-- [end:run]
            print(read_workspace_file(workspace, "report.txt").decode(), end="")
            (workspace / "report.txt").unlink()
            try:
                await executor.execute(
                    UntrustedWorkflowRequest(source=ATTACK, workspace_dir=str(workspace))
                )
            except WorkflowPermissionError as error:
                print(f"attack refused by the {error.layer} layer: {error.operation}")
            except WorkflowExecutorError as error:
                print(f"attack refused: {error.code}")
            # Whatever a script leaves behind, the host reads outputs without following links.
            (workspace / "trap.txt").symlink_to("/etc/hostname")
            try:
                read_workspace_file(workspace, "trap.txt")
            except WorkflowWorkspaceError as error:
                print(f"host reader refused trap.txt: {error.reason}")


if __name__ == "__main__":
    asyncio.run(main())
