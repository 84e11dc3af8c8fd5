"""Middleware: time every model call and tool call, and inspect the chain.

Middleware wraps stages in a fixed order; handlers see read-only views and must call ``next()``
for wrap stages (the runtime enforces it).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from support import choose_models

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.providers.testing import ScriptedTurn
from actoviq.runtime import AgentRuntime, MiddlewareStage, ToolRegistry, define_middleware, tool

TIMINGS: list[tuple[str, float]] = []


async def time_model(ctx: Any, next: Any) -> Any:
    started = time.perf_counter()
    response = await next()
    TIMINGS.append(("model call", (time.perf_counter() - started) * 1000))
    return response


async def time_tool(ctx: Any, next: Any) -> Any:
    started = time.perf_counter()
    output = await next()
    TIMINGS.append((f"tool {ctx.tool_call.name}", (time.perf_counter() - started) * 1000))
    return output


def count_turns(ctx: Any, next: Any) -> Any:
    print(f"  [after turn: {ctx.run.usage.snapshot().requests} model call(s) so far]")
    return None


@tool(effect="read")
async def slow_square(n: int) -> int:
    """Square a number slowly.

    Args:
        n: the number.
    """
    await asyncio.sleep(0.01)
    return n * n


SCRIPT = [
    ScriptedTurn(tool_calls=[ToolCallItem(id="call_sq", name="slow_square", input={"n": 12})]),
    ScriptedTurn(text="12 squared is 144."),
]


async def main() -> None:
    models = choose_models(SCRIPT)
    print(f"provider: {models.label}")
    middleware = [
        define_middleware("model-timer", MiddlewareStage.WRAP_MODEL_CALL, time_model, priority=10),
        define_middleware("tool-timer", MiddlewareStage.WRAP_TOOL_CALL, time_tool, priority=10),
        define_middleware("turn-counter", MiddlewareStage.AFTER_TURN, count_turns),
    ]
    async with AgentRuntime(
        models=models.registry, tools=ToolRegistry([slow_square]), middleware=middleware
    ) as runtime:
        print("middleware chain:")
        for line in runtime.inspect_middleware().splitlines():
            print(f"  {line}")
        agent: AgentSpec[Any, Any] = AgentSpec(
            id="math",
            name="Math",
            instructions="Use slow_square to square numbers. Answer in one sentence.",
            model=models.model,
            tools=("slow_square",),
        )
        result = await runtime.run(agent, "What is 12 squared?")
        print(f"result: {result.status}: {result.output}")
    for label, elapsed in TIMINGS:
        print(f"  {label}: {elapsed:.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
