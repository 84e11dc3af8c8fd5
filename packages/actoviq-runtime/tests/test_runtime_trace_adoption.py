"""A caller-owned trace is adopted verbatim (spec 04 §8.2-16), and a run's tools see its trace."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_testkit import json_tool, make_agent, scripted_runtime

from actoviq.core import RunError, ToolCallItem
from actoviq.events import (
    InMemoryEventSink,
    SequentialIdFactory,
    TraceContext,
    create_child_trace_context,
    create_root_trace_context,
    current_trace_context,
)
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import ToolExecutionContext


async def test_an_adopted_trace_is_the_runs_trace_without_a_second_span() -> None:
    ids = SequentialIdFactory()
    parent = create_root_trace_context("parent", ids=ids)
    scope_trace = create_child_trace_context("child-1", parent=parent, ids=ids)
    sink = InMemoryEventSink()
    async with scripted_runtime(ScriptedProvider(["done"]), event_sinks=[sink]) as runtime:
        result = await runtime.run(make_agent(), "hi", trace=scope_trace)
    assert result.run_id == "child-1"
    assert sink.events
    for event in sink.events:
        assert (event.run_id, event.trace_id, event.span_id) == (
            "child-1",
            scope_trace.trace_id,
            scope_trace.span_id,
        )
        assert (event.parent_run_id, event.parent_span_id) == ("parent", parent.span_id)


async def test_an_adopted_trace_must_match_the_run_id_and_excludes_parent_options() -> None:
    ids = SequentialIdFactory()
    trace = create_root_trace_context("mine", ids=ids)
    async with scripted_runtime(ScriptedProvider(["done"], repeat_last=True)) as runtime:
        with pytest.raises(RunError) as mismatch:
            await runtime.run(make_agent(), "hi", trace=trace, run_id="other")
        assert mismatch.value.code == "RUN_TRACE_INVALID"
        with pytest.raises(RunError, match="verbatim"):
            await runtime.run(make_agent(), "hi", trace=trace, parent_trace=trace)
        with pytest.raises(RunError, match="TraceContext"):
            await runtime.run(make_agent(), "hi", trace="not-a-trace")  # type: ignore[typeddict-item]
        assert runtime.active_runs == 0
        assert (await runtime.run(make_agent(), "hi", trace=trace, run_id="mine")).run_id == "mine"


async def test_tools_run_inside_the_runs_trace_and_nested_runs_become_children() -> None:
    seen: list[TraceContext | None] = []
    inner_traces: list[tuple[str | None, str]] = []
    sink = InMemoryEventSink()

    async def nested(ctx: ToolExecutionContext, _input: Any) -> str:
        seen.append(current_trace_context())
        inner = await runtime.run(make_agent(id="inner", name="Inner"), "inner")
        inner_traces.append((inner.run_id, ctx.run_id))
        return "ok"

    provider = ScriptedProvider(
        [
            ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="nest", input={})]),
            "inner-done",
            "outer-done",
        ]
    )
    runtime = scripted_runtime(provider, tools=[json_tool("nest", nested)], event_sinks=[sink])
    async with runtime:
        result = await runtime.run(make_agent(tools=("nest",)), "go", run_id="outer")
    assert result.output == "outer-done"
    assert seen and seen[0] is not None and seen[0].run_id == "outer"
    inner_run = inner_traces[0][0]
    started = [e for e in sink.events if e.type == "run.started" and e.run_id == inner_run]
    outer = next(e for e in sink.events if e.run_id == "outer")
    assert started[0].parent_run_id == "outer"
    assert started[0].trace_id == outer.trace_id
    assert started[0].parent_span_id == outer.span_id
    assert current_trace_context() is None
