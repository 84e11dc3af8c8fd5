"""Crash-safety support: a file-backed checkpoint store, logged tools and the crash scenarios.

Shared by the worker script (``runtime_crash_worker.py``, run as a subprocess that SIGKILLs
itself at a chosen persisted tool state) and the test that resumes its checkpoint in a fresh
runtime (``test_runtime_crash.py``).
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from actoviq.core import AgentSpec, JsonObject, RunLimitsPatch, ToolCallItem, ToolResultItem
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, RuntimeTool, ToolExecutionContext
from actoviq.runtime.tools import ToolBehavior, ToolDescriptor, json_schema_input

STATE_SUFFIX = ".json"
EXECUTION_LOG = "executions.log"

TOOL_CALLS = (
    ToolCallItem(id="c1", name="lookup", input={"key": "a"}),  # read
    ToolCallItem(id="c2", name="upsert", input={"key": "b"}),  # idempotent-write
    ToolCallItem(id="c3", name="charge", input={"amount": 5}),  # side-effect
)
APPROVAL_CALLS = (
    ToolCallItem(id="c1", name="wire", input={"amount": 100}),  # side-effect, needs approval
    ToolCallItem(id="c2", name="lookup", input={"key": "z"}),  # read, after the approval
)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileCheckpointStore:
    """A ``RunCheckpointStore`` of one JSON file per run: fsync'd temp file + atomic rename.

    ``after_save`` runs once the state is durable (the worker uses it to kill itself there).
    ``delete`` writes a tombstone (the state with ``"deleted": true``) so tests can audit it.
    """

    def __init__(
        self, directory: Path, *, after_save: Callable[[JsonObject], None] | None = None
    ) -> None:
        self.directory = directory
        self.after_save = after_save
        directory.mkdir(parents=True, exist_ok=True)

    def path(self, run_id: str) -> Path:
        return self.directory / f"{run_id}{STATE_SUFFIX}"

    def _write(self, run_id: str, state: JsonObject) -> None:
        target = self.path(run_id)
        temp = target.with_suffix(".tmp")
        with temp.open("w", encoding="utf-8") as handle:
            json.dump(state, handle, ensure_ascii=False, separators=(",", ":"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
        _fsync_dir(self.directory)

    async def save(self, state: JsonObject) -> None:
        self._write(str(state["runId"]), state)
        if self.after_save is not None:
            self.after_save(state)

    async def load(self, run_id: str) -> JsonObject | None:
        target = self.path(run_id)
        if not target.exists():
            return None
        with target.open(encoding="utf-8") as handle:
            return cast(JsonObject, json.load(handle))

    async def delete(self, run_id: str) -> None:
        state = await self.load(run_id)
        if state is not None:
            self._write(run_id, {**state, "deleted": True})

    async def aclose(self) -> None:
        return None


def log_execution(workdir: Path, line: str) -> None:
    """Append one durable line to the execution log (what the tools really did)."""
    with (workdir / EXECUTION_LOG).open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_executions(workdir: Path) -> list[str]:
    """The execution log's lines, in order."""
    path = workdir / EXECUTION_LOG
    if not path.exists():
        return []
    return path.read_text(encoding="utf-8").splitlines()


def kill_self() -> None:
    """Die like a crashed process: no cleanup, no flush, no finally blocks."""
    os.kill(os.getpid(), signal.SIGKILL)


def _tool(
    workdir: Path,
    name: str,
    effect: Any,
    *,
    requires_approval: bool = False,
    kill_in: str | None = None,
) -> RuntimeTool:
    def execute(ctx: ToolExecutionContext, value: Any) -> JsonObject:
        log_execution(workdir, f"{name}:{ctx.call_id}:{ctx.idempotency_key or '-'}")
        if kill_in == ctx.call_id:
            kill_self()  # the effect happened; the process dies before the commit is persisted
        return {"tool": name, "callId": ctx.call_id}

    return RuntimeTool(
        descriptor=ToolDescriptor(
            name=name,
            description=f"The {name} tool.",
            input=json_schema_input({"type": "object"}),
            behavior=ToolBehavior(effect=effect, requires_approval=requires_approval),
        ),
        execute=execute,
    )


def scripted_provider(calls: tuple[ToolCallItem, ...]) -> ScriptedProvider:
    """Calls the tools until the transcript holds tool results, then answers with text."""

    def turn(request: ModelRequest) -> ScriptedTurn:
        results = [item for item in request.input if isinstance(item, ToolResultItem)]
        if not results:
            return ScriptedTurn(tool_calls=calls)
        summary = ",".join(f"{item.call_id}={item.status}" for item in results)
        return ScriptedTurn(text=f"done {summary}")

    return ScriptedProvider([turn], repeat_last=True)


def build_runtime(
    workdir: Path,
    scenario: str,
    *,
    after_save: Callable[[JsonObject], None] | None = None,
    kill_in: str | None = None,
    event_sinks: Any = (),
) -> tuple[AgentRuntime, AgentSpec[Any, Any], ScriptedProvider, FileCheckpointStore]:
    """The runtime of a crash scenario: ``"effects"`` (read, idempotent-write, side-effect calls,
    run sequentially) or ``"approval"`` (an approval-gated side effect, then a read)."""
    store = FileCheckpointStore(workdir / "checkpoints", after_save=after_save)
    if scenario == "effects":
        tools = [
            _tool(workdir, "lookup", "read", kill_in=kill_in),
            _tool(workdir, "upsert", "idempotent-write", kill_in=kill_in),
            _tool(workdir, "charge", "side-effect", kill_in=kill_in),
        ]
        calls = TOOL_CALLS
    else:
        tools = [
            _tool(workdir, "wire", "side-effect", requires_approval=True, kill_in=kill_in),
            _tool(workdir, "lookup", "read", kill_in=kill_in),
        ]
        calls = APPROVAL_CALLS
    agent: AgentSpec[Any, Any] = AgentSpec(
        id=f"crash-{scenario}",
        name="Crash",
        instructions="Use the tools.",
        model="scripted:model-1",
        tools=tuple(tool.descriptor.name for tool in tools),
        # one call at a time, so every call (reads too) goes through prepared/started/committed
        limits=RunLimitsPatch(max_parallel_tools=1),
    )
    provider = scripted_provider(calls)
    runtime = AgentRuntime(
        models=ModelRegistry([provider]),
        tools=tools,
        checkpoint_store=store,
        agents=[agent],
        event_sinks=event_sinks,
    )
    return runtime, agent, provider, store


def kill_after_state(call_id: str, status: str) -> Callable[[JsonObject], None]:
    """An ``after_save`` hook: SIGKILL once ``call_id`` is persisted in ``status``."""

    def hook(state: JsonObject) -> None:
        for pending in cast(list[JsonObject], state.get("pendingTools") or []):
            call = cast(JsonObject, pending["call"])
            if call["id"] == call_id and pending["status"] == status:
                kill_self()

    return hook
