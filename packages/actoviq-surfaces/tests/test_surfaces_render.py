"""render_text / arender_text / TextRenderer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from surfaces_testkit import Stream

from actoviq.surfaces import (
    APPROVAL_MARKER,
    RunEventSemanticProjector,
    SurfaceSemanticEvent,
    TextRenderOptions,
    arender_text,
    render_text,
)


def _semantics(
    script: list[tuple[str, Any]], stream: Stream | None = None
) -> list[SurfaceSemanticEvent]:
    stream = stream if stream is not None else Stream()
    projector = RunEventSemanticProjector()
    return [e for kind, data in script for e in projector.project(stream.next(kind, data))]


def test_text_tools_approval_and_usage() -> None:
    semantics = _semantics(
        [
            ("model.requested", {"turn": 1}),
            ("model.reasoning.delta", {"delta": "hmm"}),
            ("model.text.delta", {"delta": "Let me "}),
            ("model.text.delta", {"delta": "look."}),
            ("tool.started", {"callId": "a", "name": "search", "input": {"q": "x" * 300}}),
            ("tool.started", {"callId": "b", "name": "fetch"}),
            ("tool.completed", {"callId": "a", "name": "search"}),
            ("tool.failed", {"callId": "b", "name": "fetch", "failure": {"message": "404"}}),
            ("tool.started", {"callId": "c", "name": "send"}),
            ("tool.rejected", {"callId": "c", "name": "send"}),
            ("model.text.delta", {"delta": "Done"}),
            (
                "run.interrupted",
                {
                    "interruptionId": "i1",
                    "reason": "r",
                    "interruptions": [
                        {
                            "id": "i1",
                            "kind": "approval",
                            "reason": "needs ok",
                            "callId": "d",
                            "toolName": "pay",
                        },
                        {
                            "id": "i2",
                            "kind": "reconciliation",
                            "reason": "unknown state",
                            "callId": "e",
                        },
                    ],
                },
            ),
        ]
    )
    text = "".join(render_text(semantics))
    lines = text.splitlines()
    assert lines[0] == "Let me look."
    assert lines[1].startswith('[tool] search {"q": "xxx') and lines[1].endswith("…")
    assert len(lines[1]) == len("[tool] search ") + 120
    assert lines[2] == "[tool] fetch"
    assert lines[3] == "[tool] search -> ok (2 ms)"  # ManualClock: 1 ms per event
    assert lines[4] == "[tool] fetch -> failed: 404"
    assert lines[5] == "[tool] send -> rejected"
    assert lines[6] == "Done"
    assert lines[7] == f"{APPROVAL_MARKER} pay (d): needs ok"
    assert lines[8] == "[reconciliation required] (e): unknown state"
    assert text.endswith("\n") and "hmm" not in text


def test_reasoning_errors_cancellation_and_drops() -> None:
    semantics = _semantics(
        [
            ("model.reasoning.delta", {"delta": "think"}),
            ("model.text.delta", {"delta": "a"}),
            ("stream.dropped", {"count": 3, "firstSequence": 2, "lastSequence": 4}),
            ("model.text.delta", {"delta": "b"}),
            ("run.failed", {"error": {"message": "bad", "code": "X_FAILED"}}),
        ]
    )
    text = "".join(render_text(semantics, TextRenderOptions(show_reasoning=True)))
    assert text == "(thinking) think\na [... 3 deltas dropped] b\n[error X_FAILED] bad\n"
    cancelled = _semantics(
        [("model.text.delta", {"delta": "x"}), ("run.cancelled", {"reason": "stop"})]
    )
    assert "".join(render_text(cancelled)) == "x\n[cancelled] stop\n"


def test_child_runs_can_be_hidden() -> None:
    parent = Stream("p")
    child = parent.child("c")
    projector = RunEventSemanticProjector()
    semantics = projector.project(parent.next("model.text.delta", {"delta": "P"}))
    semantics += projector.project(child.next("model.text.delta", {"delta": "C"}))
    semantics += projector.project(parent.next("model.completed", {}))
    semantics += projector.project(child.next("model.completed", {}))
    assert "".join(render_text(semantics)) == "PC\n"
    assert "".join(render_text(semantics, TextRenderOptions(show_child_runs=False))) == "P\n"


def test_usage_line_is_optional() -> None:
    semantics = _semantics(
        [("run.completed", {"status": "completed", "usage": {"requests": 2, "costUsd": 0.5}})]
    )
    assert "".join(render_text(semantics)) == "[usage] 2 requests, $0.5000\n"
    assert "".join(render_text(semantics, TextRenderOptions(show_usage=False))) == ""


async def test_async_variant_gives_the_same_chunks() -> None:
    semantics = _semantics(
        [
            ("model.text.delta", {"delta": "hi"}),
            ("run.completed", {"status": "completed", "usage": {}}),
        ]
    )

    async def source() -> AsyncIterator[SurfaceSemanticEvent]:
        for event in semantics:
            yield event

    chunks = [chunk async for chunk in arender_text(source())]
    assert chunks == list(render_text(semantics))
    assert "".join(chunks) == "hi\n[usage] no usage reported\n"
