"""A finished run leaves no reference cycle: its execution is freed the moment nobody holds it.

Each finished run used to leave ~29 objects in reference cycles (its abort listener on its own
signal, its timer's deadline callback and its persistence's hook-timeout callback all pointed
back at the execution), so every run waited for the cyclic garbage collector and made it run
more often. These tests keep the collector off while runs end and check, through a weak
reference, that each run's execution is gone anyway (each fails if one cycle comes back).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from runtime_testkit import make_agent, make_tool, scripted_runtime

from actoviq.core import ToolCallItem
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import execution as execution_module


@pytest.fixture
def executions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[weakref.ref[Any]]]:
    """Weak references to every execution made while the test runs, with the collector off."""
    made: list[weakref.ref[Any]] = []
    cls = execution_module.RunExecution
    original = cls.__init__

    def recording(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(weakref.ref(self))

    monkeypatch.setattr(cls, "__init__", recording)
    gc.collect()
    gc.disable()
    try:
        yield made
    finally:
        gc.enable()


def _alive(made: list[weakref.ref[Any]]) -> int:
    return sum(1 for ref in made if ref() is not None)


async def test_completed_runs_are_freed_without_the_collector(
    executions: list[weakref.ref[Any]],
) -> None:
    provider = ScriptedProvider([ScriptedTurn(text="ok")], repeat_last=True)
    async with scripted_runtime(provider) as runtime:
        for index in range(3):
            result = await runtime.run(make_agent(), f"q{index}")
            assert result.status == "completed"
        async with runtime.stream(make_agent(), "streamed") as handle:
            assert (await handle.result()).status == "completed"
        del handle
        assert len(executions) == 4
        assert _alive(executions) == 0


async def test_tool_runs_are_freed_without_the_collector(
    executions: list[weakref.ref[Any]],
) -> None:
    call = ToolCallItem(id="c1", name="double", input={"value": 2})
    provider = ScriptedProvider([ScriptedTurn(output=[call]), ScriptedTurn(text="done")])

    async def double(ctx: object, args: Any) -> object:
        return args["value"] * 2

    # An async tool runs on the loop: a worker thread would hold its last job's references until
    # it goes back to its queue, which is not a cycle but would make this check racy.
    tool = make_tool("double", double, effect="read")
    async with scripted_runtime(provider, tools=[tool]) as runtime:
        result = await runtime.run(make_agent(tools=("double",)), "double 2")
        assert result.status == "completed"
        assert len(executions) == 1
        del result
        assert _alive(executions) == 0
