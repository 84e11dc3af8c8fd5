"""SerializedRunState v2: wire round trip, reading reference v1 states, refusing others."""

from __future__ import annotations

import copy
import json
from typing import Any, cast

import pytest
from oracle_data import load_golden

from actoviq.core import Interruption, TextItem, ToolCallItem, ToolResultItem, Usage
from actoviq.events import TraceContext
from actoviq.runtime import (
    PendingTool,
    PendingToolState,
    ResolvedDecision,
    RunStateError,
    RunStateVersionError,
    SerializedRunState,
)


def _golden_v1_state() -> dict[str, Any]:
    data = load_golden("run-events.json")
    scenario = next(s for s in data["scenarios"] if s["name"] == "approval-approve")
    state = copy.deepcopy(scenario["legs"][0]["serialized_run_state_at_interruption"])
    # placeholders are not valid hex ids: substitute real ones
    state["trace"]["traceId"] = "0" * 31 + "1"
    state["trace"]["spanId"] = "0" * 15 + "1"
    state["startedAt"] = "2026-01-01T00:00:00.000Z"
    state["deadlineAt"] = "2026-01-01T00:15:00.000Z"
    return cast(dict[str, Any], state)


def _state() -> SerializedRunState:
    call = ToolCallItem(id="c1", name="send", input={"to": "x"})
    return SerializedRunState(
        run_id="run-1",
        agent_id="agent",
        agent_config_digest="sha256v1:abc",
        status="interrupted",
        trace=TraceContext(run_id="run-1", trace_id="a" * 32, span_id="b" * 16),
        started_at="2026-01-01T00:00:00.000Z",
        remaining_run_ms=1234,
        turn=1,
        input=(TextItem(role="user", text="hi"),),
        transcript=(TextItem(role="user", text="hi"), call),
        generated_items=(call,),
        usage=Usage(requests=1, input_tokens=3, output_tokens=2, total_tokens=5),
        pending_tools=(
            PendingTool(
                call=call,
                effect="side-effect",
                state=PendingToolState.AWAITING_APPROVAL,
                interruption_id="run-1:c1",
            ),
            PendingTool(
                call=ToolCallItem(id="c2", name="read", input={}),
                effect="read",
                state=PendingToolState.COMMITTED,
                result=ToolResultItem(call_id="c2", name="read", status="success", output=None),
            ),
        ),
        interruptions=(
            Interruption(id="run-1:c1", kind="approval", reason="needs approval", call_id="c1"),
        ),
        last_event_sequence=7,
        decisions=(
            ResolvedDecision(
                interruption_id="x",
                call_id="c0",
                tool_name="t",
                outcome="reject",
                decided_at="2026-01-01T00:00:00.000Z",
            ),
        ),
        metadata={"k": "v"},
    )


def test_v2_round_trip_is_lossless_and_json() -> None:
    state = _state()
    data = state.to_json()
    text = json.dumps(data, allow_nan=False)
    again = SerializedRunState.from_json(json.loads(text))
    assert again == state
    assert data["schemaVersion"] == 2
    assert data["lastEventSequence"] == 7
    assert data["remainingRunMs"] == 1234
    assert "deadlineAt" not in data
    pending = cast(list[dict[str, Any]], data["pendingTools"])
    assert [entry["status"] for entry in pending] == ["awaiting_approval", "committed"]
    assert pending[1]["result"]["output"] is None  # JSON null output is kept


@pytest.mark.oracle
def test_reads_reference_v1_state_with_one_pending_tool() -> None:
    state = SerializedRunState.from_json(_golden_v1_state())
    assert state.schema_version == 2
    assert len(state.pending_tools) == 1
    pending = state.pending_tools[0]
    assert pending.state is PendingToolState.AWAITING_APPROVAL
    assert pending.interruption_id == "run-approval-approve:call_email"
    assert pending.effect == "side-effect"
    assert state.last_event_sequence == 0
    assert state.deadline_at == "2026-01-01T00:15:00.000Z"
    assert state.turn == 1 and len(state.transcript) == 3


@pytest.mark.parametrize("version", [3, 0, "2", None])
def test_other_versions_are_refused(version: object) -> None:
    data = _state().to_json()
    data["schemaVersion"] = cast(Any, version)
    with pytest.raises(RunStateVersionError, match="Unsupported run state version"):
        SerializedRunState.from_json(data)


@pytest.mark.parametrize("field", ["runId", "agentId"])
def test_missing_identity_is_refused(field: str) -> None:
    data = _state().to_json()
    data[field] = " "
    with pytest.raises(RunStateError, match="missing identity"):
        SerializedRunState.from_json(data)


def test_malformed_pending_tool_is_a_typed_error() -> None:
    data = _state().to_json()
    data["pendingTools"] = [{"call": {"type": "text", "role": "user", "text": "x"}}]
    with pytest.raises(RunStateError):
        SerializedRunState.from_json(data)
