"""Middleware pipeline (spec 03 §7.7 rows 62-74, §3.7 invariants, hook timeouts, Q23 views)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from types import MappingProxyType
from typing import Any

import attrs
import pytest

from actoviq.core import AbortController, AbortError, RunContext, UsageAccumulator
from actoviq.runtime.middleware import (
    MIDDLEWARE_STAGE_ORDER,
    MiddlewareConfigurationError,
    MiddlewareContext,
    MiddlewareContextError,
    MiddlewareDeadline,
    MiddlewareDeadlineExceededError,
    MiddlewareDefinition,
    MiddlewareErrorContext,
    MiddlewareInvariantViolationError,
    MiddlewareNextCalledTwiceError,
    MiddlewarePipeline,
    MiddlewarePriorityConflictError,
    MiddlewareRegistry,
    MiddlewareRegistryError,
    MiddlewareStage,
    MiddlewareTimeoutError,
    Next,
    RuntimeMiddlewareContext,
    RunView,
    UnknownMiddlewareStageError,
    build_middleware_pipeline,
    create_middleware_pipeline_builder,
    define_middleware,
    is_middleware_stage,
    middleware,
    middleware_stage_index,
    read_only_state,
)

Handler = Callable[[Any, Next], Awaitable[Any]]


def noop_handle(context: Any, next: Next) -> None:
    return None


def ctx(**extra: Any) -> MiddlewareContext:
    return MiddlewareContext(signal=AbortController().signal, **extra)


def wrapper(label: str, calls: list[str]) -> Handler:
    async def handle(context: Any, next: Next) -> Any:
        calls.append(f"{label}:before")
        value = await next()
        calls.append(f"{label}:after")
        return f"{label}({value})"

    return handle


def test_stage_order_is_the_contract() -> None:
    """Row 62."""
    assert [stage.value for stage in MIDDLEWARE_STAGE_ORDER] == [
        "prepareInput",
        "beforeRun",
        "wrapModelCall",
        "afterModelResponse",
        "beforeToolCall",
        "wrapToolCall",
        "afterToolCall",
        "beforeHandoff",
        "afterTurn",
        "finalizeOutput",
        "afterRun",
        "onError",
    ]


async def test_order_is_by_priority_and_independent_of_registration() -> None:
    """Row 63."""
    calls: list[str] = []
    definitions = [
        define_middleware("late", "beforeRun", wrapper("late", calls), priority=50),
        define_middleware("early", "beforeRun", wrapper("early", calls), priority=-20),
        define_middleware("middle", "beforeRun", wrapper("middle", calls), priority=10),
    ]
    forward = MiddlewarePipeline(definitions)
    backward = MiddlewarePipeline(list(reversed(definitions)))
    assert forward.inspect() == backward.inspect()
    assert forward.format("beforeRun") == (
        "beforeRun[0] @-20 early\nbeforeRun[1] @10 middle\nbeforeRun[2] @50 late"
    )
    result = await forward.run(
        "beforeRun", ctx(), lambda context: calls.append("terminal") or "value"
    )
    assert result == "early(middle(late(value)))"
    assert calls == [
        "early:before",
        "middle:before",
        "late:before",
        "terminal",
        "late:after",
        "middle:after",
        "early:after",
    ]
    assert forward.inspect("beforeRun")[0].to_json() == {
        "name": "early",
        "stage": "beforeRun",
        "priority": -20,
        "stageIndex": 1,
        "chainIndex": 0,
    }


def test_priority_conflict_names_both() -> None:
    """Row 64."""
    noop: Handler = wrapper("x", [])
    builder = create_middleware_pipeline_builder()
    builder.use(define_middleware("permissions", "beforeToolCall", noop, priority=100))
    builder.use(define_middleware("guardrails", "beforeToolCall", noop, priority=100))
    with pytest.raises(MiddlewarePriorityConflictError) as caught:
        builder.build()
    assert caught.value.stage == "beforeToolCall"
    assert caught.value.priority == 100
    assert caught.value.middleware_names == ["guardrails", "permissions"]
    assert str(caught.value) == (
        "Middleware priority conflict at beforeToolCall@100: guardrails, permissions. "
        "Each stage must use unique priorities."
    )
    # same name at another stage is fine; compose() detects runtime/agent clashes
    base = MiddlewarePipeline([define_middleware("permissions", "beforeRun", noop, priority=100)])
    assert (
        len(base.compose([define_middleware("permissions", "afterRun", noop, priority=100)])) == 2
    )
    with pytest.raises(MiddlewarePriorityConflictError):
        base.compose([define_middleware("agent", "beforeRun", noop, priority=100)])


async def test_short_circuit_skips_downstream_and_terminal() -> None:
    """Row 65."""
    calls: list[str] = []

    async def cache(context: Any, next: Next) -> str:
        return "cached"

    pipeline = MiddlewarePipeline(
        [
            define_middleware("cache", "finalizeOutput", cache, priority=1),
            define_middleware("after", "finalizeOutput", wrapper("after", calls), priority=2),
        ]
    )
    result = await pipeline.run("finalizeOutput", ctx(), lambda context: calls.append("t"))
    assert result == "cached"
    assert calls == []


async def test_on_error_sees_the_failure_and_recovers() -> None:
    """Row 66."""
    error = RuntimeError("stage failed")
    seen: list[MiddlewareErrorContext] = []

    async def failing(context: Any, next: Next) -> Any:
        raise error

    async def recover(context: MiddlewareErrorContext, next: Next) -> str:
        seen.append(context)
        return "recovered"

    pipeline = MiddlewarePipeline(
        [
            define_middleware("failing", "beforeRun", failing),
            define_middleware("recover", "onError", recover),
        ]
    )
    source = ctx()
    assert await pipeline.run_with_error_stage("beforeRun", source, lambda c: None) == "recovered"
    assert seen[0].failed_stage is MiddlewareStage.BEFORE_RUN
    assert seen[0].error is error
    assert seen[0].source_context is source
    assert seen[0].signal is source.signal
    assert seen[0].stage is MiddlewareStage.ON_ERROR


async def test_on_error_next_reraises_the_same_error() -> None:
    """Row 67."""
    error = ValueError("original")

    async def observe(context: Any, next: Next) -> Any:
        return await next()

    def terminal(context: MiddlewareContext) -> None:
        raise error

    pipeline = MiddlewarePipeline([define_middleware("observe", "onError", observe)])
    with pytest.raises(ValueError, match="original") as caught:
        await pipeline.run_with_error_stage("afterTurn", ctx(), terminal)
    assert caught.value is error
    with pytest.raises(MiddlewareConfigurationError, match="onError"):
        await pipeline.run_with_error_stage("onError", ctx(), terminal)
    # with no onError handler the error passes through unchanged
    with pytest.raises(ValueError, match="original") as bare:
        await MiddlewarePipeline().run_with_error_stage("afterTurn", ctx(), terminal)
    assert bare.value is error


async def test_next_twice_raises() -> None:
    """Row 68."""

    async def twice(context: Any, next: Next) -> Any:
        await next()
        return await next()

    pipeline = MiddlewarePipeline([define_middleware("twice", "afterTurn", twice)])
    with pytest.raises(MiddlewareNextCalledTwiceError) as caught:
        await pipeline.run("afterTurn", ctx(), lambda context: 1)
    assert str(caught.value) == 'Middleware "twice" called next() more than once at afterTurn.'
    assert caught.value.middleware_name == "twice"


async def test_every_handler_and_the_terminal_share_signal_deadline_and_context() -> None:
    """Row 69."""
    seen: list[Any] = []

    async def record(context: Any, next: Next) -> Any:
        seen.append(context)
        return await next()

    pipeline = MiddlewarePipeline(
        [
            define_middleware("a", "beforeRun", record, priority=1),
            define_middleware("b", "beforeRun", record, priority=2),
        ]
    )
    deadline = MiddlewareDeadline(expires_at=9e15, scope="run:r1")
    source = ctx(deadline=deadline)
    await pipeline.run("beforeRun", source, lambda context: seen.append(context))
    assert len(seen) == 3
    assert all(item is seen[0] for item in seen)
    assert seen[0].signal is source.signal and seen[0].deadline is deadline
    assert seen[0].stage is MiddlewareStage.BEFORE_RUN


async def test_aborted_signal_and_expired_deadline_call_nothing() -> None:
    """Row 70."""
    calls: list[str] = []
    pipeline = MiddlewarePipeline([define_middleware("w", "beforeRun", wrapper("w", calls))])
    controller = AbortController()
    reason = RuntimeError("cancelled by user")
    controller.abort(reason)
    with pytest.raises(RuntimeError) as caught:
        await pipeline.run(
            "beforeRun", MiddlewareContext(signal=controller.signal), lambda c: calls.append("t")
        )
    assert caught.value is reason
    string_reason = AbortController()
    string_reason.abort("stop")
    with pytest.raises(AbortError):
        await pipeline.run(
            "beforeRun", MiddlewareContext(signal=string_reason.signal), lambda c: None
        )
    expired = ctx(deadline=MiddlewareDeadline(expires_at=0, scope="run:r1"))
    with pytest.raises(
        MiddlewareDeadlineExceededError, match=r"deadline for run:r1 expired at 0\."
    ):
        await pipeline.run("beforeRun", expired, lambda c: calls.append("t"))
    assert calls == []


async def test_abort_during_a_handler_stops_before_the_next_dispatch() -> None:
    controller = AbortController()
    reason = RuntimeError("stop now")
    calls: list[str] = []

    async def aborting(context: Any, next: Next) -> Any:
        controller.abort(reason)
        return await next()

    pipeline = MiddlewarePipeline(
        [
            define_middleware("aborting", "beforeRun", aborting, priority=1),
            define_middleware("after", "beforeRun", wrapper("after", calls), priority=2),
        ]
    )
    with pytest.raises(RuntimeError) as caught:
        await pipeline.run(
            "beforeRun", MiddlewareContext(signal=controller.signal), lambda c: calls.append("t")
        )
    assert caught.value is reason
    assert calls == []


@pytest.mark.parametrize(
    "definition",
    [
        None,
        {"name": " ", "stage": "beforeRun", "priority": 0, "handle": noop_handle},
        {"name": "x", "stage": "bad", "priority": 0, "handle": noop_handle},
        {"name": "x", "stage": "beforeRun", "priority": 0.5, "handle": noop_handle},
        {"name": "x", "stage": "beforeRun", "priority": True, "handle": noop_handle},
        {"name": "x", "stage": "beforeRun", "priority": 2**53, "handle": noop_handle},
        {"name": "x", "stage": "beforeRun", "priority": 0, "handle": None},
    ],
)
def test_invalid_definitions_raise_configuration_error(definition: Any) -> None:
    """Row 71."""
    with pytest.raises(MiddlewareConfigurationError):
        define_middleware(definition)
    with pytest.raises(MiddlewareConfigurationError):
        MiddlewarePipeline([definition])


async def test_builder_inspect_and_context_validation() -> None:
    """Row 72."""
    handle: Handler = wrapper("only", [])
    pipeline = (
        create_middleware_pipeline_builder()
        .use_all([{"name": "only", "stage": "afterRun", "priority": 3, "handle": handle}])
        .build()
    )
    assert len(pipeline.definitions()) == 1
    assert "only" in pipeline.format()
    assert MiddlewarePipeline().format() == ""
    with pytest.raises(UnknownMiddlewareStageError, match=r"Unknown middleware stage: bad\."):
        pipeline.inspect("bad")
    with pytest.raises(UnknownMiddlewareStageError, match="Unknown middleware stage"):
        await pipeline.run("bad", ctx(), lambda c: None)
    bad_contexts: list[Any] = [None, {}, {"signal": {}}]
    for bad_context in bad_contexts:
        with pytest.raises(MiddlewareContextError, match="Middleware context"):
            await pipeline.run("afterRun", bad_context, lambda c: None)
    with pytest.raises(MiddlewareContextError, match="Middleware context"):
        MiddlewareContext(signal={})  # type: ignore[arg-type]
    for expires in (-1, math.nan, math.inf):
        with pytest.raises(MiddlewareContextError, match="Middleware context"):
            MiddlewareDeadline(expires_at=expires)
    with pytest.raises(MiddlewareDeadlineExceededError):
        await pipeline.run(
            "afterRun", ctx(deadline=MiddlewareDeadline(expires_at=1)), lambda c: None
        )
    assert build_middleware_pipeline([handle_definition()]).has("afterRun")


def handle_definition() -> MiddlewareDefinition:
    @middleware("afterRun", priority=7)
    async def audit(context: Any, next: Next) -> Any:
        return await next()

    return audit


def test_stage_helpers() -> None:
    """Row 73."""
    assert is_middleware_stage("beforeRun") is True
    assert is_middleware_stage(1) is False
    assert middleware_stage_index("onError") == 11
    with pytest.raises(UnknownMiddlewareStageError):
        middleware_stage_index("bad")
    assert handle_definition().name == "audit"


def test_registry() -> None:
    """Row 74."""
    one = define_middleware("one", "beforeRun", wrapper("one", []))
    registry = MiddlewareRegistry()
    with pytest.raises(MiddlewareRegistryError, match="empty"):
        registry.register(" ", one)
    with pytest.raises(MiddlewareRegistryError, match="contain"):
        registry.register("one", [])
    registry.register("one", one)
    with pytest.raises(MiddlewareRegistryError, match="already"):
        registry.register("one", one)
    two = define_middleware("two", "afterRun", wrapper("two", []))
    assert registry.register("one", [two, one], replace=True) is registry
    assert registry.resolve([{"id": "one", "options": {"x": 1}}]) == (two, one)
    assert registry.resolve() == ()
    assert registry.list() == ("one",)
    assert registry.has("one") and not registry.has("two")
    with pytest.raises(MiddlewareRegistryError, match=r'Unknown middleware reference "nope"\.'):
        registry.resolve(["nope"])
    from actoviq.core import RefSpec

    assert MiddlewareRegistry({"g": one}).resolve([RefSpec(id="g")]) == (one,)


# --- §3.7 wrap invariants ------------------------------------------------------------------


async def test_run_wrap_requires_next_and_identity() -> None:
    produced = {"value": 1}

    async def skip(context: Any, next: Next) -> Any:
        return {"value": 1}

    async def replace(context: Any, next: Next) -> Any:
        await next()
        return {"value": 1}

    async def observe(context: Any, next: Next) -> Any:
        return await next()

    def terminal(context: MiddlewareContext) -> dict[str, int]:
        return produced

    for handle, message in ((skip, "call next()"), (replace, "unchanged")):
        pipeline = MiddlewarePipeline([define_middleware("m", "wrapToolCall", handle)])
        with pytest.raises(MiddlewareInvariantViolationError, match=message) as caught:
            await pipeline.run_wrap("wrapToolCall", ctx(), terminal, require_identity=True)
        assert caught.value.code == "MIDDLEWARE_INVARIANT_VIOLATION"
        assert caught.value.phase == "tool_call"
        assert caught.value.details == {"stage": "wrapToolCall"}
    ok = MiddlewarePipeline([define_middleware("m", "wrapToolCall", observe)])
    assert await ok.run_wrap("wrapToolCall", ctx(), terminal, require_identity=True) is produced
    # wrapModelCall may rewrite the response, but must let the provider call complete
    rewrite = MiddlewarePipeline([define_middleware("m", "wrapModelCall", replace)])
    assert (
        await rewrite.run_wrap("wrapModelCall", ctx(), terminal, require_identity=False) == produced
    )


async def test_run_wrap_rejects_on_error_recovery_of_a_terminal_failure() -> None:
    async def observe(context: Any, next: Next) -> Any:
        return await next()

    async def recover(context: Any, next: Next) -> Any:
        return "fake response"

    def failing(context: MiddlewareContext) -> Any:
        raise ConnectionError("provider down")

    pipeline = MiddlewarePipeline(
        [
            define_middleware("observe", "wrapModelCall", observe),
            define_middleware("recover", "onError", recover),
        ]
    )
    with pytest.raises(MiddlewareInvariantViolationError, match="wrapModelCall") as caught:
        await pipeline.run_wrap("wrapModelCall", ctx(), failing, require_identity=False)
    assert caught.value.phase == "model_call"
    # without recovery the provider error itself surfaces
    plain = MiddlewarePipeline([define_middleware("observe", "wrapModelCall", observe)])
    with pytest.raises(ConnectionError):
        await plain.run_wrap("wrapModelCall", ctx(), failing, require_identity=False)


# --- hook timeouts -------------------------------------------------------------------------


async def test_hook_timeout_bounds_a_hung_handler() -> None:
    async def hang(context: Any, next: Next) -> Any:
        await asyncio.Event().wait()

    pipeline = MiddlewarePipeline([define_middleware("hang", "afterTurn", hang)])
    with pytest.raises(MiddlewareTimeoutError) as caught:
        await pipeline.run("afterTurn", ctx(hook_timeout_ms=5), lambda c: None)
    assert caught.value.middleware_name == "hang"
    assert caught.value.code == "MIDDLEWARE_HOOK_TIMEOUT"


async def test_time_inside_next_is_not_charged_to_the_handler() -> None:
    """A wrapping handler with a tiny budget survives a slow terminal (its clock is paused)."""
    release = asyncio.Event()
    terminal_started = asyncio.Event()

    async def observe(context: Any, next: Next) -> Any:
        return await next()

    async def slow_terminal(context: MiddlewareContext) -> str:
        terminal_started.set()
        await release.wait()
        return "done"

    async def release_later() -> None:
        await terminal_started.wait()
        # outlive the 20 ms hook budget several times over before releasing the terminal (the
        # slow terminal is the behaviour under test; ordering comes from terminal_started, and a
        # slower machine only makes the terminal slower)
        await asyncio.sleep(0.1)
        release.set()

    pipeline = MiddlewarePipeline(
        [
            define_middleware("outer", "wrapModelCall", observe, priority=1),
            define_middleware("inner", "wrapModelCall", observe, priority=2),
        ]
    )
    async with asyncio.TaskGroup() as group:
        group.create_task(release_later())
        result = await pipeline.run("wrapModelCall", ctx(hook_timeout_ms=20), slow_terminal)
    assert result == "done"


async def test_deadline_bounds_a_running_handler() -> None:
    from actoviq.runtime.tools import epoch_ms

    async def hang(context: Any, next: Next) -> Any:
        await asyncio.Event().wait()

    pipeline = MiddlewarePipeline([define_middleware("hang", "afterTurn", hang)])
    deadline = MiddlewareDeadline(expires_at=epoch_ms() + 10, scope="run:r9")
    with pytest.raises(MiddlewareDeadlineExceededError, match="run:r9"):
        await pipeline.run("afterTurn", ctx(deadline=deadline), lambda c: None)


async def test_handler_own_timeout_error_is_not_a_hook_timeout() -> None:
    async def raises_timeout(context: Any, next: Next) -> Any:
        raise TimeoutError("downstream service timed out")

    pipeline = MiddlewarePipeline([define_middleware("t", "afterTurn", raises_timeout)])
    with pytest.raises(TimeoutError, match="downstream"):
        await pipeline.run("afterTurn", ctx(hook_timeout_ms=10_000), lambda c: None)


async def test_sync_handlers_and_terminals_work() -> None:
    def sync_handler(context: Any, next: Next) -> Any:
        return "sync"

    pipeline = MiddlewarePipeline([define_middleware("s", "afterTurn", sync_handler)])
    assert await pipeline.run("afterTurn", ctx(hook_timeout_ms=100), lambda c: None) == "sync"
    assert await MiddlewarePipeline().run("afterTurn", ctx(), lambda c: 5) == 5


# --- read-only views (Q23) -----------------------------------------------------------------


def test_run_view_and_state_are_read_only() -> None:
    usage = UsageAccumulator({"inputTokens": 2, "outputTokens": 3})
    run = RunContext(
        run_id="r1",
        agent_id="a1",
        context={"user": "ada"},
        signal=AbortController().signal,
        started_at="2026-01-01T00:00:00.000Z",
        usage=usage,
        metadata={"tags": ["x"]},
    )
    view = RunView.of(run)
    assert view.usage.total_tokens == 5
    assert not hasattr(view.usage, "add") and not hasattr(view.usage, "reset")
    usage.add({"inputTokens": 1})
    assert view.usage.snapshot().total_tokens == 6  # a live view, not a copy
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        view.run_id = "other"  # type: ignore[misc]
    assert isinstance(view.metadata, MappingProxyType)
    metadata: Any = view.metadata
    with pytest.raises(TypeError):
        metadata["tags"] = ()
    state: Any = read_only_state({"transcript": [{"type": "text"}], "turn": 1})
    with pytest.raises(TypeError):
        state["turn"] = 2
    with pytest.raises(AttributeError):
        state["transcript"].append({})
    context = RuntimeMiddlewareContext(signal=run.signal, run=view, state=state)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        context.state = {}  # type: ignore[misc]


def test_registry_resolves_agent_spec_references_in_order() -> None:
    from actoviq.core import AgentSpec, RefSpec

    first = define_middleware("first", "beforeRun", noop_handle, priority=1)
    second = define_middleware("second", "afterRun", noop_handle, priority=1)
    registry = MiddlewareRegistry({"audit": second, "guard": [first]})
    agent: AgentSpec[None, Any] = AgentSpec(
        id="a",
        name="A",
        instructions="hi",
        middleware=("guard", RefSpec(id="audit", options={"level": "high"})),
    )
    resolved = registry.resolve(agent.middleware)
    assert resolved == (first, second)
    pipeline = MiddlewarePipeline().compose(resolved)
    assert pipeline.format() == "beforeRun[0] @1 first\nafterRun[0] @1 second"
