"""Checkpoints at rest: the payload codec hook and its Fernet implementation (issue 11 §5).

Without a codec a checkpoint keeps tool inputs, results and the transcript in clear (resume
needs them). With ``payload_codec=FernetPayloadCodec(key)`` the stored record holds none of
them, resume still works through the codec, and a wrong key fails typed.
"""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from runtime_testkit import json_tool, make_agent, scripted_runtime

from actoviq.core import JsonObject, ToolCallItem, ToolResultItem
from actoviq.providers import ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    FernetPayloadCodec,
    InMemoryCheckpointStore,
    InterruptionDecision,
    PayloadCodecError,
    RunPersistenceError,
    RuntimeConfigurationError,
    StoreRunCheckpointAdapter,
    ToolExecutionContext,
)

CANARY = "CANARY-9f3e1a"
CALL = ToolCallItem(id="c1", name="transfer", input={"iban": f"DE00-{CANARY}", "memo": "rent"})


def _answer(request: ModelRequest) -> ScriptedTurn:
    if not any(isinstance(item, ToolResultItem) for item in request.input):
        return ScriptedTurn(text=f"Moving money for {CANARY}.", tool_calls=[CALL])
    return ScriptedTurn(text="done")


class Bank:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def transfer(self, ctx: ToolExecutionContext, value: Any) -> JsonObject:
        self.seen.append(value)
        return {"receipt": f"R-{CANARY}"}


def _runtime(bank: Bank, store: StoreRunCheckpointAdapter) -> AgentRuntime:
    return scripted_runtime(
        ScriptedProvider([_answer], repeat_last=True),
        tools=[json_tool("transfer", bank.transfer, effect="side-effect", requires_approval=True)],
        agents=[make_agent(id="banker", tools=("transfer",))],
        checkpoint_store=store,
    )


async def _interrupted(store: StoreRunCheckpointAdapter, bank: Bank) -> JsonObject:
    agent = make_agent(id="banker", tools=("transfer",))
    result = await _runtime(bank, store).run(agent, f"pay for {CANARY}", run_id="pay")
    assert result.status == "interrupted"
    return cast(JsonObject, result.state)


def _approve(state: JsonObject) -> list[InterruptionDecision]:
    pending = cast(list[JsonObject], state["pendingTools"])
    return [InterruptionDecision.approve(cast(str, p["interruptionId"])) for p in pending]


async def test_without_a_codec_the_checkpoint_is_in_clear() -> None:
    records = InMemoryCheckpointStore()
    await _interrupted(StoreRunCheckpointAdapter(records), Bank())
    record = await records.get(tenant_id="default", checkpoint_id="pay")
    assert CANARY in repr(record)  # the documented default: resume needs the inputs


async def test_fernet_keeps_the_record_free_of_secrets_and_resume_works() -> None:
    key = FernetPayloadCodec.generate_key()
    records, bank = InMemoryCheckpointStore(), Bank()
    store = StoreRunCheckpointAdapter(records, payload_codec=FernetPayloadCodec(key))
    state = await _interrupted(store, bank)
    record = await records.get(tenant_id="default", checkpoint_id="pay")
    assert record is not None
    assert CANARY not in repr(record) and "rent" not in repr(record)
    assert set(record.state) == {"$codec", "payload"} and record.state["$codec"] == "fernet"
    assert all("input" not in e and "output" not in e for e in record.pending_side_effects)
    assert record.pending_side_effects[0]["kind"] == "tool:transfer"  # ids stay queryable
    assert await store.load("pay") == state  # decoded transparently
    # A new worker with the same key resumes; every save of the resumed run is encoded too.
    again = StoreRunCheckpointAdapter(records, payload_codec=FernetPayloadCodec(key))
    result = await _runtime(bank, again).resume(state, _approve(state)).result()
    assert result.status == "completed"
    assert bank.seen == [CALL.input]
    final = await records.get(tenant_id="default", checkpoint_id="pay")
    assert final is not None and final.status == "completed"
    assert CANARY not in repr(final)


async def test_a_wrong_key_fails_typed() -> None:
    records = InMemoryCheckpointStore()
    store = StoreRunCheckpointAdapter(
        records, payload_codec=FernetPayloadCodec(FernetPayloadCodec.generate_key())
    )
    state = await _interrupted(store, Bank())
    wrong = StoreRunCheckpointAdapter(
        records, payload_codec=FernetPayloadCodec(FernetPayloadCodec.generate_key())
    )
    with pytest.raises(PayloadCodecError) as caught:
        await wrong.load("pay")
    assert caught.value.code == "STORAGE_PAYLOAD_UNREADABLE"
    with pytest.raises(PayloadCodecError, match="configure its payload_codec"):
        await StoreRunCheckpointAdapter(records).load("pay")
    bank = Bank()
    with pytest.raises(RunPersistenceError) as resumed:
        await _runtime(bank, wrong).resume(state, _approve(state)).result()
    assert resumed.value.code == "CHECKPOINT_CLAIM_FAILED"
    assert resumed.value.details is not None
    assert resumed.value.details["errorCode"] == "STORAGE_PAYLOAD_UNREADABLE"
    assert bank.seen == []  # nothing ran


async def test_key_rotation_and_plain_states_written_before_the_codec() -> None:
    old, new = FernetPayloadCodec.generate_key(), FernetPayloadCodec.generate_key()
    records = InMemoryCheckpointStore()
    state = await _interrupted(
        StoreRunCheckpointAdapter(records, payload_codec=FernetPayloadCodec(old)), Bank()
    )
    rotated = StoreRunCheckpointAdapter(records, payload_codec=FernetPayloadCodec([new, old]))
    assert await rotated.load("pay") == state
    plain_records = InMemoryCheckpointStore()
    plain = await _interrupted(StoreRunCheckpointAdapter(plain_records), Bank())
    reader = StoreRunCheckpointAdapter(plain_records, payload_codec=FernetPayloadCodec(new))
    assert await reader.load("pay") == plain


def test_bad_keys_are_refused_without_echoing_them() -> None:
    with pytest.raises(RuntimeConfigurationError) as caught:
        FernetPayloadCodec("not-a-key-sk-SECRETVALUE")
    assert "SECRETVALUE" not in str(caught.value)
    with pytest.raises(RuntimeConfigurationError):
        FernetPayloadCodec([])
    codec = FernetPayloadCodec(FernetPayloadCodec.generate_key())
    assert "hidden" in repr(codec)
    token = codec.encode(json.dumps({"a": 1}).encode())
    assert json.loads(codec.decode(token)) == {"a": 1}
    with pytest.raises(PayloadCodecError):
        codec.decode(token[:-4] + "AAAA")  # altered: authenticated encryption refuses it
