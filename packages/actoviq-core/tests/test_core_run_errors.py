from __future__ import annotations

import json

import attrs
import pytest

from actoviq.core import (
    AbortController,
    AbortError,
    AbortSignal,
    ActoviqError,
    CapabilityError,
    HandoffCallItem,
    Interruption,
    ItemValidationError,
    RunError,
    RunResult,
    TextItem,
    ToolCallItem,
    UnsupportedItemError,
    UsageAccumulator,
    from_json,
    to_iso,
    to_json,
)


def test_run_result_with_json_output_round_trips_and_usage_is_the_snapshot() -> None:
    acc = UsageAccumulator({"requests": 1, "inputTokens": 3, "outputTokens": 4})
    result: RunResult[object] = RunResult(
        run_id="run_1",
        agent_id="a",
        status="interrupted",
        output={"answer": [1, None]},
        items=(TextItem(role="assistant", text="hi"), ToolCallItem(id="c", name="n", input={})),
        usage=acc.snapshot(),
        started_at="2026-07-11T00:00:00.000Z",
        completed_at="2026-07-11T00:00:01.000Z",
        session_id="s",
        interruptions=(
            Interruption(
                id="run_1:c",
                kind="approval",
                reason="needs ok",
                call_id="c",
                tool_name="n",
                input={},
            ),
        ),
        state={"schemaVersion": 2},
    )
    wire = json.loads(json.dumps(to_json(result)))
    assert wire["usage"]["totalTokens"] == 7
    assert wire["interruptions"][0]["callId"] == "c"
    back = from_json(RunResult[object], wire)
    assert back == result
    assert back.usage == acc.snapshot()


def test_capability_error_to_json_matches_reference() -> None:
    cause = RuntimeError("inner")
    error = CapabilityError(
        "Model lacks input.image.",
        provider_id="openai-chat",
        model="gpt-x",
        capability="input.image",
        cause=cause,
    )
    assert isinstance(error, RunError) and isinstance(error, ActoviqError)
    assert error.code == "CAPABILITY_ERROR"
    assert error.__cause__ is cause and error.cause is cause
    assert (error.provider_id, error.model, error.capability) == (
        "openai-chat",
        "gpt-x",
        "input.image",
    )
    assert error.to_json() == {
        "name": "CapabilityError",
        "message": "Model lacks input.image.",
        "code": "CAPABILITY_ERROR",
        "phase": "model_call",
        "retryable": False,
        "details": {"providerId": "openai-chat", "model": "gpt-x", "capability": "input.image"},
    }


def test_capability_error_with_several_capabilities_and_none() -> None:
    error = CapabilityError("x", capability=["input.image", "input.audio"])
    assert error.capability == "input.image,input.audio"
    assert error.capabilities == ("input.image", "input.audio")
    assert CapabilityError("x").to_json()["details"] == {}


def test_unsupported_item_error_is_a_capability_error_with_its_own_code() -> None:
    error = UnsupportedItemError("no audio", item_type="audio", provider_id="openai-chat")
    assert isinstance(error, CapabilityError)
    assert error.code == "UNSUPPORTED_ITEM"
    assert error.to_json()["details"] == {"providerId": "openai-chat", "itemType": "audio"}


def test_run_error_defaults_and_serialisation_omit_absent_fields() -> None:
    error = RunError("boom")
    assert error.to_json() == {
        "name": "RunError",
        "message": "boom",
        "code": "RUN_ERROR",
        "retryable": False,
    }
    full = RunError(
        "late",
        code="RUN_DEADLINE_EXCEEDED",
        run_id="r",
        phase="runtime",
        retryable=True,
        details={"ms": 5},
        cause=ValueError("x"),
    )
    assert full.to_json() == {
        "name": "RunError",
        "message": "late",
        "code": "RUN_DEADLINE_EXCEEDED",
        "runId": "r",
        "phase": "runtime",
        "retryable": True,
        "details": {"ms": 5},
    }
    assert "cause" not in json.dumps(full.to_json())


def test_abort_signal_reason_listeners_and_any() -> None:
    controller = AbortController()
    seen: list[object] = []
    remove = controller.signal.add_listener(seen.append)
    other = AbortController()
    combined = AbortSignal.any([controller.signal, other.signal])
    controller.signal.throw_if_aborted()  # not aborted: no error
    reason = TimeoutError("deadline")
    controller.abort(reason)
    controller.abort("second reason ignored")
    assert controller.signal.aborted and controller.signal.reason is reason
    assert seen == [reason]
    assert combined.aborted and combined.reason is reason
    with pytest.raises(TimeoutError):
        controller.signal.throw_if_aborted()
    remove()
    plain = AbortSignal.aborted_with("user stop")
    with pytest.raises(AbortError) as caught:
        plain.throw_if_aborted()
    assert caught.value.reason == "user stop"
    late: list[object] = []
    plain.add_listener(late.append)
    assert late == ["user stop"]


def test_a_listener_remover_removes_only_its_own_listener_any_number_of_times() -> None:
    controller = AbortController()
    seen: list[object] = []
    first = controller.signal.add_listener(lambda reason: seen.append(f"first {reason}"))
    second = controller.signal.add_listener(lambda reason: seen.append(f"second {reason}"))
    third = controller.signal.add_listener(lambda reason: seen.append(f"third {reason}"))
    assert controller.signal.listener_count == 3
    second()
    second()  # a second call is harmless
    assert controller.signal.listener_count == 2
    controller.abort("stop")
    assert seen == ["first stop", "third stop"]  # in registration order, the removed one not
    first()  # after the abort: nothing left to remove, no error
    third()
    assert controller.signal.listener_count == 0
    assert controller.signal.add_listener(seen.append)() is None  # born aborted: called at once
    assert seen[-1] == "stop"


def test_iso_timestamps_have_milliseconds_and_z() -> None:
    from datetime import UTC, datetime

    assert to_iso(datetime(2026, 7, 11, 0, 0, 0, 123456, tzinfo=UTC)) == (
        "2026-07-11T00:00:00.123Z"
    )


def test_tool_execution_error_carries_its_failure() -> None:
    from actoviq.core import ToolExecutionError, ToolFailure

    cause = OSError("disk")
    failure = ToolFailure(
        kind="execution", tool_name="read", call_id="c1", message="boom", cause=cause
    )
    error = ToolExecutionError(failure)
    assert isinstance(error, ActoviqError)
    assert error.code == "TOOL_EXECUTION_ERROR"
    assert error.kind == "execution"
    assert error.__cause__ is cause
    assert failure.to_json() == {
        "kind": "execution",
        "toolName": "read",
        "callId": "c1",
        "message": "boom",
        "retryable": False,
        "cause": {"type": "OSError", "message": "disk"},
    }


def test_iso_now_matches_to_iso_of_the_same_millisecond() -> None:
    from datetime import UTC, datetime

    from actoviq.core import iso_now

    before = to_iso(datetime.now(UTC))
    stamp = iso_now()
    after = to_iso(datetime.now(UTC))
    assert before <= stamp <= after
    assert len(stamp) == len("2026-07-11T00:00:00.000Z")
    assert stamp.endswith("Z")


def test_run_result_handoff_round_trips_and_is_absent_when_none() -> None:
    call = HandoffCallItem(
        id="call-9", target_agent_id="billing", input={}, metadata={"handoffId": "to-billing"}
    )
    result: RunResult[str] = RunResult(
        run_id="r",
        agent_id="triage",
        status="completed",
        output="",
        items=(),
        usage=UsageAccumulator().snapshot(),
        started_at="2026-07-11T00:00:00.000Z",
        completed_at="2026-07-11T00:00:01.000Z",
        handoff=call,
    )
    wire = json.loads(json.dumps(to_json(result)))
    assert wire["handoff"] == {
        "type": "handoff_call",
        "id": "call-9",
        "targetAgentId": "billing",
        "input": {},
        "metadata": {"handoffId": "to-billing"},
    }
    assert from_json(RunResult[str], wire) == result
    plain = to_json(attrs.evolve(result, handoff=None))
    assert isinstance(plain, dict) and "handoff" not in plain
    wire["handoff"] = {"type": "text", "role": "user", "text": "x"}
    with pytest.raises(ItemValidationError, match="handoff_call"):
        from_json(RunResult[str], wire)
