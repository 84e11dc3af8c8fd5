"""Nested children on a capacity of 1 (spec 04 §8.2-14), roots that clean up after themselves."""

from __future__ import annotations

import asyncio

from orchestration_testkit import agent, call, runtime_for, script

from actoviq.orchestration import ChildRunner, ConcurrencyController, agent_as_tool
from actoviq.providers.testing import ScriptedProvider


async def test_agent_tools_nested_five_deep_on_a_capacity_of_one_finish() -> None:
    # level-1 calls level-2 as a tool, ... level-5 answers: every level holds or borrows the
    # one permit while it waits for the level below.
    providers: list[ScriptedProvider] = []
    for depth in range(1, 5):
        providers.append(script(f"level{depth}", [call(f"level{depth + 1}", input="go"), "up"]))
    providers.append(script("level5", ["bottom"]))
    async with runtime_for(*providers) as runtime:
        runner = ChildRunner(runtime)
        for depth in range(2, 6):
            tools = (f"level{depth + 1}",) if depth < 5 else ()
            runtime.tools.register(
                agent_as_tool(agent(f"level{depth}", tools=tools), runner).as_runtime_tool()
            )
        controller = ConcurrencyController(1)
        root = runner.create_root(concurrency=controller)
        async with asyncio.timeout(10):
            outcome = await runner.run(root, agent("level1", tools=("level2",)), "start")
    assert outcome.status == "completed" and outcome.output == "up"
    assert [len(p.calls) for p in providers] == [2, 2, 2, 2, 1]
    assert (controller.active, controller.loans, controller.peak) == (0, 0, 1)
    assert (await root.budget.snapshot()).child_runs_started == 5
    assert len(runner.tree) == 1


async def test_leaving_an_opened_root_cancels_what_still_runs_below_it() -> None:
    started = asyncio.Event()

    def slow(request: object) -> object:
        started.set()
        from actoviq.providers.testing import ScriptedTurn

        return ScriptedTurn(text="late", delay=30)

    async with runtime_for(script("worker", [slow])) as runtime:
        runner = ChildRunner(runtime)
        async with asyncio.TaskGroup() as group:
            async with runner.open_root("desk") as root:
                task = group.create_task(runner.run(root, agent("worker"), "go"))
                async with asyncio.timeout(5):
                    await started.wait()
            async with asyncio.timeout(5):
                outcome = await task
        assert outcome.status == "cancelled"
        assert runtime.active_runs == 0
        assert len(runner.tree) == 0


async def test_run_scope_does_not_leave_an_adopted_scope_behind() -> None:
    async with runtime_for(script("worker", ["a", "b"])) as runtime:
        runner = ChildRunner(runtime)
        other = ChildRunner(runtime)
        scope = other.create_root()
        await runner.run_scope(scope, agent("worker"), "one")
        assert len(runner.tree) == 0  # adopted for the run, pruned after it
        await runner.run_scope(scope, agent("worker"), "two")
        assert len(runner.tree) == 0
