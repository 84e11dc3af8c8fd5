"""Middleware: time every model call and tool call, and inspect the chain.

Middleware wraps stages in a fixed order; handlers see read-only views and must call ``next()``
for wrap stages (the runtime enforces it).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import Any

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn, TurnLike
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


def choose_models(script: Sequence[TurnLike]) -> tuple[ModelRegistry, str, str]:
    """OpenAI with OPENAI_API_KEY, else Anthropic with ANTHROPIC_API_KEY, else the script.

    ``ACTOVIQ_OFFLINE=1`` forces the scripted provider (what ``make test`` runs).
    """
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        name = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        registry = ModelRegistry([OpenAIResponsesProvider()])
        return registry, f"openai-responses:{name}", f"OpenAI ({name})"
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        name = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        registry = ModelRegistry([AnthropicProvider()])
        return registry, f"anthropic:{name}", f"Anthropic ({name})"
    registry = ModelRegistry([ScriptedProvider(script)])
    return registry, "scripted:demo-model", "scripted provider (offline)"


async def main() -> None:
    registry, model, label = choose_models(SCRIPT)
    print(f"provider: {label}")
    # --8<-- [start:middleware]
    middleware = [
        define_middleware("model-timer", MiddlewareStage.WRAP_MODEL_CALL, time_model, priority=10),
        define_middleware("tool-timer", MiddlewareStage.WRAP_TOOL_CALL, time_tool, priority=10),
        define_middleware("turn-counter", MiddlewareStage.AFTER_TURN, count_turns),
    ]
    # --8<-- [end:middleware]
    async with AgentRuntime(
        models=registry, tools=ToolRegistry([slow_square]), middleware=middleware
    ) as runtime:
        print("middleware chain:")
        for line in runtime.inspect_middleware().splitlines():
            print(f"  {line}")
        agent: AgentSpec[Any, Any] = AgentSpec(
            id="math",
            name="Math",
            instructions="Use slow_square to square numbers. Answer in one sentence.",
            model=model,
            tools=("slow_square",),
        )
        result = await runtime.run(agent, "What is 12 squared?")
        print(f"result: {result.status}: {result.output}")
    for label, elapsed in TIMINGS:
        print(f"  {label}: {elapsed:.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
