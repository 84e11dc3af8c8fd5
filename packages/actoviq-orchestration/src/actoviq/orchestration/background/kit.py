"""The background conformance kit's world: scripted agents, gates, a manual clock, workers.

See :mod:`actoviq.orchestration.background.conformance` for how an engine runs the checks.
:func:`scripted_kit_provider` is the model a harness gives each kit agent: the one module of the
package that imports a provider (``actoviq.providers.testing``, test support; docs/decisions.md).

"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import Any, Protocol

import attrs

from actoviq.core import (
    AgentSpec,
    CanonicalItem,
    ProviderResponseError,
    TextItem,
    ToolCallItem,
    ToolResultItem,
)
from actoviq.orchestration.background.engine import AgentResolver, Clock
from actoviq.orchestration.background.manager import BackgroundChildManager
from actoviq.orchestration.child_runner import ChildRunner
from actoviq.orchestration.scope import OrchestrationScope
from actoviq.providers import ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    RuntimeTool,
    ToolBehavior,
    ToolDescriptor,
    ToolExecutionContext,
    json_schema_input,
)

__all__ = [
    "CHECKS",
    "KIT_AGENT_IDS",
    "BackgroundCheck",
    "BackgroundHarness",
    "Kit",
    "KitAgent",
    "KitTurn",
    "KitWorker",
    "ManualClock",
    "register_check",
    "scripted_kit_provider",
]

KIT_AGENT_IDS = ("kit-echo", "kit-fail", "kit-wait", "kit-write", "kit-pay")
"""The agents every kit runtime serves (model id ``<agent id>:model``)."""


@attrs.frozen(kw_only=True)
class KitTurn:
    """One model answer of a kit agent: text, tool calls, or an error to raise."""

    text: str | None = None
    tool_calls: tuple[ToolCallItem, ...] = ()
    error: str | None = None
    total_tokens: int = 1


@attrs.frozen(kw_only=True)
class KitAgent:
    """A kit agent: its spec and how its model answers a request (given the request input)."""

    spec: AgentSpec[Any, Any]
    respond: Callable[[Sequence[CanonicalItem]], KitTurn]


class ManualClock:
    """An epoch-ms clock the checks move by hand (leases compare against it)."""

    def __init__(self, start_ms: int = 1_800_000_000_000) -> None:
        self.now_ms = start_ms

    def __call__(self) -> int:
        """The current time (epoch ms)."""
        return self.now_ms

    def advance(self, ms: int) -> None:
        """Move time forward by ``ms``."""
        self.now_ms += ms


def scripted_kit_provider(agent: KitAgent) -> ScriptedProvider:
    """The scripted model of a kit agent: each request answered by ``agent.respond``.

    The provider's id is the agent's id (its model is ``<agent id>:model``); a turn's
    ``total_tokens`` is reported as input tokens, and a turn's ``error`` is raised as a
    ``ProviderResponseError``. A harness's ``runtime()`` serves one per agent::

        AgentRuntime(models=ModelRegistry([scripted_kit_provider(a) for a in agents]), ...)
    """

    def answer(request: ModelRequest) -> ScriptedTurn:
        turn = agent.respond(list[CanonicalItem](request.input))
        if turn.error is not None:
            return ScriptedTurn(error=ProviderResponseError(turn.error, provider_id=agent.spec.id))
        tokens = turn.total_tokens
        usage = {"inputTokens": tokens, "outputTokens": 0, "totalTokens": tokens}
        return ScriptedTurn(text=turn.text, tool_calls=list(turn.tool_calls), usage=usage)

    return ScriptedProvider([answer], id=agent.spec.id, repeat_last=True)


class BackgroundHarness(Protocol):
    """What an engine's tests provide to run the kit."""

    def runtime(self, agents: Sequence[KitAgent], tools: Sequence[RuntimeTool]) -> AgentRuntime:
        """A runtime serving ``agents`` (each on its own model ``<id>:model``) and ``tools``."""
        ...

    def backend(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """The durable state one check shares between its workers (a store, a database...)."""
        ...

    def manager(
        self,
        backend: Any,
        runner: ChildRunner,
        *,
        owner_id: str,
        lease_ms: int,
        clock: Clock | None,
        resolve_agent: AgentResolver | None,
    ) -> BackgroundChildManager:
        """A manager of the engine under test on ``backend`` for one worker."""
        ...


def _last_user_text(items: Sequence[CanonicalItem]) -> str:
    texts = [i.text for i in items if isinstance(i, TextItem) and i.role == "user"]
    return texts[-1] if texts else ""


def _answered(items: Sequence[CanonicalItem]) -> bool:
    return any(isinstance(i, ToolResultItem) for i in items)


def _tool_turn(agent_id: str, tool: str) -> Callable[[Sequence[CanonicalItem]], KitTurn]:
    def respond(items: Sequence[CanonicalItem]) -> KitTurn:
        if _answered(items):
            return KitTurn(text=f"{agent_id}:done")
        gate = _last_user_text(items)
        return KitTurn(tool_calls=(ToolCallItem(id="c1", name=tool, input={"gate": gate}),))

    return respond


def _spec(agent_id: str, tools: tuple[str, ...] = ()) -> AgentSpec[Any, Any]:
    return AgentSpec(
        id=agent_id,
        name=agent_id,
        instructions=f"You are {agent_id}.",
        model=f"{agent_id}:model",
        tools=tools,
    )


class Kit:
    """One check's world: a backend, a clock, gates, recorded side effects and workers."""

    def __init__(self, harness: BackgroundHarness, backend: Any, *, lease_ms: int = 60_000):
        self.harness = harness
        self.backend = backend
        self.lease_ms = lease_ms
        self.clock = ManualClock()
        self.effects: list[str] = []
        self._gates: dict[str, asyncio.Event] = {}
        self._entered: dict[str, asyncio.Event] = {}
        self.agents = {
            "kit-echo": KitAgent(
                spec=_spec("kit-echo"),
                respond=lambda items: KitTurn(text=f"kit-echo:{_last_user_text(items)}"),
            ),
            "kit-fail": KitAgent(
                spec=_spec("kit-fail"), respond=lambda _: KitTurn(error="kit boom")
            ),
            "kit-wait": KitAgent(
                spec=_spec("kit-wait", ("kit_wait",)), respond=_tool_turn("kit-wait", "kit_wait")
            ),
            "kit-write": KitAgent(
                spec=_spec("kit-write", ("kit_write",)),
                respond=_tool_turn("kit-write", "kit_write"),
            ),
            "kit-pay": KitAgent(
                spec=_spec("kit-pay", ("kit_pay",)), respond=_tool_turn("kit-pay", "kit_pay")
            ),
        }

    def agent(self, agent_id: str) -> AgentSpec[Any, Any]:
        """The spec of a kit agent."""
        return self.agents[agent_id].spec

    def gate(self, name: str) -> asyncio.Event:
        """The event a blocked tool call named ``name`` waits for."""
        return self._gates.setdefault(name, asyncio.Event())

    def entered(self, name: str) -> asyncio.Event:
        """Set when a tool call named ``name`` started (the child is mid-run)."""
        return self._entered.setdefault(name, asyncio.Event())

    def _tools(self) -> list[RuntimeTool]:
        async def wait(ctx: ToolExecutionContext, value: Any) -> str:
            name = str(value["gate"])
            self.entered(name).set()
            await self.gate(name).wait()
            return "opened"

        async def write(ctx: ToolExecutionContext, value: Any) -> str:
            name = str(value["gate"])
            self.effects.append(f"write:{name}")
            self.entered(name).set()
            await self.gate(name).wait()
            return "written"

        async def pay(ctx: ToolExecutionContext, value: Any) -> str:
            self.effects.append(f"pay:{value['gate']}")
            return "paid"

        def tool(
            name: str, fn: Callable[[ToolExecutionContext, Any], Awaitable[str]], **behavior: Any
        ) -> RuntimeTool:
            return RuntimeTool(
                descriptor=ToolDescriptor(
                    name=name,
                    input=json_schema_input({"type": "object"}),
                    behavior=ToolBehavior(**behavior),
                ),
                execute=fn,
            )

        return [
            tool("kit_wait", wait, effect="read"),
            tool("kit_write", write, effect="side-effect"),
            tool("kit_pay", pay, effect="side-effect", requires_approval=True),
        ]

    def resolve(self, agent_id: str) -> AgentSpec[Any, Any] | None:
        """The kit's agent resolver (unknown ids: None)."""
        found = self.agents.get(agent_id)
        return None if found is None else found.spec

    @contextlib.asynccontextmanager
    async def worker(
        self,
        owner_id: str,
        *,
        lease_ms: int | None = None,
        wall_clock: bool = False,
        resolve: bool = True,
    ) -> AsyncGenerator[KitWorker]:
        """A worker (runtime, runner, root scope, manager) on the shared backend."""
        runtime = self.harness.runtime(list(self.agents.values()), self._tools())
        async with runtime:
            runner = ChildRunner(runtime)
            manager = self.harness.manager(
                self.backend,
                runner,
                owner_id=owner_id,
                lease_ms=self.lease_ms if lease_ms is None else lease_ms,
                clock=None if wall_clock else self.clock,
                resolve_agent=self.resolve if resolve else (lambda _id: None),
            )
            try:
                yield KitWorker(runner=runner, root=runner.create_root(), manager=manager)
            finally:
                await manager.aclose()


@attrs.frozen(kw_only=True)
class KitWorker:
    """One worker of a check."""

    runner: ChildRunner
    root: OrchestrationScope
    manager: BackgroundChildManager


@attrs.frozen
class BackgroundCheck:
    """A named check: ``await check.run(kit)`` raises AssertionError on failure."""

    name: str
    run: Callable[[Kit], Awaitable[None]]


CHECKS: list[BackgroundCheck] = []
"""Every check (``_checks`` registers them on import)."""


def register_check(fn: Callable[[Kit], Awaitable[None]]) -> Callable[[Kit], Awaitable[None]]:
    """Add ``fn`` (named ``check_<name>``) to :data:`CHECKS`."""
    CHECKS.append(BackgroundCheck(fn.__name__.removeprefix("check_"), fn))
    return fn
