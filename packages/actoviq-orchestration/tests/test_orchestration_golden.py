"""The golden transcript (issue 15): a manager with two agent tools and one handoff, scripted and
streamed; every event of the tree is compared with ``golden/manager_tools_handoff.json``. And the
same tree as OpenTelemetry spans: one trace, every run nested under its parent.

Regenerate the golden file after an intended change with ``ACTOVIQ_UPDATE_GOLDEN=1``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from orchestration_testkit import agent, call, runtime_for, script

from actoviq.core import HandoffRef, ToolCallItem
from actoviq.events import (
    InMemoryEventSink,
    ManualClock,
    OpenTelemetrySink,
    RunEvent,
    SequentialIdFactory,
)
from actoviq.orchestration import ChildRunner, HandoffLoop, RunTree, agent_as_tool
from actoviq.providers.testing import ScriptedTurn

GOLDEN = Path(__file__).resolve().parent / "golden" / "manager_tools_handoff.json"


def _tree_runtime(*sinks: Any) -> Any:
    manager_turns = [
        call("researcher", call_id="call-research", input="facts about CAS"),
        call("writer", call_id="call-write", input="draft a note"),
        ScriptedTurn(
            text="Handing over to the closer.",
            stream_deltas=["Handing over ", "to the closer."],
            tool_calls=[ToolCallItem(id="call-handoff", name="to-closer", input={})],
            usage={"inputTokens": 30, "outputTokens": 5},
        ),
    ]
    return runtime_for(
        script("manager", manager_turns),
        script(
            "researcher", [ScriptedTurn(text="CAS compares then sets.", usage={"inputTokens": 9})]
        ),
        script("writer", [ScriptedTurn(text="Note: use CAS.", usage={"inputTokens": 7})]),
        script(
            "closer",
            [
                ScriptedTurn(
                    text="Done: the note is ready.", stream_deltas=["Done: ", "the note is ready."]
                )
            ],
        ),
        event_sinks=list(sinks),
        ids=SequentialIdFactory(),
        clock=ManualClock(),
    )


async def _run_tree(runtime: Any) -> tuple[list[RunEvent], Any]:
    runner = ChildRunner(runtime, RunTree(ids=SequentialIdFactory(start=1000)))
    for specialist in ("researcher", "writer"):
        runtime.tools.register(agent_as_tool(agent(specialist), runner).as_runtime_tool())
    manager = agent(
        "manager",
        tools=("researcher", "writer"),
        handoffs=(HandoffRef(id="to-closer", target_agent_id="closer"),),
    )
    loop = HandoffLoop(runner, max_handoffs=1, agents=[agent("closer")])
    async with runner.open_root("desk", run_id="desk") as desk:
        scope = runner.tree.derive_child(desk, "conversation")
        async with loop.stream(scope, manager, "Write a note about CAS.") as stream:
            streamed = [event async for event in stream]
            outcome = await stream.result()
    return streamed, outcome


class _Aliases:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.names: dict[str, str] = {}

    def __call__(self, value: str) -> str:
        if value not in self.names:
            self.names[value] = f"{self.prefix}{len(self.names) + 1}"
        return self.names[value]


def _normalise(events: list[RunEvent]) -> list[dict[str, Any]]:
    runs = _Aliases("run-")
    spans = _Aliases("span-")
    for event in events:
        runs(event.run_id)
    known = dict(runs.names)

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            return known.get(value, value)
        if isinstance(value, dict):
            return {key: scrub(item) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
        if isinstance(value, list):
            return [scrub(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
        return value

    rows: list[dict[str, Any]] = []
    for event in events:
        row: dict[str, Any] = {
            "run": runs(event.run_id),
            "seq": event.sequence,
            "type": event.type,
            "span": spans(event.span_id),
        }
        if event.parent_run_id is not None:
            row["parent"] = runs(event.parent_run_id)
        if event.parent_span_id is not None:
            row["parentSpan"] = spans(event.parent_span_id)
        row["data"] = scrub(event.data)
        rows.append(row)
    return rows


async def test_the_golden_transcript_of_a_manager_with_two_agent_tools_and_a_handoff() -> None:
    sink = InMemoryEventSink()
    async with _tree_runtime(sink) as runtime:
        streamed, outcome = await _run_tree(runtime)
    assert outcome.status == "completed" and outcome.output == "Done: the note is ready."
    assert outcome.owner.agent_id == "closer"
    events = list(sink.events)
    assert len({event.trace_id for event in events}) == 1  # one trace for the whole tree
    # The stream carries the owners' runs (manager, then closer) exactly as the sinks saw them.
    owners = {"conversation", outcome.owner.run_id}
    assert [e.event_id for e in streamed] == [e.event_id for e in events if e.run_id in owners]
    rows = _normalise(events)
    if os.environ.get("ACTOVIQ_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", "utf-8")
        pytest.fail(f"golden transcript written to {GOLDEN}; rerun without ACTOVIQ_UPDATE_GOLDEN")
    assert rows == json.loads(GOLDEN.read_text("utf-8"))


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield provider, spans
    provider.shutdown()


async def test_one_opentelemetry_trace_shows_the_whole_tree(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, spans = exporter
    otel = OpenTelemetrySink(tracer_provider=provider)
    async with _tree_runtime(otel) as runtime:
        await _run_tree(runtime)
    finished = spans.get_finished_spans()
    assert len({span.context.trace_id for span in finished if span.context}) == 1
    agents = {
        str(span.attributes.get("actoviq.run.id")): span
        for span in finished
        if span.name.startswith("invoke_agent") and span.attributes
    }
    desk = agents["desk"]
    assert desk.parent is None  # the root of the trace
    conversation = agents["conversation"]
    assert conversation.parent is not None and desk.context is not None
    assert conversation.parent.span_id == desk.context.span_id
    children = [s for run, s in agents.items() if run not in ("desk", "conversation")]
    names = sorted(span.name for span in children)
    assert names == ["invoke_agent closer", "invoke_agent researcher", "invoke_agent writer"]
    assert conversation.context is not None
    for span in children:
        assert span.parent is not None and span.parent.span_id == conversation.context.span_id
    assert not [s for s in finished if s.attributes and s.attributes.get("actoviq.incomplete")]
