"""Tools that fail in hostile ways, through the public API (issues 11 §2/§5 and 14 §3).

Bugs found by the adversarial review of resolved promises:

* the ``tool.failed`` event carried the exception's own text in ``failure.cause.message``
  unredacted (the model-facing ``message`` and the log were cleaned, the cause was not), so a
  secret in an exception reached every sink under the default policy;
* an exception whose ``__str__`` raises failed the whole run instead of the one call;
* a tool raising ``asyncio.CancelledError`` itself (an inner task it awaited was cancelled) made
  ``handle.result()`` raise a bare ``CancelledError`` with no terminal event.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from actoviq.core import AgentSpec, ToolCallItem, ToolResultItem, item_to_json
from actoviq.events import InMemoryEventSink
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, RuntimeTool, tool

SECRET = "sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0"


class Unprintable(Exception):
    """An exception whose text cannot be computed."""

    def __str__(self) -> str:
        raise RuntimeError("__str__ exploded")


def _tools(make: Callable[[], BaseException], count: int) -> list[RuntimeTool]:
    """``count`` plain (worker-thread) tools raising ``make()``, plus one async one."""

    def plain(x: int) -> str:
        """Fail."""
        raise make()

    async def coroutine(x: int) -> str:
        """Fail."""
        raise make()

    built = [tool(name=f"plain{i}")(plain) for i in range(count)]
    return [*built, tool(name="coro")(coroutine)]


async def _run(
    make: Callable[[], BaseException], count: int = 1
) -> tuple[Any, InMemoryEventSink, list[ToolResultItem]]:
    tools = _tools(make, count)
    names = tuple(t.descriptor.name for t in tools)
    calls = [ToolCallItem(id=f"c{i}", name=name, input={"x": i}) for i, name in enumerate(names)]
    seen: list[ToolResultItem] = []

    def answer(request: ModelRequest) -> ScriptedTurn:
        results = [item for item in request.input if isinstance(item, ToolResultItem)]
        if results:
            seen.extend(results)
            return ScriptedTurn(text="done")
        return ScriptedTurn(tool_calls=calls)

    agent = AgentSpec(id="a", name="A", instructions="Try.", model="scripted:m", tools=names)
    sink = InMemoryEventSink()
    model = ScriptedProvider([answer], repeat_last=True)
    async with AgentRuntime(models=ModelRegistry([model]), tools=tools, event_sinks=[sink]) as rt:
        result = await rt.run(agent, "go")
    return result, sink, seen


def _failures(sink: InMemoryEventSink) -> list[Any]:
    return [event.data for event in sink.events if event.type == "tool.failed"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: ValueError({"api_key": SECRET}),
        lambda: RuntimeError(f"Authorization: Bearer {SECRET}"),
        lambda: RuntimeError(f"GET https://admin:{SECRET}@db.example.test/x failed"),
    ],
    ids=["key-in-args", "bearer", "url-credentials"],
)
async def test_a_secret_in_a_tool_exception_reaches_no_event_log_or_model(
    make: Callable[[], BaseException], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        result, sink, seen = await _run(make)
    assert result.status == "completed"
    failures = _failures(sink)
    assert len(failures) == 2 and all(f["failure"]["cause"]["message"] for f in failures)
    events = json.dumps([event.data for event in sink.events], default=str)
    assert SECRET not in events
    assert SECRET not in caplog.text
    assert all(SECRET not in json.dumps(item_to_json(item)) for item in seen) and len(seen) == 2


async def test_an_unprintable_exception_fails_the_call_not_the_run() -> None:
    result, sink, seen = await _run(Unprintable, count=2)
    assert result.status == "completed" and result.output == "done"
    failures = _failures(sink)
    assert [f["failure"]["kind"] for f in failures] == ["execution"] * 3
    assert all("<unprintable Unprintable>" in f["failure"]["cause"]["message"] for f in failures)
    assert len(seen) == 3


async def test_a_tool_raising_cancelled_error_itself_fails_the_call_not_the_run() -> None:
    # One plain tool (invoke) and two (a thread batch), plus the coroutine tool on the loop.
    for count in (1, 2):
        result, sink, seen = await _run(asyncio.CancelledError, count=count)
        assert result.status == "completed" and result.output == "done"
        failures = _failures(sink)
        assert [f["failure"]["kind"] for f in failures] == ["execution"] * (count + 1)
        assert len(seen) == count + 1
        assert [e.type for e in sink.events][-1] == "run.completed"


async def test_an_unknown_tool_name_of_any_length_gives_a_bounded_message() -> None:
    # The name comes from the model: the message the model sees must stay bounded (issue 14 §3).
    call = ToolCallItem(id="c1", name="x" * 100_000, input={})
    seen: list[ToolResultItem] = []

    def answer(request: ModelRequest) -> ScriptedTurn:
        results = [item for item in request.input if isinstance(item, ToolResultItem)]
        if results:
            seen.extend(results)
            return ScriptedTurn(text="done")
        return ScriptedTurn(tool_calls=[call])

    tools = _tools(ValueError, 1)
    agent = AgentSpec(id="a", name="A", instructions="Try.", model="scripted:m", tools=("coro",))
    model = ScriptedProvider([answer], repeat_last=True)
    async with AgentRuntime(models=ModelRegistry([model]), tools=tools) as runtime:
        result = await runtime.run(agent, "go")
    assert result.status == "completed" and len(seen) == 1
    text = json.dumps(seen[0].output)  # the item itself names the call, as every result does
    assert "Unknown tool" in text and "coro" in text and len(text) < 2_000
