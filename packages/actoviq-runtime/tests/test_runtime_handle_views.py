"""Filtered views of a stream: text deltas, tool events, partial structured output (issue 14 §4)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from runtime_testkit import scripted_runtime

from actoviq.core import AgentSpec, JsonValue, ToolCallItem
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import RunHandleConsumedError, tool


@tool(effect="read")
def lookup(term: str) -> str:
    """Look a term up."""
    return term.upper()


@attrs.frozen
class Answer:
    title: str
    score: int


def script() -> ScriptedProvider:
    return ScriptedProvider(
        [
            ScriptedTurn(
                text="Let me look.",
                stream_deltas=["Let ", "me look."],
                tool_calls=[ToolCallItem(id="c1", name="lookup", input={"term": "cas"})],
            ),
            ScriptedTurn(
                text="CAS means compare-and-set.", stream_deltas=["CAS means ", "compare-and-set."]
            ),
        ]
    )


AGENT = AgentSpec(id="a", name="A", instructions="x", model="scripted:m", tools=("lookup",))


async def test_text_deltas_yield_only_the_text() -> None:
    async with (
        scripted_runtime(script(), tools=[lookup]) as runtime,
        runtime.stream(AGENT, "what is CAS?") as handle,
    ):
        pieces = [text async for text in handle.text_deltas()]
        result = await handle.result()
    assert "".join(pieces) == "Let me look.CAS means compare-and-set."
    assert all(isinstance(piece, str) for piece in pieces)
    assert result.output == "CAS means compare-and-set."


async def test_tool_events_yield_only_tool_events_in_order() -> None:
    async with (
        scripted_runtime(script(), tools=[lookup]) as runtime,
        runtime.stream(AGENT, "what is CAS?") as handle,
    ):
        events = [event async for event in handle.tool_events()]
    assert [event.type for event in events] == ["tool.started", "tool.completed"]
    data: Any = events[0].data
    assert data["name"] == "lookup"


async def test_a_view_is_the_one_consumer() -> None:
    async with (
        scripted_runtime(script(), tools=[lookup]) as runtime,
        runtime.stream(AGENT, "hi") as handle,
    ):
        async for _ in handle.text_deltas():
            break
        with pytest.raises(RunHandleConsumedError):
            async for _ in handle:
                pass


async def test_partial_output_parses_the_json_streamed_so_far() -> None:
    pieces = ['{"title": "Da', 'ta", "sc', 'ore": 4', "2}"]
    provider = ScriptedProvider([ScriptedTurn(text="".join(pieces), stream_deltas=pieces)])
    agent = AgentSpec(id="s", name="S", instructions="x", model="scripted:m", output=Answer)
    async with (
        scripted_runtime(provider) as runtime,
        runtime.stream(agent, "rate it") as handle,
    ):
        partials: list[JsonValue] = [value async for value in handle.partial_output()]
        result = await handle.result()
    assert partials[0] == {"title": "Da"}
    assert partials[-1] == {"title": "Data", "score": 42}
    assert len(partials) == len(set(map(repr, partials)))  # only changes are yielded
    assert result.output == Answer(title="Data", score=42)


async def test_partial_output_restarts_with_each_model_call() -> None:
    provider = ScriptedProvider(
        [
            ScriptedTurn(text='{"title": "x"}', stream_deltas=['{"title": ', '"x"}']),
            ScriptedTurn(
                text='{"title": "y", "score": 1}', stream_deltas=['{"title": "y", ', '"score": 1}']
            ),
        ]
    )
    agent = AgentSpec(id="s", name="S", instructions="x", model="scripted:m", output=Answer)
    async with (
        scripted_runtime(provider) as runtime,
        runtime.stream(agent, "rate it") as handle,
    ):
        partials = [value async for value in handle.partial_output()]
        result = await handle.result()
    assert {"title": "x"} in partials  # the first (invalid: no score) answer, then the retry
    assert partials[-1] == {"title": "y", "score": 1}
    assert result.output == Answer(title="y", score=1)
