"""Sessions for handoffs: ``session_history="provided"`` (no history twice, spec 04 §8.2-20) and
a run that would wait for its own caller's session fails typed instead of deadlocking (§1.12)."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest
from runtime_testkit import json_tool, make_agent, scripted_runtime

from actoviq.core import CanonicalItem, RunError, RunResult, TextItem, ToolCallItem
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InMemorySessionStore,
    RuntimeServices,
    StoreRuntimeSessionAdapter,
    ToolExecutionContext,
)


def _services(store: InMemorySessionStore) -> RuntimeServices:
    return RuntimeServices({"sessions": lambda: StoreRuntimeSessionAdapter(store)})


def _texts(items: tuple[CanonicalItem, ...] | list[CanonicalItem]) -> list[str]:
    return [f"{item.role}:{item.text}" for item in items if isinstance(item, TextItem)]


async def _stored(store: InMemorySessionStore) -> list[str]:
    loaded = await StoreRuntimeSessionAdapter(store).load(tenant_id="default", session_id="s1")
    return _texts(loaded.items)


async def test_provided_history_is_seen_once_and_only_new_items_are_appended() -> None:
    store = InMemorySessionStore()
    provider = ScriptedProvider(["first answer", "second answer"])
    runtime = scripted_runtime(provider, services=_services(store))
    async with runtime:
        await runtime.run(make_agent(), "hello", session_id="s1")
        history: list[CanonicalItem] = [
            TextItem(role="user", text="hello"),
            TextItem(role="assistant", text="first answer"),
            TextItem(role="user", text="note: you now own this conversation"),
        ]
        second = await runtime.run(
            make_agent(id="target", name="Target", instructions=""),
            history,
            session_id="s1",
            session_history="provided",
        )
    assert second.output == "second answer"
    assert _texts(provider.calls[1].request.input) == [
        "user:hello",
        "assistant:first answer",
        "user:note: you now own this conversation",
    ]
    assert await _stored(store) == [
        "user:hello",
        "assistant:first answer",
        "assistant:second answer",
    ]


async def test_loading_the_history_as_well_would_show_it_twice() -> None:
    # The default ("load") prepends the stored history: the reference behaviour §8.2-20 fixes.
    store = InMemorySessionStore()
    provider = ScriptedProvider(["first answer", "second answer"])
    async with scripted_runtime(provider, services=_services(store)) as runtime:
        await runtime.run(make_agent(), "hello", session_id="s1")
        await runtime.run(
            make_agent(id="target", name="Target", instructions=""),
            [TextItem(role="user", text="hello")],
            session_id="s1",
        )
    assert _texts(provider.calls[1].request.input).count("user:hello") == 2


async def test_an_unknown_session_history_mode_is_refused() -> None:
    async with scripted_runtime(ScriptedProvider(["x"])) as runtime:
        with pytest.raises(RunError) as caught:
            await runtime.run(make_agent(), "hi", session_history="skip")  # type: ignore[typeddict-item]
    assert caught.value.code == "RUN_OPTION_INVALID"


async def test_a_run_inside_a_run_on_the_same_session_fails_typed_instead_of_waiting() -> None:
    store = InMemorySessionStore()
    errors: list[RunError] = []
    later: list[contextvars.Context] = []

    async def nested(ctx: ToolExecutionContext, _input: Any) -> str:
        later.append(contextvars.copy_context())
        try:
            await runtime.run(make_agent(id="inner", name="Inner"), "inner", session_id="s1")
        except RunError as error:
            errors.append(error)
            return "refused"
        return "ran"

    call = ToolCallItem(id="c1", name="nest", input={})
    provider = ScriptedProvider([ScriptedTurn(tool_calls=[call]), "outer done", "inner done"])
    runtime: AgentRuntime = scripted_runtime(
        provider, services=_services(store), tools=[json_tool("nest", nested)]
    )
    async with runtime:
        async with asyncio.timeout(10):
            result = await runtime.run(
                make_agent(tools=("nest",)), "go", session_id="s1", run_id="outer"
            )
        assert result.output == "outer done"
        assert errors and errors[0].code == "SESSION_REENTRANT"
        assert errors[0].details == {"sessionId": "s1", "holderRunId": "outer"}
        # The same captured context, once the holder has finished, may use the session.
        task: asyncio.Task[RunResult[Any]] = asyncio.get_running_loop().create_task(
            runtime.run(make_agent(id="inner", name="Inner"), "inner", session_id="s1"),
            context=later[0],
        )
        async with asyncio.timeout(10):
            assert (await task).output == "inner done"
