"""Tools that tell the model what went wrong (issue 14 §3)."""

from __future__ import annotations

import logging
from typing import Any, assert_type

import pytest
from runtime_testkit import json_tool, scripted_runtime

from actoviq.core import AgentSpec, JsonObject, RunError, ToolCallItem, ToolResultItem
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    DEFAULT_TOOL_MAX_RETRIES,
    FunctionTool,
    RuntimeTool,
    ToolRegistry,
    ToolRetry,
    tool,
)
from actoviq.runtime.tools import MAX_DETAIL_CHARS

SECRET = "sk-live-0123456789abcdefSECRET"


def agent(*tools: str) -> AgentSpec[Any, str]:
    return AgentSpec(id="a", name="A", instructions="x", model="scripted:m", tools=tools)


def call(name: str, arguments: dict[str, Any], call_id: str = "c1") -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ToolCallItem(id=call_id, name=name, input=arguments)])


def result_of(provider: ScriptedProvider, request: int, call_id: str = "c1") -> ToolResultItem:
    for item in provider.requests[request].input:
        if isinstance(item, ToolResultItem) and item.call_id == call_id:
            return item
    raise AssertionError(f"no result for {call_id}")


@tool(effect="read")
def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


def test_tool_stays_callable_for_unit_tests() -> None:
    assert add(2, b=3) == 5
    assert_type(add(2), int)
    assert isinstance(add, RuntimeTool)
    assert isinstance(add, FunctionTool)
    assert add.name == "add"
    assert ToolRegistry([add]).resolve("add") is add

    @tool
    async def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    import asyncio

    assert asyncio.run(shout("hi")) == "HI"


async def test_invalid_arguments_show_paths_and_messages_then_the_model_corrects() -> None:
    provider = ScriptedProvider(
        [
            call("add", {"a": "two", "c": 1}),
            call("add", {"a": 2}, call_id="c2"),
            "done",
        ]
    )
    async with scripted_runtime(provider, tools=[add]) as runtime:
        result = await runtime.run(agent("add"), "add")
    assert result.output == "done"
    first = result_of(provider, 1)
    assert first.status == "error"
    assert isinstance(first.output, dict)
    message = first.output["message"]
    assert isinstance(message, str)
    assert message.startswith('validation: Invalid input for tool "add".')
    assert "$['a']" in message or "$: Additional properties" in message
    assert "is not of type 'integer'" in message
    assert "Additional properties are not allowed" in message
    assert result_of(provider, 2, "c2").output == 3


async def test_many_validation_errors_are_bounded() -> None:
    schema: JsonObject = {
        "type": "object",
        "properties": {f"field_{index}": {"type": "integer"} for index in range(40)},
    }
    wide = json_tool("wide", lambda ctx, args: 1, schema=schema)  # pyright: ignore[reportUnknownLambdaType]
    bad: JsonObject = {f"field_{index}": "x" * 500 for index in range(40)}
    provider = ScriptedProvider([call("wide", bad), "ok"])
    async with scripted_runtime(provider, tools=[wide]) as runtime:
        await runtime.run(agent("wide"), "go")
    output = result_of(provider, 1).output
    assert isinstance(output, dict)
    message = output["message"]
    assert isinstance(message, str)
    assert "field_0" in message
    assert len(message) <= MAX_DETAIL_CHARS + 100


async def test_tool_retry_reaches_the_model_and_success_resets_the_count() -> None:
    attempts: list[str] = []

    @tool(effect="read", max_retries=1)
    def book(day: str) -> str:
        """Book a day."""
        attempts.append(day)
        if day < "2030-01-01":
            raise ToolRetry(f"{day} is in the past; pick a day from 2030-01-01 on.")
        return f"booked {day}"

    provider = ScriptedProvider(
        [
            call("book", {"day": "2020-01-01"}),
            call("book", {"day": "2031-01-01"}, "c2"),
            call("book", {"day": "2021-01-01"}, "c3"),  # count was reset by the success
            call("book", {"day": "2032-01-01"}, "c4"),
            "booked twice",
        ]
    )
    async with scripted_runtime(provider, tools=[book]) as runtime:
        result = await runtime.run(agent("book"), "book")
    assert result.output == "booked twice"
    first = result_of(provider, 1)
    assert first.status == "error"
    assert first.output == {
        "kind": "retry",
        "message": "retry: 2020-01-01 is in the past; pick a day from 2030-01-01 on.",
        "retryable": True,
    }
    assert len(attempts) == 4


async def test_retries_beyond_max_retries_fail_the_run() -> None:
    @tool(effect="read", max_retries=2)
    def pick(n: int) -> int:
        """Pick."""
        raise ToolRetry("try a bigger number")

    provider = ScriptedProvider([call("pick", {"n": i}, f"c{i}") for i in range(5)])
    async with scripted_runtime(provider, tools=[pick]) as runtime:
        with pytest.raises(RunError) as caught:
            await runtime.run(agent("pick"), "pick")
    assert caught.value.code == "TOOL_RETRIES_EXCEEDED"
    details = caught.value.details
    assert details is not None
    assert details["tool"] == "pick"
    assert details["maxRetries"] == 2
    assert len(provider.requests) == 3  # three calls: two retries allowed, the third fails


async def test_invalid_arguments_count_as_retries() -> None:
    provider = ScriptedProvider([call("add", {"a": "x"}, f"c{i}") for i in range(5)])
    async with scripted_runtime(provider, tools=[add]) as runtime:
        with pytest.raises(RunError) as caught:
            await runtime.run(agent("add"), "add")
    assert caught.value.code == "TOOL_RETRIES_EXCEEDED"
    assert len(provider.requests) == DEFAULT_TOOL_MAX_RETRIES + 1


async def test_unknown_tool_lists_the_agents_tools() -> None:
    @tool(effect="read")
    def hidden() -> str:
        """Not offered to this agent."""
        return "x"

    provider = ScriptedProvider([call("ad", {"a": 1}), "ok"])
    async with scripted_runtime(provider, tools=[add, hidden]) as runtime:
        await runtime.run(agent("add"), "go")
    output = result_of(provider, 1).output
    assert isinstance(output, dict)
    assert output["message"] == 'not_found: Unknown tool "ad". Available tools: add.'


async def test_a_raising_tool_is_logged_redacted_and_the_model_sees_bounded_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool(effect="read")
    def fetch(url: str, api_key: str) -> str:
        """Fetch."""
        raise RuntimeError(f"upstream refused Bearer {SECRET} " + "x" * 5000)

    provider = ScriptedProvider([call("fetch", {"url": "https://e.test", "api_key": SECRET}), "ok"])
    caplog.set_level(logging.WARNING, logger="actoviq.runtime.tools")
    async with scripted_runtime(provider, tools=[fetch]) as runtime:
        result = await runtime.run(agent("fetch"), "go", run_id="run-log")
    assert result.output == "ok"
    records = [r for r in caplog.records if r.name == "actoviq.runtime.tools"]
    assert len(records) == 1
    record = records[0]
    assert record.levelno == logging.WARNING
    assert record.__dict__["actoviq_run_id"] == "run-log"
    assert record.__dict__["actoviq_tool"] == "fetch"
    assert record.__dict__["actoviq_call_id"] == "c1"
    assert record.__dict__["actoviq_exception_type"] == "RuntimeError"
    assert record.__dict__["actoviq_arguments"] == {
        "url": "https://e.test",
        "api_key": "[REDACTED]",
    }
    assert SECRET not in record.getMessage()
    assert record.exc_info is None  # no raw traceback (it would carry the secret)
    output = result_of(provider, 1).output
    assert isinstance(output, dict)
    message = output["message"]
    assert isinstance(message, str)
    assert SECRET not in message
    assert message.startswith('execution: Tool "fetch" failed. RuntimeError: upstream refused')
    assert len(message) < MAX_DETAIL_CHARS + 100
