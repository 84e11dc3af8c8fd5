"""``AgentRunStream``: legacy events, bounded buffer, coalescing, cancellation (spec 04 §5.1)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, cast

import pytest

from actoviq.compat import (
    AGENT_EVENT_TYPES,
    AgentRunStreamOverflowError,
    ModelProviderLegacyAdapter,
    create_agent_sdk,
)
from actoviq.compat.stream import CONSUMER_STOPPED, AgentRunStream, OverflowStrategy
from actoviq.core import AbortController, RunError, ToolCallItem
from actoviq.providers import StreamConsumedError
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import RunCancelledError, tool


def _adapter(*turns: Any) -> tuple[ModelProviderLegacyAdapter, ScriptedProvider]:
    provider = ScriptedProvider(list(turns))
    return ModelProviderLegacyAdapter(provider), provider


def _gate_tool(name: str = "gate") -> tuple[Any, asyncio.Event]:
    """A read tool that signals when the run reached it (all earlier events are pushed)."""
    reached = asyncio.Event()

    async def run() -> str:
        reached.set()
        return "ok"

    run.__name__ = name
    run.__doc__ = "Signal the test."
    return tool(effect="read")(run), reached


async def _collect(
    stream: AgentRunStream,
    into: list[dict[str, Any]],
    *,
    cancel_at: str | None = None,
    reason: str = "",
) -> None:
    """Consume ``stream`` into ``into`` (cancelling with ``reason`` at a ``cancel_at`` event)."""
    async for event in stream:
        into.append(cast(dict[str, Any], event))
        if event["type"] == cancel_at:
            stream.cancel(reason)


async def test_a_streamed_run_yields_the_0x_event_sequence() -> None:
    @tool(effect="read")
    def lookup(q: str) -> str:
        """Look up.

        Args:
            q: the query.
        """
        return f"found {q}"

    model_api, _ = _adapter(
        ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="lookup", input={"q": "x"})]),
        ScriptedTurn(text="all done", stream_deltas=["all ", "done"], usage={"inputTokens": 3}),
    )
    async with await create_agent_sdk(modelApi=model_api, tools=[lookup], model="m") as sdk:
        stream = sdk.stream("find x", coalesceDeltas=False)
        events = [event async for event in stream]
        result = await stream.result
    types = [e["type"] for e in events]
    assert types == [
        "run.started",
        "request.started",
        "response.tool_input.delta",
        "response.message",
        "tool.call",
        "tool.result",
        "request.started",
        "response.text.delta",
        "response.text.delta",
        "response.message",
        "response.completed",
    ]
    assert set(types) <= set(AGENT_EVENT_TYPES)
    assert all(e["runId"] == result.run_id and e["timestamp"] for e in events)
    started = cast(dict[str, Any], events[0])
    assert (started["model"], started["input"]) == ("m", "find x")
    tool_result = cast(dict[str, Any], events[5])["result"]
    assert (tool_result["id"], tool_result["outputText"], tool_result["isError"]) == (
        "c1",
        "found x",
        False,
    )
    assert tool_result["input"] == {"q": "x"} and tool_result["provider"] == "local"
    deltas = [cast(dict[str, Any], e) for e in events if e["type"] == "response.text.delta"]
    assert [(d["delta"], d["snapshot"], d["iteration"]) for d in deltas] == [
        ("all ", "all ", 2),
        ("done", "all done", 2),
    ]
    completed = cast(dict[str, Any], events[-1])["result"]
    assert completed == json.loads(json.dumps(result.to_json()))
    assert await stream.result() == result  # called like RunHandle.result(), same outcome
    assert result.text == "all done"


async def test_waiting_deltas_are_coalesced() -> None:
    gate, reached = _gate_tool()
    pieces = [f"p{i} " for i in range(300)]
    # One turn streams 300 deltas, then calls the gate: when the gate runs, all are buffered.
    model_api, _ = _adapter(
        ScriptedTurn(
            text="".join(pieces),
            stream_deltas=pieces,
            tool_calls=[ToolCallItem(id="g", name="gate", input={})],
        ),
        ScriptedTurn(text="end"),
    )
    async with await create_agent_sdk(modelApi=model_api, tools=[gate]) as sdk:
        stream = sdk.stream("talk", maxBufferedEvents=16)
        await asyncio.wait_for(reached.wait(), 10)  # every delta of turn 1 is buffered by now
        assert 0 < stream.buffered_event_count == stream.bufferedEventCount < 16
        assert (stream.pendingConsumerCount, stream.pendingProducerCount) == (0, 0)
        events = [event async for event in stream]
    deltas = [
        cast(dict[str, Any], e)
        for e in events
        if e["type"] == "response.text.delta" and e["iteration"] == 1
    ]
    assert len(deltas) == 1
    assert deltas[0]["delta"] == "".join(pieces) == deltas[0]["snapshot"]
    assert stream.dropped_event_count == 0


async def test_overflow_throw_fails_the_stream_and_cancels_the_run() -> None:
    gate, _ = _gate_tool()
    model_api, provider = _adapter(
        ScriptedTurn(
            tool_calls=[ToolCallItem(id=f"g{i}", name="gate", input={}) for i in range(3)]
        ),
        ScriptedTurn(text="never"),
    )
    async with await create_agent_sdk(modelApi=model_api, tools=[gate]) as sdk:
        stream = sdk.stream("go", maxBufferedEvents=3)
        await asyncio.wait_for(stream.wait_finished(), 10)  # nobody consumed meanwhile
        with pytest.raises(AgentRunStreamOverflowError) as caught:
            await stream.result
        assert caught.value.code == "AGENT_RUN_STREAM_OVERFLOW"
        events: list[dict[str, Any]] = []
        with pytest.raises(AgentRunStreamOverflowError):
            await _collect(stream, events)
    assert len(events) == 3  # two buffered, then the terminal error in its reserved slot
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["code"] == "AGENT_RUN_STREAM_OVERFLOW"
    assert len(provider.calls) == 1  # cancelled: the second model call never happened


@pytest.mark.parametrize("strategy", ["drop-oldest", "drop-newest"])
async def test_drop_strategies_keep_the_terminal_event(strategy: str) -> None:
    gate, reached = _gate_tool()
    model_api, _ = _adapter(
        ScriptedTurn(
            tool_calls=[ToolCallItem(id=f"g{i}", name="gate", input={}) for i in range(4)]
        ),
        ScriptedTurn(text="finished"),
    )
    async with await create_agent_sdk(modelApi=model_api, tools=[gate]) as sdk:
        stream = sdk.stream("go", maxBufferedEvents=4, overflow=strategy)  # type: ignore[arg-type]
        await asyncio.wait_for(stream.wait_finished(), 10)
        assert reached.is_set()
        events = [cast(dict[str, Any], event) async for event in stream]
    types = [e["type"] for e in events]
    assert types[-1] == "response.completed"
    assert stream.dropped_event_count > 0
    assert len(types) == 4
    if strategy == "drop-oldest":
        assert types[-2] == "response.message"  # the newest survived
    else:
        assert types[0] == "run.started"  # the oldest survived


async def test_block_back_pressures_the_run_until_the_consumer_reads() -> None:
    gate, reached = _gate_tool()
    model_api, provider = _adapter(
        ScriptedTurn(tool_calls=[ToolCallItem(id="g", name="gate", input={})]),
        ScriptedTurn(text="finished"),
    )
    async with await create_agent_sdk(modelApi=model_api, tools=[gate]) as sdk:
        stream = sdk.stream("go", maxBufferedEvents=2, overflow="block")
        async with asyncio.timeout(10):
            while stream.pending_producer_count == 0:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        assert stream.buffered_event_count == 1
        assert not reached.is_set() and len(provider.calls) <= 1
        events = [event async for event in stream]
    assert events[-1]["type"] == "response.completed"
    assert stream.dropped_event_count == 0
    assert reached.is_set()


async def test_awaiting_the_result_without_iterating_never_overflows() -> None:
    gate, _ = _gate_tool()
    calls = [ToolCallItem(id=f"g{i}", name="gate", input={}) for i in range(5)]
    model_api, _ = _adapter(
        *(turn for _ in range(2) for turn in (ScriptedTurn(tool_calls=calls), "finished"))
    )
    async with await create_agent_sdk(modelApi=model_api, tools=[gate]) as sdk:
        for overflow in cast(list[OverflowStrategy], ["throw", "block"]):
            stream = sdk.stream("go", maxBufferedEvents=2, overflow=overflow)
            result = await asyncio.wait_for(stream.result, 10)
            assert result.text == "finished"


async def test_stopping_early_cancels_the_run() -> None:
    model_api, provider = _adapter(
        ScriptedTurn(text="a b c d", stream_deltas=["a ", "b ", "c ", "d"], event_delay=0.05),
        ScriptedTurn(text="never"),
    )
    async with await create_agent_sdk(modelApi=model_api) as sdk:
        stream = sdk.stream("talk", coalesceDeltas=False)
        async for event in stream:
            if event["type"] == "response.text.delta":
                break
        with pytest.raises(RunCancelledError) as caught:
            await asyncio.wait_for(stream.result, 10)
    assert CONSUMER_STOPPED in caught.value.message
    assert stream.is_cancelled
    assert len(provider.calls) == 1


async def test_leaving_the_loop_cancels_at_once_not_when_the_generator_is_collected() -> None:
    model_api, provider = _adapter(
        ScriptedTurn(text="a b c d", stream_deltas=["a ", "b ", "c ", "d"], event_delay=0.05),
        ScriptedTurn(text="never"),
    )
    async with await create_agent_sdk(modelApi=model_api) as sdk:
        stream = sdk.stream("talk", coalesceDeltas=False)
        async for _ in stream:
            break
        assert stream.is_cancelled  # no await in between: the break itself cancelled
        assert stream.isCancelled  # the 0.x name reads the same
        assert stream.cancel_reason == CONSUMER_STOPPED
        with pytest.raises(RunCancelledError):
            await asyncio.wait_for(stream.result, 10)
    assert len(provider.calls) == 1


async def test_leaving_the_loop_at_the_terminal_event_keeps_the_result(tmp_path: Path) -> None:
    model_api, _ = _adapter(ScriptedTurn(text="done", stream_deltas=["do", "ne"]))
    async with await create_agent_sdk(modelApi=model_api, sessionDirectory=tmp_path) as sdk:
        session = await sdk.create_session()
        stream = session.stream("talk")
        async for event in stream:
            if event["type"] == "response.completed":
                break
        result = await asyncio.wait_for(stream.result, 10)
        assert result.text == "done"
        assert not stream.is_cancelled
        stream.cancel("too late")  # the outcome is decided: a no-op
        assert not stream.is_cancelled
        runs = (await sdk.sessions.load(session.id))["runs"]
    assert [run["text"] for run in runs] == ["done"]  # the run was recorded after its terminal


async def test_cancel_with_a_reason_yields_an_error_then_raises() -> None:
    model_api, _ = _adapter(
        ScriptedTurn(text="slow text", stream_deltas=["slow ", "text"], event_delay=0.05)
    )
    async with await create_agent_sdk(modelApi=model_api) as sdk:
        stream = sdk.stream("talk")
        seen: list[dict[str, Any]] = []
        with pytest.raises(RunCancelledError, match="user pressed stop"):
            await _collect(stream, seen, cancel_at="run.started", reason="user pressed stop")
    assert seen[-1]["type"] == "error"
    assert seen[-1]["error"] == {"message": "user pressed stop", "code": "RUN_CANCELLED"}
    assert stream.cancel_reason == "user pressed stop"


async def test_an_external_signal_cancels_the_stream() -> None:
    controller = AbortController()
    model_api, _ = _adapter(ScriptedTurn(text="never", delay=30))
    async with await create_agent_sdk(modelApi=model_api) as sdk:
        stream = sdk.stream("wait", signal=controller.signal)
        async for event in stream:
            if event["type"] == "request.started":
                controller.abort("caller gave up")
                break
        with pytest.raises(RunCancelledError):
            await asyncio.wait_for(stream.result, 10)


async def test_a_failed_run_yields_error_then_raises_the_same_error() -> None:
    model_api, _ = _adapter(RunError("upstream broke", code="UPSTREAM_BROKEN"))
    async with await create_agent_sdk(modelApi=model_api) as sdk:
        stream = sdk.stream("hi")
        events: list[dict[str, Any]] = []
        with pytest.raises(RunError) as raised:
            await _collect(stream, events)
        with pytest.raises(RunError) as again:
            await stream.result
    assert raised.value is again.value
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["message"]
    assert "stack" not in events[-1]["error"]


async def test_one_consumer_only_and_buffer_options_checked() -> None:
    model_api, _ = _adapter(ScriptedTurn(text="x"))
    async with await create_agent_sdk(modelApi=model_api) as sdk:
        stream = sdk.stream("hi")
        first = stream.__aiter__()
        with pytest.raises(StreamConsumedError):
            stream.__aiter__()
        assert [e["type"] async for e in first][-1] == "response.completed"
        with pytest.raises(Exception, match="maxBufferedEvents"):
            sdk.stream("hi", maxBufferedEvents=1)
        with pytest.raises(Exception, match="overflow"):
            sdk.stream("hi", overflow="explode")  # type: ignore[arg-type]


async def test_secrets_in_events_are_redacted() -> None:
    @tool(effect="read")
    def creds() -> dict[str, str]:
        """Return credentials."""
        return {"api_key": "sk-live-SECRET-0123456789abcdef", "user": "ana"}

    model_api, _ = _adapter(
        ScriptedTurn(tool_calls=[ToolCallItem(id="c", name="creds", input={})]),
        ScriptedTurn(text="ok"),
    )
    async with await create_agent_sdk(modelApi=model_api, tools=[creds]) as sdk:
        stream = sdk.stream("hi")
        events = [event async for event in stream]
        result = await stream.result
    text = json.dumps(events)
    assert "sk-live-SECRET" not in text
    assert "ana" in text  # not everything is redacted
    assert "sk-live-SECRET" in result.tool_calls[0]["outputText"]  # the result is the caller's
