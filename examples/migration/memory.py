"""Memory and sessions, kept apart: a memory service the agent writes to, a session it talks in.

0.x kept memory inside the client and mixed it into sessions. In 1.0 the session (the
conversation, `AgentRuntime(sessions=...)`) and the memory (facts that outlive a conversation,
the runtime service ``"memory"``) are two stores with their own revisions and their own
tenants; an agent uses memory only when you opt in, here with a ``remember`` tool and a
``prepareInput`` middleware that hands the stored facts to the model. Both stores live in one
SQLite file. Offline (no API key, or ACTOVIQ_OFFLINE=1) a scripted model plays the agent; with
OPENAI_API_KEY or ANTHROPIC_API_KEY the real model decides when to remember.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from actoviq.core import AgentSpec, CanonicalItem, TextItem, ToolCallItem
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn, TurnLike
from actoviq.runtime import (
    AgentRuntime,
    MemoryStore,
    MiddlewareRegistry,
    MiddlewareStage,
    RuntimeServices,
    ServiceDefinition,
    ToolExecutionContext,
    define_middleware,
    tool,
)
from actoviq.storage.sqlite import SqliteStorage

TENANT = "default"
NAMESPACE = "user-facts"


def choose_models(script: Sequence[TurnLike]) -> tuple[ModelRegistry, str, str]:
    """OpenAI with OPENAI_API_KEY, else Anthropic with ANTHROPIC_API_KEY, else the script."""
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


@tool(effect="idempotent-write")
async def remember(fact: str, ctx: ToolExecutionContext) -> str:
    """Store a fact about the user for later conversations.

    Args:
        fact: one short fact.
    """
    memory: MemoryStore = ctx.context["memory"]
    await memory.put(
        tenant_id=TENANT,
        memory_id=str(uuid.uuid5(uuid.NAMESPACE_URL, fact)),
        namespace=NAMESPACE,
        expected_revision=None,
        value=fact,
    )
    return "remembered"


async def recall_facts(ctx: Any, next: Any) -> Any:
    """prepareInput: put the stored facts in front of the input (the opt-in memory middleware)."""
    memory: MemoryStore = await ctx.services.resolve("memory")
    facts = [
        str(r.value) for r in await memory.list_memories(tenant_id=TENANT, namespace=NAMESPACE)
    ]
    if not facts:
        return await next()
    note = TextItem(role="system", text="Known facts about the user: " + "; ".join(facts))
    items: list[CanonicalItem] = [note, *ctx.input]
    return items


def answer_from_memory(request: ModelRequest) -> ScriptedTurn:
    """The scripted model knows the preference only if the middleware passed it on."""
    known = any(isinstance(i, TextItem) and "prefers tea" in i.text for i in request.input)
    return ScriptedTurn(text="Tea, as you like it." if known else "Coffee?")


SCRIPT: list[TurnLike] = [
    ScriptedTurn(
        tool_calls=[ToolCallItem(id="m1", name="remember", input={"fact": "prefers tea"})]
    ),
    ScriptedTurn(text="Noted: tea it is."),
    answer_from_memory,
]


async def main() -> None:
    registry, model, label = choose_models(SCRIPT)
    print(f"provider: {label}")
    with tempfile.TemporaryDirectory() as folder:
        async with await SqliteStorage.open(Path(folder) / "agent.db") as storage:
            services = RuntimeServices(
                {"memory": ServiceDefinition(factory=lambda: storage.memory)}
            )
            agent: AgentSpec[Any, Any] = AgentSpec(
                id="barista",
                name="Barista",
                instructions="Remember the user's preferences with the remember tool.",
                model=model,
                tools=("remember",),
                middleware=("recall-facts",),
            )
            recall = define_middleware("recall-facts", MiddlewareStage.PREPARE_INPUT, recall_facts)
            # Registered by name; only agents that list "recall-facts" run it (opt-in).
            async with AgentRuntime(
                models=registry,
                tools=[remember],
                middleware_registry=MiddlewareRegistry({"recall-facts": recall}),
                services=services,
                sessions=storage.runtime_sessions(),
            ) as runtime:
                context = {"memory": storage.memory}
                first = await runtime.run(
                    agent, "I prefer tea.", session_id="monday", context=context
                )
                print(f"monday: {first.output}")
                # A new conversation: the session is empty, the memory is not.
                second = await runtime.run(
                    agent, "What should I drink?", session_id="tuesday", context=context
                )
                print(f"tuesday: {second.output}")
            records = await storage.memory.list_memories(tenant_id=TENANT)
            print(f"memory entries: {[(r.namespace, r.value, r.revision) for r in records]}")


if __name__ == "__main__":
    asyncio.run(main())
