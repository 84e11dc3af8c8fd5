"""Release gate: every canonical item survives what actoviq-orchestration persists.

An agent tool whose child waits for an approval suspends the manager's call; the child's run state
(its transcript: canonical items) travels inside the manager's interruption metadata, is
persisted with the manager's run state, and is read back when the manager resumes. The check runs
that path with the real ``AgentTool`` code, the runtime's state (de)serialisation and the runtime's
SQLite checkpoint store (a file, reopened); the persisted scope record rides along and must
round-trip through strict JSON text too.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from harness import register_persistence

from actoviq.core import (
    AgentSpec,
    CanonicalItem,
    Interruption,
    RunResult,
    Usage,
    dumps_compact,
    loads_strict,
)
from actoviq.events import SequentialIdFactory, create_root_trace_context
from actoviq.orchestration import (
    AgentTool,
    ChildRunner,
    ChildRunOutcome,
    PersistedScope,
    RunTree,
    persist_scope,
)
from actoviq.providers import ModelRegistry
from actoviq.runtime import AgentRuntime, SerializedRunState
from actoviq.storage.sqlite import SqliteStorage


def _state(run_id: str, items: Sequence[CanonicalItem], **extra: Any) -> SerializedRunState:
    return SerializedRunState(
        run_id=run_id,
        agent_id="gate-agent",
        agent_config_digest="sha256v1:gate",
        status="interrupted",
        trace=create_root_trace_context(run_id, ids=SequentialIdFactory()),
        started_at="2026-01-01T00:00:00.000Z",
        turn=1,
        input=tuple(items[:1]),
        transcript=tuple(items),
        generated_items=tuple(items[1:]),
        usage=Usage(),
        remaining_run_ms=1000,
        **extra,
    )


async def _suspended_child_roundtrip(items: Sequence[CanonicalItem]) -> Sequence[CanonicalItem]:
    async with AgentRuntime(models=ModelRegistry([])) as runtime:
        runner = ChildRunner(runtime, RunTree(ids=SequentialIdFactory()))
        root = runner.create_root(run_id="gate-root")
        child = runner.tree.derive_child(root, "gate-child")
        scope_record = dumps_compact((await persist_scope(child)).to_json())
        assert PersistedScope.from_json(loads_strict(scope_record)).to_json() == loads_strict(
            scope_record
        )
        child_state = _state("gate-child", items).to_json()
        approval = Interruption(id="gate-child:c1", kind="approval", reason="gate")
        outcome = ChildRunOutcome(
            status="interrupted",
            attempts=1,
            scope=child,
            result=RunResult(
                run_id="gate-child",
                agent_id="gate-agent",
                status="interrupted",
                output="",
                items=tuple(items),
                usage=Usage(),
                started_at="2026-01-01T00:00:00.000Z",
                completed_at="2026-01-01T00:00:01.000Z",
                interruptions=(approval,),
                state=child_state,
            ),
        )
        tool = AgentTool(AgentSpec(id="gate-agent", name="Gate", instructions="x"), runner)
        nested = tool._suspended(outcome)  # pyright: ignore[reportPrivateUsage]
        manager = _state("gate-root", items[:1], interruptions=tuple(nested))
    # The manager's run state goes through the runtime's real checkpoint store (a SQLite file,
    # reopened) exactly as ``AgentRuntime(checkpoints=...)`` saves and resumes it.
    with tempfile.TemporaryDirectory() as folder:
        async with await SqliteStorage.open(Path(folder) / "gate.db") as storage:
            await storage.runtime_checkpoints().save(manager.to_json())
        async with await SqliteStorage.open(Path(folder) / "gate.db") as storage:
            loaded = await storage.runtime_checkpoints().load("gate-root")
    assert loaded is not None
    restored = SerializedRunState.from_json(loaded)
    carried = cast(dict[str, Any], (restored.interruptions[0].metadata or {})["childState"])
    return SerializedRunState.from_json(carried).transcript


register_persistence("orchestration-suspended-child", _suspended_child_roundtrip)
