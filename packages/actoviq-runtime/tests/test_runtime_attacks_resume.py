"""Resume attacked through the public API (issues 11 §1 and 14 §5): tampered states, odd decisions.

Each case was a bug found by the adversarial review of resolved promises: a state field of the
wrong type (``metadata``, ``decisions`` entries, ``deadlineAt``, ids) raised a bare
``TypeError``/``KeyError``/``ValueError`` or was silently coerced; ``decisions=None`` raised a
bare ``TypeError``; and an approval plus a rejection of the same interruption silently kept the
last one. Every refusal must run nothing and leave the state resumable.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, cast

import pytest

from actoviq.core import (
    AgentSpec,
    ItemValidationError,
    JsonObject,
    ProviderResponseError,
    ToolCallItem,
    ToolResultItem,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InterruptionDecision,
    InterruptionDecisionError,
    RunStateError,
    SerializedRunState,
    tool,
)

CHARGES: list[int] = []


@tool(effect="side-effect", requires_approval=True)
def charge(amount: int) -> dict[str, int]:
    """Charge an amount."""
    CHARGES.append(amount)
    return {"charged": amount}


def _answer(request: ModelRequest) -> ScriptedTurn:
    if any(isinstance(item, ToolResultItem) for item in request.input):
        return ScriptedTurn(text="done")
    return ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="charge", input={"amount": 5})])


AGENT = AgentSpec(
    id="payer", name="Payer", instructions="Pay.", model="scripted:m", tools=("charge",)
)


def _runtime() -> AgentRuntime:
    model = ScriptedProvider([_answer], repeat_last=True)
    return AgentRuntime(models=ModelRegistry([model]), tools=[charge])


async def _interrupted(runtime: AgentRuntime, run_id: str) -> tuple[JsonObject, str]:
    result = await runtime.run(AGENT, "pay", run_id=run_id)
    assert result.status == "interrupted"
    return cast(JsonObject, copy.deepcopy(result.state)), result.interruptions[0].id


def _without_remaining(value: object) -> Callable[[JsonObject], None]:
    def tamper(state: JsonObject) -> None:
        state.pop("remainingRunMs", None)
        state["deadlineAt"] = cast(Any, value)

    return tamper


def _set(key: str, value: object) -> Callable[[JsonObject], None]:
    def tamper(state: JsonObject) -> None:
        state[key] = cast(Any, value)

    return tamper


TAMPERS: dict[str, Callable[[JsonObject], None]] = {
    "metadata-string": _set("metadata", "x"),
    "metadata-list": _set("metadata", [1]),
    "metadata-pairs": _set("metadata", [["a", 1]]),
    "usage-list": _set("usage", [1]),
    "decision-int": _set("decisions", [1]),
    "decision-missing-fields": _set("decisions", [{"x": 1}]),
    "deadline-int": _without_remaining(5),
    "tenant-int": _set("tenantId", 5),
    "session-revision-int": _set("expectedSessionRevision", 3),
    "child-run-ids-int": _set("childRunIds", [1]),
    "started-at-int": _set("startedAt", 5),
    "pending-duplicated": lambda state: cast(list[Any], state["pendingTools"]).append(
        copy.deepcopy(cast(list[Any], state["pendingTools"])[0])
    ),
}


@pytest.mark.parametrize("name", sorted(TAMPERS))
async def test_a_tampered_state_field_is_a_typed_refusal_that_runs_nothing(name: str) -> None:
    async with _runtime() as runtime:
        state, interruption = await _interrupted(runtime, f"tamper-{name}")
        tampered = copy.deepcopy(state)
        TAMPERS[name](tampered)
        before = len(CHARGES)
        with pytest.raises(RunStateError) as caught:
            runtime.resume(tampered, [InterruptionDecision.approve(interruption)])
        assert caught.value.code == "RUN_STATE_INVALID"
        with pytest.raises(RunStateError):
            SerializedRunState.from_json(tampered)
        assert len(CHARGES) == before
        # Nothing lost: the genuine state still resumes, once.
        result = await runtime.resume(state, [InterruptionDecision.approve(interruption)]).result()
        assert result.status == "completed" and len(CHARGES) == before + 1


@pytest.mark.parametrize("decisions", [None, 5, "run:c1", {"run:c1": "approve"}])
async def test_decisions_that_are_not_a_list_of_decisions_are_typed(decisions: Any) -> None:
    async with _runtime() as runtime:
        state, _ = await _interrupted(runtime, "not-a-list")
        with pytest.raises(InterruptionDecisionError) as caught:
            runtime.resume(state, decisions)
        assert caught.value.code == "INTERRUPTION_DECISION_INVALID"


async def test_conflicting_decisions_for_one_interruption_are_refused() -> None:
    async with _runtime() as runtime:
        state, interruption = await _interrupted(runtime, "conflict")
        before = len(CHARGES)
        for pair in (
            [InterruptionDecision.approve(interruption), InterruptionDecision.reject(interruption)],
            [InterruptionDecision.reject(interruption), InterruptionDecision.approve(interruption)],
        ):
            with pytest.raises(InterruptionDecisionError, match="Conflicting decisions"):
                runtime.resume(state, pair)
        assert len(CHARGES) == before
        # The same answer delivered twice (a webhook retry) is one decision.
        twice = [InterruptionDecision.approve(interruption)] * 2
        result = await runtime.resume(state, twice).result()
        assert result.status == "completed" and len(CHARGES) == before + 1


@pytest.mark.parametrize(
    "build",
    [
        lambda: InterruptionDecision.approve(cast(Any, None)),
        lambda: InterruptionDecision.approve(cast(Any, 5)),
        lambda: InterruptionDecision.approve(""),
        lambda: InterruptionDecision.approve("run:c\ud800"),
        lambda: InterruptionDecision.approve("run:c1", metadata=cast(Any, "x")),
        lambda: InterruptionDecision.approve("run:c1", metadata={"by": "\udfff"}),
        lambda: InterruptionDecision.reject("run:c1", reason=cast(Any, 5)),
        lambda: InterruptionDecision.failed("run:c1", reason="x\ud800"),
    ],
    ids=[
        "none",
        "int",
        "empty",
        "surrogate-id",
        "metadata-str",
        "metadata-surrogate",
        "reason-int",
        "reason-surrogate",
    ],
)
def test_a_malformed_decision_is_refused_when_built(build: Callable[[], object]) -> None:
    # Accepted before, it reached the run state's audit trail, which no store (nor from_json)
    # could then hold.
    with pytest.raises(ItemValidationError) as caught:
        build()
    assert caught.value.code == "ITEM_INVALID"


async def test_two_calls_with_one_id_are_refused_before_anything_runs() -> None:
    # One approval of "r:c1" approved both calls and the effect ran twice.
    twice = [
        ToolCallItem(id="c1", name="charge", input={"amount": 1}),
        ToolCallItem(id="c1", name="charge", input={"amount": 2}),
    ]
    model = ScriptedProvider([ScriptedTurn(tool_calls=twice)])
    before = len(CHARGES)
    async with AgentRuntime(models=ModelRegistry([model]), tools=[charge]) as runtime:
        with pytest.raises(ProviderResponseError) as caught:
            await runtime.run(AGENT, "pay")
    assert caught.value.code == "MODEL_TOOL_CALL_ID_DUPLICATE"
    assert len(CHARGES) == before
