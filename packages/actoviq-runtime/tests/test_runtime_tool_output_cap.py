"""A tool result over the tool's ``max_output_chars`` fails the call, typed, and is kept nowhere."""

from __future__ import annotations

import json
from typing import Any

import pytest
from runtime_testkit import scripted_runtime

from actoviq.core import AgentSpec, ToolCallItem, ToolResultItem, to_json
from actoviq.events import InMemoryEventSink
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    DEFAULT_TOOL_MAX_OUTPUT_CHARS,
    ToolBehavior,
    ToolDefinitionError,
    ToolOutput,
    ToolOutputTooLargeError,
    tool,
)
from actoviq.runtime.tools.tool_json import json_size_over

HUGE_MARK = "HUGEPAYLOAD"


def agent(*tools: str) -> AgentSpec[Any, str]:
    return AgentSpec(id="a", name="A", instructions="x", model="scripted:m", tools=tools)


def turn(name: str, call_id: str = "c1") -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ToolCallItem(id=call_id, name=name, input={})])


def result_of(provider: ScriptedProvider, request: int) -> ToolResultItem:
    for item in provider.requests[request].input:
        if isinstance(item, ToolResultItem):
            return item
    raise AssertionError("no tool result")


@tool(effect="read", max_output_chars=100)
def dump() -> str:
    """Return too much."""
    return HUGE_MARK * 20


@tool(effect="read", max_output_chars=100)
def fits() -> str:
    """Return exactly the limit: 98 characters plus the two quotes of its JSON text."""
    return "x" * 98


@tool(effect="read", max_output_chars=100)
def chatty() -> ToolOutput:
    """A small value but a long model text."""
    return ToolOutput(value={"ok": True}, model_text=HUGE_MARK * 10)


@tool(effect="read")
def default_limited() -> dict[str, list[str]]:
    """Over the default limit, spread over many strings."""
    return {"rows": [HUGE_MARK * 100] * (DEFAULT_TOOL_MAX_OUTPUT_CHARS // 1000)}


@pytest.mark.parametrize("name", ["dump", "chatty", "default_limited"])
async def test_an_oversized_result_fails_the_call_typed_and_is_recorded_nowhere(name: str) -> None:
    sink = InMemoryEventSink()
    provider = ScriptedProvider([turn(name), "done"])
    tools = [dump, chatty, default_limited]
    async with scripted_runtime(provider, tools=tools, event_sinks=[sink]) as runtime:
        result = await runtime.run(agent(name), "go")
    assert result.output == "done"  # the run goes on: the model is told what happened
    seen = result_of(provider, 1)
    assert seen.status == "error"
    assert "max_output_chars" in json.dumps(seen.output)
    failed = [event for event in sink.events if event.type == "tool.failed"]
    assert len(failed) == 1
    data: Any = failed[0].data
    failure: Any = data["failure"]
    assert failure["kind"] == "validation"
    assert failure["cause"]["type"] == "ToolOutputTooLargeError"
    everything = json.dumps([to_json(event) for event in sink.events])
    everything += json.dumps([to_json(item) for item in result.items])
    assert HUGE_MARK not in everything


async def test_a_result_at_the_limit_is_delivered_whole() -> None:
    provider = ScriptedProvider([turn("fits"), "done"])
    async with scripted_runtime(provider, tools=[fits]) as runtime:
        await runtime.run(agent("fits"), "go")
    seen = result_of(provider, 1)
    assert seen.status == "success"
    assert seen.output == "x" * 98


def test_the_error_carries_size_limit_and_a_stable_code() -> None:
    error = ToolOutputTooLargeError("t", 101, 100)
    assert error.code == "TOOL_OUTPUT_TOO_LARGE"
    assert error.details == {"toolName": "t", "size": 101, "limit": 100}


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True])
def test_max_output_chars_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(ToolDefinitionError):
        ToolBehavior(max_output_chars=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value",
    ["abc", 12345, -1.5, None, True, [], {}, {"a": [1, "two", None, {"b": False}]}, ["x" * 50]],
)
def test_the_counted_size_is_the_compact_json_length(value: object) -> None:
    size = len(json.dumps(value, separators=(",", ":")))
    assert json_size_over(value, size) is None
    over = json_size_over(value, size - 1)
    assert over is not None and over >= size
