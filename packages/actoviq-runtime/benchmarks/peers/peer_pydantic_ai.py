# type: ignore
"""W1-W6 on pydantic-ai with its own ``FunctionModel`` (answers by request shape, no network).

pydantic-ai has no session store: W6 persists the conversation the way its documentation's chat
app does, one SQLite row per run holding ``result.new_messages_json()``, and every run loads the
history with ``ModelMessagesTypeAdapter.validate_json`` row by row and passes it as
``message_history``. The first load is that read on a connection opened again.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import tempfile
from typing import Any

import peer_harness as h
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
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


def _stream_workload(yields: bool) -> Any:
    async def workload(n: int) -> dict[str, float]:
        async def deltas(messages: list[Any], info: AgentInfo) -> Any:
            for _ in range(n):
                yield "x"
                if yields:
                    await asyncio.sleep(0)

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

    return workload


class _History:
    """The chat app's message table: one row of ``new_messages_json()`` per run."""

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(path)
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS messages "
            "(id INTEGER PRIMARY KEY, session TEXT NOT NULL, message_list TEXT NOT NULL)"
        )
        self.conn.commit()

    def load(self, session: str) -> list[Any]:
        rows = self.conn.execute(
            "SELECT message_list FROM messages WHERE session = ? ORDER BY id", (session,)
        ).fetchall()
        messages: list[Any] = []
        for (row,) in rows:
            messages.extend(ModelMessagesTypeAdapter.validate_json(row))
        return messages

    def add(self, session: str, messages_json: bytes) -> None:
        self.conn.execute(
            "INSERT INTO messages (session, message_list) VALUES (?, ?)", (session, messages_json)
        )
        self.conn.commit()


async def w6(n: int) -> dict[str, float]:
    agent = Agent(FunctionModel(_text), instructions="Be brief.")
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "w6.db")
        history = _History(db)

        async def turn_on(session: str, text: str) -> Any:
            result = await agent.run(text, message_history=history.load(session))
            history.add(session, result.new_messages_json())
            return result.output

        assert await turn_on("warm", "warm-up") == "hello"

        async def turn(index: int) -> Any:
            return await turn_on("s", f"message {index}")

        result = await h.session_turns(turn, n, lambda out: out == "hello")
        history.conn.close()
        reopened = _History(db)

        async def load() -> int:
            # a request (the user prompt) and a response per run: count the parts like items
            return sum(len(message.parts) for message in reopened.load("s"))

        result.update(await h.first_load(load, 2 * n))
        reopened.conn.close()
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
