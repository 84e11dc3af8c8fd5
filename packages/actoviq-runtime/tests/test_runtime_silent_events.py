"""Events of a run nobody observes are counted, never built (issue 21 §1).

A run without a stream, on a runtime with no sink and no processor but the built-in redaction,
skips stamping, redacting and dispatching its events; everything a caller can observe (the
result, every saved state and its ``lastEventSequence``) is what an observed run produces.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from runtime_testkit import RecordingCheckpointStore, json_tool, make_agent, scripted_runtime

from actoviq.core import JsonObject, ToolCallItem
from actoviq.events import InMemoryEventSink, RedactionProcessor, RunEvent, SequentialIdFactory
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import ToolRegistry


def _provider() -> ScriptedProvider:
    return ScriptedProvider(
        [
            ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="look", input={"q": "x"})]),
            ScriptedTurn(text="done"),
        ]
    )


def _found(_ctx: Any, _input: Any) -> JsonObject:
    return {"found": True}


def _tools() -> ToolRegistry:
    return ToolRegistry([json_tool("look", _found)])


async def _states(**options: Any) -> tuple[list[JsonObject], str]:
    store = RecordingCheckpointStore()
    async with scripted_runtime(
        _provider(), tools=_tools(), checkpoint_store=store, **options
    ) as runtime:
        result = await runtime.run(make_agent(tools=("look",)), "hi", run_id="r1")
    return store.saves, cast(str, result.output)


def _comparable(state: JsonObject) -> JsonObject:
    volatile = ("trace", "startedAt", "deadlineAt", "decidedAt")
    return {key: value for key, value in state.items() if key not in volatile}


async def test_an_unobserved_run_saves_the_states_an_observed_one_saves() -> None:
    sink = InMemoryEventSink()
    silent, silent_output = await _states()
    observed, observed_output = await _states(event_sinks=[sink])
    assert silent_output == observed_output == "done"
    assert [_comparable(state) for state in silent] == [_comparable(s) for s in observed]
    sequences = [state["lastEventSequence"] for state in silent]
    assert sequences[-1] == len(sink.events) == sink.events[-1].sequence  # counts every event


async def test_nothing_is_dispatched_unless_someone_listens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []
    original = RedactionProcessor.process

    def spy(self: RedactionProcessor, event: RunEvent) -> RunEvent:
        seen.append(event.type)
        return original(self, event)

    monkeypatch.setattr(RedactionProcessor, "process", spy)
    async with scripted_runtime(ScriptedProvider(["a", "b"])) as runtime:
        assert runtime.dispatcher.observed is False
        assert (await runtime.run(make_agent(), "hi")).output == "a"
        assert seen == []  # nobody could see them: never stamped, redacted or dispatched
        async with runtime.stream(make_agent(), "hi") as handle:
            streamed = [event.type async for event in handle]
        assert seen == streamed  # a stream's consumer gets (and redaction sees) every event
        assert streamed[0] == "run.started" and streamed[-1] == "run.completed"


async def test_an_observing_processor_or_injected_ids_see_every_event() -> None:
    class Spy:
        id = "spy"

        def __init__(self) -> None:
            self.types: list[str] = []

        def process(self, event: RunEvent) -> RunEvent:
            self.types.append(event.type)
            return event

    spy = Spy()
    async with scripted_runtime(ScriptedProvider(["a"]), event_processors=[spy]) as runtime:
        await runtime.run(make_agent(), "hi")
    assert spy.types == ["run.started", "model.requested", "model.completed", "run.completed"]

    ids = SequentialIdFactory()
    async with scripted_runtime(ScriptedProvider(["a"]), ids=ids) as runtime:
        await runtime.run(make_agent(), "hi")
    assert ids.event_id().endswith("000000000005")  # the run stamped its four events


async def test_host_events_are_dispatched_even_in_a_silent_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []
    original = RedactionProcessor.process

    def spy(self: RedactionProcessor, event: RunEvent) -> RunEvent:
        seen.append(event.type)
        return original(self, event)

    monkeypatch.setattr(RedactionProcessor, "process", spy)
    store = RecordingCheckpointStore()
    runtime = scripted_runtime(_provider(), checkpoint_store=store)

    async def look(_ctx: Any, _input: Any) -> str:
        assert await runtime.emit_run_event("r1", "host.note", {"n": 1})
        return "ok"

    runtime.tools.register(json_tool("look", look))
    async with runtime:
        assert (await runtime.run(make_agent(tools=("look",)), "hi", run_id="r1")).output == "done"
    assert seen == ["host.note"]  # its data is the host's: redaction still checks it
    observed, _ = await _states(event_sinks=[InMemoryEventSink()])
    last = cast(int, observed[-1]["lastEventSequence"])
    assert store.saves[-1]["lastEventSequence"] == last + 1
