# type: ignore
"""W1-W4 on langgraph's prebuilt ReAct agent with a canned tool-calling chat model (no network)."""

from __future__ import annotations

from typing import Any

import peer_harness as h
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent


@tool
def weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


class Canned(BaseChatModel):
    """Answers by request shape: tool calls until four tool results exist, then text."""

    tools: bool = False
    deltas: int = 0

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


def _graph(tools: bool, deltas: int = 0) -> Any:
    model = Canned(tools=tools, deltas=deltas)
    return create_react_agent(model, [weather] if tools else [], prompt="Be brief.")


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


async def w4(n: int) -> dict[str, float]:
    async def stream(count: int) -> int:
        graph = _graph(False, count)
        seen = 0
        async for chunk, _meta in graph.astream(
            {"messages": [("user", "stream")]}, stream_mode="messages"
        ):
            if isinstance(chunk, AIMessageChunk) and chunk.content:
                seen += 1
        return seen

    return await h.streamed(stream, n)


if __name__ == "__main__":
    h.main({"W1": w1, "W2": w2, "W3": w3, "W4": w4})
