"""Golden transcript: a scripted, streamed, tool-using run with an approval, for every target.

The run: the model streams text, calls a read tool and an approval-gated side-effect tool; the
run is interrupted for the approval, resumed with an approval, and the model answers. The run's
events (both legs, one sequence) are projected once by a shared projector; the four targets must
be identical, and equal to ``data/golden_transcript.json``. ``UPDATE_GOLDEN=1`` rewrites it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.events import InMemoryEventSink, ManualClock, RunEvent, SequentialIdFactory
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, InterruptionDecision, ToolRegistry, tool
from actoviq.surfaces import (
    SURFACE_TARGETS,
    SharedRunEventSurfaceProjector,
    SurfaceSemanticEvent,
    render_text,
    surface_event_from_json,
    surface_event_to_json,
)

GOLDEN = Path(__file__).parent / "data" / "golden_transcript.json"
SENT: list[str] = []


@tool(effect="read")
def lookup(city: str) -> dict[str, object]:
    """Weather for a city.

    Args:
        city: the city.
    """
    return {"city": city, "tempC": 18}


@tool(effect="side-effect", requires_approval=True)
def notify(to: str, api_key: str) -> str:
    """Send a notification (needs approval).

    Args:
        to: recipient.
        api_key: the messaging key.
    """
    SENT.append(to)
    return f"sent to {to}"


SCRIPT = [
    ScriptedTurn(
        text="Checking Paris, then notifying ops.",
        stream_deltas=["Checking Paris,", " then notifying ops."],
        reasoning="Weather first, then notify.",
        tool_calls=[
            ToolCallItem(id="call_lookup", name="lookup", input={"city": "Paris"}),
            ToolCallItem(
                id="call_notify",
                name="notify",
                input={"to": "ops@example.test", "api_key": "sk-proj-GOLDENSECRET0001"},
            ),
        ],
        usage={"inputTokens": 40, "outputTokens": 12},
    ),
    ScriptedTurn(
        text="Paris is 18°C; ops were notified.",
        stream_deltas=["Paris is 18°C;", " ops were notified."],
        usage={"inputTokens": 60, "outputTokens": 9},
    ),
]


async def _run_events() -> list[RunEvent]:
    sink = InMemoryEventSink()
    runtime = AgentRuntime(
        models=ModelRegistry([ScriptedProvider(SCRIPT)]),
        tools=ToolRegistry([lookup, notify]),
        event_sinks=[sink],
        ids=SequentialIdFactory(),
        clock=ManualClock(),
    )
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="ops",
        name="Ops",
        instructions="Be brief.",
        model="scripted:m",
        tools=("lookup", "notify"),
    )
    async with runtime:
        async with runtime.stream(
            agent, "Weather in Paris, then tell ops.", run_id="golden"
        ) as handle:
            async for _ in handle:
                pass
            first = await handle.result()
        assert first.status == "interrupted"
        decisions = [InterruptionDecision.approve(entry.id) for entry in first.interruptions]
        async with runtime.resume(first.state, decisions) as handle:
            async for _ in handle:
                pass
            final = await handle.result()
        assert final.status == "completed"
    return list(sink.events)


def _transcript(events: list[RunEvent]) -> dict[str, Any]:
    projector = SharedRunEventSurfaceProjector()
    targets: dict[str, list[SurfaceSemanticEvent]] = {target: [] for target in SURFACE_TARGETS}
    for event in events:
        fan = projector.project(event)
        for target in SURFACE_TARGETS:
            targets[target].extend(fan.for_target(target))
    wires = {
        target: [surface_event_to_json(e) for e in semantics]
        for target, semantics in targets.items()
    }
    first = wires["cli"]
    for target in SURFACE_TARGETS:
        assert wires[target] == first, f"{target} differs from cli"
    return {"semantics": first, "text": "".join(render_text(targets["cli"]))}


async def test_golden_transcript_is_identical_for_every_target() -> None:
    SENT.clear()
    transcript = _transcript(await _run_events())
    assert SENT == ["ops@example.test"]
    text = json.dumps(transcript, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    assert "GOLDENSECRET" not in text
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text, "utf-8")
    expected = json.loads(GOLDEN.read_text("utf-8"))
    assert transcript == expected
    # The checked-in file is itself valid wire data.
    for entry in expected["semantics"]:
        assert surface_event_to_json(surface_event_from_json(entry)) == entry


def test_golden_transcript_covers_the_story() -> None:
    expected = json.loads(GOLDEN.read_text("utf-8"))
    types = [entry["type"] for entry in expected["semantics"]]
    for needed in (
        "run.started",
        "request.started",
        "reasoning.delta",
        "text.delta",
        "tool.input.delta",
        "tool.started",
        "tool.completed",
        "interruption.requested",
        "run.resumed",
        "terminal",
        "usage",
    ):
        assert needed in types, needed
    started = {
        e["data"]["callId"]: e["data"] for e in expected["semantics"] if e["type"] == "tool.started"
    }
    assert started["call_lookup"]["input"] == {"city": "Paris"}
    assert started["call_notify"]["input"]["api_key"] == "[REDACTED]"
    sequences = [e["sequence"] for e in expected["semantics"]]
    assert sequences == sorted(sequences)  # one sequence across the resume
    assert "[approval required] notify (call_notify)" in expected["text"]
    assert expected["text"].rstrip().endswith("out tokens")
