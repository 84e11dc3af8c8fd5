# type: ignore
"""W1-W4 on pydantic-ai with its own ``FunctionModel`` (answers by request shape, no network)."""

from __future__ import annotations

from typing import Any

import peer_harness as h
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel


def _text(messages: list[Any], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(content="hello")])


def _tools(messages: list[Any], info: AgentInfo) -> ModelResponse:
    rounds = sum(
        1
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    )
    if rounds < 4:
        return ModelResponse(
            parts=[
                ToolCallPart(
                    tool_name="weather", args={"city": "Paris"}, tool_call_id=f"c{rounds + 1}"
                ),
                ToolCallPart(
                    tool_name="weather", args={"city": "Rome"}, tool_call_id=f"c{rounds + 2}"
                ),
            ]
        )
    return ModelResponse(parts=[TextPart(content="done")])


def _w2_run() -> Any:
    agent = Agent(FunctionModel(_tools), instructions="Be brief.")

    @agent.tool_plain
    def weather(city: str) -> str:
        """Weather for a city."""
        return f"sunny in {city}"

    async def run() -> Any:
        return (await agent.run("weather?")).output

    return run


async def w1(n: int) -> dict[str, float]:
    agent = Agent(FunctionModel(_text), instructions="Be brief.")

    async def run() -> Any:
        return (await agent.run("hi")).output

    return await h.sequential(run, n, lambda out: out == "hello")


async def w2(n: int) -> dict[str, float]:
    return await h.sequential(_w2_run(), n, lambda out: out == "done")


async def w3(n: int) -> dict[str, float]:
    return await h.concurrent(_w2_run(), n, lambda out: out == "done")


async def w4(n: int) -> dict[str, float]:
    async def deltas(messages: list[Any], info: AgentInfo) -> Any:
        for _ in range(n):
            yield "x"

    agent = Agent(FunctionModel(stream_function=deltas), instructions="Be brief.")

    async def stream(count: int) -> int:
        seen = 0
        async with agent.run_stream_events("stream") as events:
            async for event in events:
                if (
                    isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta)
                ) or (isinstance(event, PartStartEvent) and isinstance(event.part, TextPart)):
                    seen += 1
        return seen

    return await h.streamed(stream, n)


if __name__ == "__main__":
    h.main({"W1": w1, "W2": w2, "W3": w3, "W4": w4})
