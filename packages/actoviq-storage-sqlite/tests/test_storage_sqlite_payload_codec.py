"""With a payload codec the SQLite database file holds no secret (issue 11 §5).

A run whose tool input, tool result and model text carry a canary is checkpointed to a SQLite
file (interrupted for approval, then resumed from a fresh storage to completion). Without a codec
the canary is in the file (the documented default); with ``FernetPayloadCodec`` no byte of the
database, its WAL or its shared-memory file holds it, and resume works through the codec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from actoviq.core import AgentSpec, JsonObject, ToolCallItem, ToolResultItem
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    FernetPayloadCodec,
    InterruptionDecision,
    PayloadCodec,
    PayloadCodecError,
    RuntimeTool,
    ToolBehavior,
    ToolDescriptor,
    ToolExecutionContext,
    json_schema_input,
)
from actoviq.storage.sqlite import SqliteRunCheckpointAdapter, SqliteStorage

CANARY = "CANARY7e51d0"
CALL = ToolCallItem(id="c1", name="transfer", input={"iban": f"DE00{CANARY}"})


def _answer(request: ModelRequest) -> ScriptedTurn:
    if not any(isinstance(item, ToolResultItem) for item in request.input):
        return ScriptedTurn(text=f"Paying {CANARY}.", tool_calls=[CALL])
    return ScriptedTurn(text="paid")


def _runtime(storage: SqliteStorage, codec: PayloadCodec | None, seen: list[Any]) -> Any:
    def transfer(ctx: ToolExecutionContext, value: Any) -> JsonObject:
        seen.append(value)
        return {"receipt": f"R{CANARY}"}

    tool = RuntimeTool(
        descriptor=ToolDescriptor(
            name="transfer",
            input=json_schema_input({"type": "object"}),
            behavior=ToolBehavior(effect="side-effect", requires_approval=True),
        ),
        execute=transfer,
    )
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="banker", name="Banker", instructions="Pay.", model="scripted:m", tools=("transfer",)
    )
    runtime = AgentRuntime(
        models=ModelRegistry([ScriptedProvider([_answer], repeat_last=True)]),
        tools=[tool],
        agents=[agent],
        checkpoint_store=SqliteRunCheckpointAdapter(storage.checkpoints, payload_codec=codec),
    )
    return runtime, agent


def _files(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


async def _run_and_resume(db: Path, codec: PayloadCodec | None) -> list[Any]:
    seen: list[Any] = []
    async with await SqliteStorage.open(db) as storage:
        runtime, agent = _runtime(storage, codec, seen)
        async with runtime:
            paused = await runtime.run(agent, f"pay {CANARY}", run_id="pay")
    assert paused.status == "interrupted"
    state = cast(JsonObject, paused.state)
    async with await SqliteStorage.open(db) as storage:  # another process, later
        runtime, _ = _runtime(storage, codec, seen)
        stored = await SqliteRunCheckpointAdapter(storage.checkpoints, payload_codec=codec).load(
            "pay"
        )
        assert stored == state
        async with runtime:
            decisions = [InterruptionDecision.approve(i.id) for i in paused.interruptions]
            done = await runtime.resume(stored, decisions).result()
    assert done.status == "completed"
    return seen


async def test_the_database_file_holds_the_canary_without_a_codec(tmp_path: Path) -> None:
    db = tmp_path / "clear.db"
    await _run_and_resume(db, None)
    assert CANARY.encode() in _files(db)


async def test_with_fernet_no_file_of_the_database_holds_the_canary(tmp_path: Path) -> None:
    db = tmp_path / "sealed.db"
    key = FernetPayloadCodec.generate_key()
    seen = await _run_and_resume(db, FernetPayloadCodec(key))
    assert seen == [CALL.input]  # resume decoded the inputs
    assert CANARY.encode() not in _files(db)
    assert b"DE00" not in _files(db) and b"Paying" not in _files(db)
    async with await SqliteStorage.open(db) as storage:
        wrong = SqliteRunCheckpointAdapter(
            storage.checkpoints, payload_codec=FernetPayloadCodec(FernetPayloadCodec.generate_key())
        )
        with pytest.raises(PayloadCodecError):
            await wrong.load("pay")
        record = await storage.checkpoints.get(tenant_id="default", checkpoint_id="pay")
        assert record is not None and record.status == "completed"
