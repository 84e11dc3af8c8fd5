# type: ignore
"""W1-W6 on langgraph's prebuilt ReAct agent with a canned tool-calling chat model (no network).

W6 persists the conversation with the graph's own checkpointer, ``AsyncSqliteSaver`` on a file
(``ainvoke(..., {"configurable": {"thread_id": ...}})``), in two shapes reported separately:
``W6`` the default ``messages`` state (every checkpoint holds the whole list) and ``W6delta`` the
``messages`` channel as a ``DeltaChannel`` (checkpoints hold the writes, with a snapshot every
100 updates). The first load is ``graph.aget_state`` on a checkpointer opened again.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Annotated, Any, NotRequired

import peer_harness as h
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph.message import _messages_delta_reducer
from langgraph.managed import RemainingSteps
from langgraph.prebuilt import create_react_agent
from typing_extensions import TypedDict


@tool
def weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


class Canned(BaseChatModel):
    """Answers by request shape: tool calls until four tool results exist, then text."""

    tools: bool = False
    deltas: int = 0
    yields: bool = False

    @property
    def _llm_type(self) -> str:
        return "canned"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _answer(self, messages: list[Any]) -> AIMessage:
        if not self.tools:
            return AIMessage(content="hello")
        rounds = sum(1 for message in messages if isinstance(message, ToolMessage))
        if rounds < 4:
            return AIMessage(
                content="",
                tool_calls=[
                    {"name": "weather", "args": {"city": "Paris"}, "id": f"c{rounds + 1}"},
                    {"name": "weather", "args": {"city": "Rome"}, "id": f"c{rounds + 2}"},
                ],
            )
        return AIMessage(content="done")

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        for _ in range(self.deltas):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content="x"))
            if run_manager is not None:
                await run_manager.on_llm_new_token("x", chunk=chunk)
            yield chunk
            if self.yields:
                await asyncio.sleep(0)


class DeltaState(TypedDict):
    """The prebuilt agent's state with ``messages`` stored as deltas."""

    messages: Annotated[list, DeltaChannel(_messages_delta_reducer)]
    remaining_steps: NotRequired[RemainingSteps]


def _graph(
    tools: bool, deltas: int = 0, yields: bool = False, checkpointer: Any = None, delta=False
) -> Any:
    model = Canned(tools=tools, deltas=deltas, yields=yields)
    return create_react_agent(
        model,
        [weather] if tools else [],
        prompt="Be brief.",
        checkpointer=checkpointer,
        state_schema=DeltaState if delta else None,
    )


def _last(state: Any) -> Any:
    return state["messages"][-1].content


async def w1(n: int) -> dict[str, float]:
    graph = _graph(False)

    async def run() -> Any:
        return _last(await graph.ainvoke({"messages": [("user", "hi")]}))

    return await h.sequential(run, n, lambda out: out == "hello")


def _w2_run() -> Any:
    graph = _graph(True)

    async def run() -> Any:
        return _last(await graph.ainvoke({"messages": [("user", "weather?")]}))

    return run


async def w2(n: int) -> dict[str, float]:
    return await h.sequential(_w2_run(), n, lambda out: out == "done")


async def w3(n: int) -> dict[str, float]:
    return await h.concurrent(_w2_run(), n, lambda out: out == "done")


def _stream_workload(yields: bool) -> Any:
    async def workload(n: int) -> dict[str, float]:
        async def stream(count: int) -> int:
            graph = _graph(False, count, yields)
            seen = 0
            async for chunk, _meta in graph.astream(
                {"messages": [("user", "stream")]}, stream_mode="messages"
            ):
                if isinstance(chunk, AIMessageChunk) and chunk.content:
                    seen += 1
            return seen

        return await h.streamed(stream, n)

    return workload


def _session_workload(delta: bool) -> Any:
    async def workload(n: int) -> dict[str, float]:
        with tempfile.TemporaryDirectory() as folder:
            db = os.path.join(folder, "w6.db")
            async with AsyncSqliteSaver.from_conn_string(db) as saver:
                graph = _graph(False, checkpointer=saver, delta=delta)

                async def turn_on(thread: str, text: str) -> Any:
                    config = {"configurable": {"thread_id": thread}}
                    return _last(await graph.ainvoke({"messages": [("user", text)]}, config))

                assert await turn_on("warm", "warm-up") == "hello"

                async def turn(index: int) -> Any:
                    return await turn_on("s", f"message {index}")

                result = await h.session_turns(turn, n, lambda out: out == "hello")
            async with AsyncSqliteSaver.from_conn_string(db) as saver:
                graph = _graph(False, checkpointer=saver, delta=delta)

                async def load() -> int:
                    state = await graph.aget_state({"configurable": {"thread_id": "s"}})
                    return len(state.values["messages"])

                result.update(await h.first_load(load, 2 * n))
        return result

    return workload


if __name__ == "__main__":
    h.main(
        {
            "W1": w1,
            "W2": w2,
            "W3": w3,
            "W4": _stream_workload(False),
            "W4y": _stream_workload(True),
            "W6": _session_workload(False),
            "W6delta": _session_workload(True),
        }
    )
