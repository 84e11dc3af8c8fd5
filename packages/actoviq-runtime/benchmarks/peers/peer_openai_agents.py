# type: ignore
"""W1-W6 on openai-agents with a canned ``Model`` subclass (no network, tracing disabled).

W6 keeps the conversation in the SDK's own ``SQLiteSession`` on a file (``Runner.run(...,
session=)``); its first load is ``SQLiteSession.get_items()`` on a session opened again.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from typing import Any

import peer_harness as h
from agents import Agent, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
)

set_tracing_disabled(True)


@function_tool
def weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


def _message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def _call(call_id: str, city: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=call_id,
        call_id=call_id,
        type="function_call",
        name="weather",
        arguments=json.dumps({"city": city}),
    )


def _kind(item: Any) -> Any:
    return item.get("type") if isinstance(item, dict) else getattr(item, "type", None)


class Canned(Model):
    """Answers by request shape: tool calls until four tool results exist, then text."""

    def __init__(self, tools: bool, deltas: int = 0, yields: bool = False) -> None:
        self.tools = tools
        self.deltas = deltas
        self.yields = yields

    def _output(self, items: Any) -> list[Any]:
        if not self.tools:
            return [_message("hello")]
        rounds = 0
        if not isinstance(items, str):
            rounds = sum(1 for item in items if _kind(item) == "function_call_output")
        if rounds < 4:
            return [_call(f"c{rounds + 1}", "Paris"), _call(f"c{rounds + 2}", "Rome")]
        return [_message("done")]

    async def get_response(
        self,
        system_instructions,
        input,
        model_settings,
        tools,
        output_schema,
        handoffs,
        tracing,
        *args,
        **kwargs,
    ):
        return ModelResponse(output=self._output(input), usage=Usage(), response_id=None)

    async def stream_response(
        self,
        system_instructions,
        input,
        model_settings,
        tools,
        output_schema,
        handoffs,
        tracing,
        *args,
        **kwargs,
    ):
        for index in range(self.deltas):
            yield ResponseTextDeltaEvent.model_construct(
                type="response.output_text.delta",
                item_id="msg",
                output_index=0,
                content_index=0,
                delta="x",
                logprobs=[],
                sequence_number=index,
            )
            if self.yields:
                await asyncio.sleep(0)
        response = Response.model_construct(
            id="resp",
            created_at=0,
            model="canned",
            object="response",
            output=[_message("x" * self.deltas)],
            tool_choice="none",
            tools=[],
            top_p=None,
            parallel_tool_calls=False,
            usage=None,
        )
        yield ResponseCompletedEvent.model_construct(
            type="response.completed", response=response, sequence_number=self.deltas
        )


def _agent(tools: bool, deltas: int = 0, yields: bool = False) -> Agent:
    return Agent(
        name="Bench",
        instructions="Be brief.",
        model=Canned(tools, deltas, yields),
        tools=[weather] if tools else [],
    )


async def w1(n: int) -> dict[str, float]:
    agent = _agent(False)

    async def run() -> Any:
        return (await Runner.run(agent, "hi")).final_output

    return await h.sequential(run, n, lambda out: out == "hello")


def _w2_run() -> Any:
    agent = _agent(True)

    async def run() -> Any:
        return (await Runner.run(agent, "weather?")).final_output

    return run


async def w2(n: int) -> dict[str, float]:
    return await h.sequential(_w2_run(), n, lambda out: out == "done")


async def w3(n: int) -> dict[str, float]:
    return await h.concurrent(_w2_run(), n, lambda out: out == "done")


def _stream_workload(yields: bool) -> Any:
    async def workload(n: int) -> dict[str, float]:
        async def stream(count: int) -> int:
            result = Runner.run_streamed(_agent(False, count, yields), "stream")
            seen = 0
            async for event in result.stream_events():
                if event.type == "raw_response_event" and event.data.type == (
                    "response.output_text.delta"
                ):
                    seen += 1
            return seen

        return await h.streamed(stream, n)

    return workload


async def w6(n: int) -> dict[str, float]:
    agent = _agent(False)
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "w6.db")
        warm = SQLiteSession("warm", db_path=db)
        assert (await Runner.run(agent, "warm-up", session=warm)).final_output == "hello"
        session = SQLiteSession("s", db_path=db)

        async def turn(index: int) -> Any:
            return (await Runner.run(agent, f"message {index}", session=session)).final_output

        result = await h.session_turns(turn, n, lambda out: out == "hello")
        session.close()
        warm.close()
        reopened = SQLiteSession("s", db_path=db)

        async def load() -> int:
            return len(await reopened.get_items())

        result.update(await h.first_load(load, 2 * n))
        reopened.close()
    return result


if __name__ == "__main__":
    h.main(
        {
            "W1": w1,
            "W2": w2,
            "W3": w3,
            "W4": _stream_workload(False),
            "W4y": _stream_workload(True),
            "W6": w6,
        }
    )
