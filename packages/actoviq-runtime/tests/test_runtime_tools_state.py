"""The pending-tool state machine, decisions and resume rules (D5, spec 03 §4.8, Q1-Q6)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from actoviq.core import ItemValidationError, ToolCallItem, ToolResultItem, from_json, to_json
from actoviq.runtime.tools import (
    InterruptionDecision,
    PendingTool,
    PendingToolState,
    PendingToolTransitionError,
    ReconciliationDecisionError,
    ResumeAction,
    ToolEffect,
    ToolFailure,
    ToolFailureKind,
    ToolOutput,
    freeze_json,
    plan_resume,
    reconciliation_result,
    settled_state,
    thaw_json,
)

CALL = ToolCallItem(id="c1", name="send", input={"to": "a@b"})
RESULT = ToolResultItem(call_id="c1", name="send", status="success", output=None)
S = PendingToolState


def pending(
    state: PendingToolState, effect: ToolEffect = "side-effect", **extra: object
) -> PendingTool:
    base = PendingTool.prepare(CALL, effect, run_id="r1")
    values: dict[str, object] = {"state": state, **extra}
    if state is S.COMMITTED and "result" not in values:
        values["result"] = RESULT
    return attrs.evolve(base, **values)


def test_prepare_sets_the_idempotency_key_only_for_idempotent_write() -> None:
    assert PendingTool.prepare(CALL, "idempotent-write", run_id="r1").idempotency_key == "r1:c1"
    assert PendingTool.prepare(CALL, "side-effect", run_id="r1").idempotency_key is None
    assert PendingTool.prepare(CALL, "read", run_id="r1").state is S.PREPARED


def test_allowed_transitions_and_forbidden_ones() -> None:
    record = PendingTool.prepare(CALL, "side-effect", run_id="r1")
    started = record.advance(S.STARTED)
    assert started.state is S.STARTED and record.state is S.PREPARED
    committed = started.advance(S.COMMITTED, result=RESULT)
    assert committed.result == RESULT
    with pytest.raises(PendingToolTransitionError, match="committed to started"):
        committed.advance(S.STARTED)
    with pytest.raises(PendingToolTransitionError, match="without a result"):
        started.advance(S.COMMITTED)
    unknown = started.advance(S.UNKNOWN)
    assert unknown.advance(S.COMMITTED, result=RESULT).state is S.COMMITTED
    waiting = record.advance(S.AWAITING_APPROVAL, interruption_id="r1:c1")
    assert waiting.interruption_id == "r1:c1"
    assert waiting.advance(S.STARTED).interruption_id == "r1:c1"
    with pytest.raises(PendingToolTransitionError):
        record.advance(S.UNKNOWN)


def test_wire_round_trip_uses_camel_case_and_status() -> None:
    record = PendingTool.prepare(CALL, "idempotent-write", run_id="r1").advance(
        S.AWAITING_APPROVAL, interruption_id="r1:c1"
    )
    data = to_json(record)
    assert data == {
        "call": {"type": "tool_call", "id": "c1", "name": "send", "input": {"to": "a@b"}},
        "effect": "idempotent-write",
        "status": "awaiting_approval",
        "interruptionId": "r1:c1",
        "idempotencyKey": "r1:c1",
    }
    assert from_json(PendingTool, data) == record
    done = record.advance(S.COMMITTED, result=RESULT)
    assert from_json(PendingTool, to_json(done)) == done


def test_wire_rejects_bad_status_effect_and_item_types() -> None:
    data = to_json(PendingTool.prepare(CALL, "read", run_id="r1"))
    with pytest.raises(ItemValidationError, match="status"):
        from_json(PendingTool, {**data, "status": "running"})
    with pytest.raises(ItemValidationError, match="effect"):
        from_json(PendingTool, {**data, "effect": "write"})
    with pytest.raises(ItemValidationError, match="tool_call"):
        from_json(PendingTool, {**data, "call": to_json(RESULT)})


@pytest.mark.parametrize(
    ("effect", "kind", "expected"),
    [
        ("side-effect", "timeout", S.UNKNOWN),
        ("side-effect", "cancelled", S.UNKNOWN),
        ("side-effect", "execution", S.COMMITTED),
        ("side-effect", None, S.COMMITTED),
        ("read", "timeout", S.COMMITTED),
        ("idempotent-write", "cancelled", S.COMMITTED),
    ],
)
def test_settled_state(effect: ToolEffect, kind: ToolFailureKind | None, expected: S) -> None:
    failure = (
        None
        if kind is None
        else ToolFailure(kind=kind, tool_name="send", call_id="c1", message="x")
    )
    assert settled_state(effect, failure) is expected


def test_decisions_constructors_and_wire() -> None:
    decision = InterruptionDecision.committed("r1:c1:reconcile", {"id": 7})
    assert to_json(decision) == {
        "interruptionId": "r1:c1:reconcile",
        "outcome": "committed",
        "output": {"id": 7},
    }
    assert from_json(InterruptionDecision, to_json(decision)) == decision
    null_output = InterruptionDecision.committed("x", None)
    assert to_json(null_output)["output"] is None
    assert to_json(InterruptionDecision.approve("x")) == {
        "interruptionId": "x",
        "outcome": "approve",
    }
    assert InterruptionDecision.reject("x", "no").reason == "no"
    assert InterruptionDecision.failed("x", "never sent").outcome == "failed"
    assert InterruptionDecision.retry("x").outcome == "retry"
    with pytest.raises(ItemValidationError, match="outcome"):
        InterruptionDecision(interruption_id="x", outcome="maybe")  # type: ignore[arg-type]
    with pytest.raises(ItemValidationError, match="output"):
        InterruptionDecision.committed("x", {"bad": {1, 2}})  # type: ignore[dict-item]


def test_plan_resume_rule_table() -> None:
    approve = InterruptionDecision.approve("r1:c1")
    reject = InterruptionDecision.reject("r1:c1")
    committed = InterruptionDecision.committed("r1:c1:reconcile", "sent")
    failed = InterruptionDecision.failed("r1:c1:reconcile", "not sent")
    retry = InterruptionDecision.retry("r1:c1:reconcile")
    # committed: never re-invoked, whatever the decision
    assert plan_resume(pending(S.COMMITTED), None) is ResumeAction.USE_RESULT
    assert plan_resume(pending(S.COMMITTED), retry) is ResumeAction.USE_RESULT
    # prepared: nothing ran
    assert plan_resume(pending(S.PREPARED), None) is ResumeAction.EXECUTE
    # approvals
    waiting = pending(S.AWAITING_APPROVAL)
    assert plan_resume(waiting, None) is ResumeAction.INTERRUPT_APPROVAL
    assert plan_resume(waiting, approve) is ResumeAction.EXECUTE_APPROVED
    assert plan_resume(waiting, reject) is ResumeAction.REJECT
    with pytest.raises(ReconciliationDecisionError, match="approval"):
        plan_resume(waiting, committed)
    # started: read replays; others need reconciliation
    assert plan_resume(pending(S.STARTED, "read"), None) is ResumeAction.EXECUTE
    assert plan_resume(pending(S.STARTED), None) is ResumeAction.INTERRUPT_RECONCILE
    assert (
        plan_resume(pending(S.STARTED, "idempotent-write"), None)
        is ResumeAction.INTERRUPT_RECONCILE
    )
    # unknown
    unknown = pending(S.UNKNOWN)
    assert plan_resume(unknown, None) is ResumeAction.INTERRUPT_RECONCILE
    assert plan_resume(unknown, committed) is ResumeAction.COMMIT_OUTPUT
    assert plan_resume(unknown, failed) is ResumeAction.COMMIT_FAILED
    with pytest.raises(ReconciliationDecisionError, match="cannot be retried"):
        plan_resume(unknown, retry)
    with pytest.raises(ReconciliationDecisionError, match="reconciliation"):
        plan_resume(unknown, approve)
    assert plan_resume(pending(S.UNKNOWN, "read"), retry) is ResumeAction.RETRY
    assert plan_resume(pending(S.UNKNOWN, "idempotent-write"), retry) is ResumeAction.RETRY
    keyless = pending(S.UNKNOWN, "idempotent-write", idempotency_key=None)
    with pytest.raises(ReconciliationDecisionError, match="cannot be retried"):
        plan_resume(keyless, retry)


def test_reconciliation_results() -> None:
    record = pending(S.UNKNOWN)
    ok = reconciliation_result(record, InterruptionDecision.committed("i", {"sent": True}))
    assert (ok.status, ok.output, ok.call_id) == ("success", {"sent": True}, "c1")
    failed = reconciliation_result(record, InterruptionDecision.failed("i", "bounced"))
    assert failed.status == "error"
    assert failed.output == {
        "kind": "execution",
        "message": "execution: bounced",
        "retryable": False,
    }
    rejected = reconciliation_result(pending(S.AWAITING_APPROVAL), InterruptionDecision.reject("i"))
    assert rejected.output == {
        "kind": "denied",
        "message": 'denied: Tool "send" was rejected.',
        "retryable": False,
    }
    with pytest.raises(ReconciliationDecisionError, match="executes"):
        reconciliation_result(record, InterruptionDecision.retry("i"))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_tool_output_freezes_and_thaws_any_json_value(value: Any) -> None:
    output = ToolOutput(value=value)
    assert output.json_value() == value
    assert freeze_json(thaw_json(output.value)) == output.value
    assert output.json_value() is not value or not isinstance(value, dict | list)


@given(json_values, st.sampled_from(["read", "idempotent-write", "side-effect"]))
def test_committed_pending_tool_round_trips(output: Any, effect: ToolEffect) -> None:
    result = reconciliation_result(
        pending(S.UNKNOWN, effect), InterruptionDecision.committed("i", output)
    )
    record = pending(S.UNKNOWN, effect).advance(S.COMMITTED, result=result)
    assert from_json(PendingTool, to_json(record)) == record
