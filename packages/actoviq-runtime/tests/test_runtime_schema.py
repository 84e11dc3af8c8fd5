from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from runtime_testkit import scripted_runtime

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import InterruptionDecision, ToolRegistry, tool
from actoviq.runtime.schema import run_state_json_schema

PUBLISHED = Path(__file__).resolve().parents[3] / "docs" / "schemas" / "run-state.schema.json"


@tool(effect="side-effect", requires_approval=True)
def send(to: str) -> str:
    """Send a message (needs approval).

    Args:
        to: recipient.
    """
    return f"sent to {to}"


def _validator() -> Any:
    schema: Any = run_state_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


async def _interrupted_states() -> list[Any]:
    calls = [ToolCallItem(id=f"c{i}", name="send", input={"to": f"u{i}"}) for i in (1, 2)]
    provider = ScriptedProvider([ScriptedTurn(tool_calls=calls), ScriptedTurn(text="done")])
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="a", name="A", instructions="x", model="scripted:m", tools=("send",)
    )
    async with scripted_runtime(provider, tools=ToolRegistry([send])) as rt:
        first = await rt.run(agent, "hi")
        assert first.status == "interrupted"
        approve_one = InterruptionDecision(
            interruption_id=first.interruptions[0].id, outcome="approve"
        )
        second = await rt.resume(first.state, [approve_one]).result()
        assert second.status == "interrupted"  # the other call still needs a decision
        return [first.state, second.state]


async def test_states_the_runtime_writes_match_the_schema() -> None:
    validator = _validator()
    states = await _interrupted_states()
    for state in states:
        errors = [error.message for error in validator.iter_errors(state)]
        assert not errors
    assert states[1]["decisions"], "the approval is kept for audit"


async def test_a_corrupted_state_fails_the_schema() -> None:
    state = dict((await _interrupted_states())[0])
    state["pendingTools"] = [{**state["pendingTools"][0], "status": "done"}]
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate(state)
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate({**state, "schemaVersion": 3})


def test_published_schema_is_current() -> None:
    expected = json.dumps(run_state_json_schema(), indent=2, ensure_ascii=False, sort_keys=True)
    assert PUBLISHED.read_text("utf-8") == expected + "\n", "run `make docs`"
