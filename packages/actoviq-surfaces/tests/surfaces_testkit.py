"""Shared fixtures for the surfaces tests: a legacy event fixture and event builders."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from actoviq.events import (
    ManualClock,
    RunEvent,
    RunEventSequencer,
    SequentialIdFactory,
    TraceContext,
    create_child_trace_context,
    create_root_trace_context,
)
from actoviq.surfaces import SurfaceSemanticEvent, surface_event_to_json

PASSWORD = "hunter2-CANARY-pw"
BEARER = "eyJhbGciOi.CANARYbearer.sig"
API_KEY = "ak-CANARY-0123456789"
TOKEN = "tok-CANARY-abcdef"
SIGNATURE = "sig-CANARY-opaque-blob"
SK_PROJ = "sk-proj-CANARYabcdef123456"
STACK = "Error: boom\n    at run (C:\\Users\\dev\\secret-project\\src\\agent.ts:10:5)"
SECRETS = (PASSWORD, BEARER, API_KEY, TOKEN, SIGNATURE, SK_PROJ, "secret-project")

T0 = 1767225600000  # 2026-01-01T00:00:00Z in epoch milliseconds


def _at(offset: int) -> int:
    return T0 + offset


def legacy_fixture(run_id: str = "run-legacy") -> list[dict[str, Any]]:
    """One legacy run touching every mapped AgentEvent type, with secrets sprinkled in."""
    call = {
        "id": "call_1",
        "name": "search",
        "publicName": "search",
        "provider": "local",
        "input": {"query": "sdk", "password": PASSWORD},
        "startedAt": "2026-01-01T00:00:01.000Z",
    }

    def event(kind: str, offset: int, **payload: Any) -> dict[str, Any]:
        return {"type": kind, "runId": run_id, "timestamp": _at(offset), **payload}

    return [
        event("run.started", 0, sessionId="s-1", model="claude-sonnet", input="find the sdk"),
        event("request.started", 1, iteration=1, requestTokenEstimate=12),
        event(
            "request.prompt_cache",
            2,
            iteration=1,
            prefixSignature="abc",
            prefixChanged=False,
            breakpoints={"system": True, "tools": False, "message": True},
        ),
        event(
            "response.thinking.delta",
            3,
            iteration=1,
            index=0,
            delta="check ",
            snapshot="check ",
            signature=SIGNATURE,
        ),
        event(
            "response.thinking.delta",
            4,
            iteration=1,
            index=0,
            delta="facts",
            snapshot="check facts",
            signature=SIGNATURE,
        ),
        event("response.text.delta", 5, iteration=1, delta="hello", snapshot="hello"),
        event(
            "response.text.delta",
            6,
            iteration=1,
            delta=f" world Authorization: Bearer {BEARER}",
            snapshot=f"hello world Authorization: Bearer {BEARER}",
        ),
        event(
            "response.tool_input.delta",
            7,
            iteration=1,
            index=1,
            toolUseId="call_1",
            toolName="search",
            delta='{"query":',
            snapshot='{"query":',
        ),
        event(
            "response.tool_input.delta",
            8,
            iteration=1,
            index=1,
            toolUseId="call_1",
            toolName="search",
            delta='"sdk"}',
            snapshot='{"query":"sdk"}',
        ),
        event(
            "response.content",
            9,
            iteration=1,
            content={"type": "text", "text": f"call with api_key={SK_PROJ}"},
        ),
        event(
            "response.message",
            10,
            iteration=1,
            message={"role": "assistant", "content": "hi", "apiKey": API_KEY},
        ),
        event(
            "model.fallback", 11, iteration=1, fromModel="big", toModel="small", reason="overloaded"
        ),
        event(
            "tool.permission",
            12,
            iteration=1,
            decision={
                "toolName": "search",
                "publicName": "search",
                "behavior": "allow",
                "reason": "rule",
                "source": "config",
                "timestamp": "2026-01-01T00:00:01.000Z",
            },
        ),
        event("tool.call", 13, iteration=1, call=call),
        event(
            "tool.progress",
            14,
            iteration=1,
            toolUseId="call_1",
            data={"type": "status", "message": "searching", "token": TOKEN},
        ),
        event(
            "tool.result",
            15,
            iteration=1,
            result={
                **call,
                "outputText": "found it",
                "output": {"hits": 1},
                "isError": False,
                "completedAt": "2026-01-01T00:00:02.000Z",
                "durationMs": 1000,
            },
        ),
        event(
            "conversation.compacted",
            16,
            iteration=2,
            trigger="auto",
            tokenEstimateBefore=900,
            tokenEstimateAfter=300,
            messagesSummarized=4,
            preservedMessages=2,
            clearedToolResults=1,
        ),
        event(
            "session.compacted", 17, sessionId="s-1", trigger="manual", result={"summary": "short"}
        ),
        event("request.interrupted", 18, iteration=2, retry=1, maxRetries=3, reason="rate limit"),
        event("checkpoint.created", 19, sessionId="s-1", checkpointId="cp-1"),
        event("sandbox.applied", 20, capability="fs"),
        event("hook.lifecycle", 21, lifecycleEvent="stop", outputs=[]),
        event("workflow.log", 22, message="step ok"),
        event(
            "error",
            23,
            error={
                "message": f"upstream said password={PASSWORD}",
                "code": "UPSTREAM",
                "stack": STACK,
            },
        ),
        event(
            "response.completed",
            24,
            result={
                "runId": run_id,
                "model": "claude-sonnet",
                "text": "hello world",
                "message": {"role": "assistant"},
                "messages": [],
                "requests": [],
                "toolCalls": [],
                "startedAt": "2026-01-01T00:00:00.000Z",
                "completedAt": "2026-01-01T00:00:03.000Z",
                "usage": {"requests": 2, "inputTokens": 30, "outputTokens": 10},
            },
        ),
    ]


def wire(events: list[SurfaceSemanticEvent] | tuple[SurfaceSemanticEvent, ...]) -> str:
    return json.dumps([surface_event_to_json(event) for event in events], sort_keys=True)


class Stream:
    """Deterministic RunEvents for one run (and its children)."""

    def __init__(self, run_id: str = "run-1", *, ids: SequentialIdFactory | None = None) -> None:
        self.ids = ids if ids is not None else SequentialIdFactory()
        self.clock = ManualClock()
        self.context = create_root_trace_context(run_id, ids=self.ids)
        self.sequencer = RunEventSequencer(self.context, ids=self.ids, clock=self.clock)

    def child(self, run_id: str) -> Stream:
        child = Stream.__new__(Stream)
        child.ids = self.ids
        child.clock = self.clock
        child.context = create_child_trace_context(run_id, parent=self.context, ids=self.ids)
        child.sequencer = RunEventSequencer(child.context, ids=self.ids, clock=self.clock)
        return child

    def next(self, kind: str, data: Any = None) -> RunEvent:
        return self.sequencer.next(kind, data if data is not None else {})


def context_of(event: RunEvent) -> TraceContext:
    return TraceContext(
        run_id=event.run_id,
        trace_id=event.trace_id,
        span_id=event.span_id,
        parent_span_id=event.parent_span_id,
        parent_run_id=event.parent_run_id,
    )


def walk_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, child in value.items():  # pyright: ignore[reportUnknownVariableType]
            yield str(key)  # pyright: ignore[reportUnknownArgumentType]
            yield from walk_strings(child)
    elif isinstance(value, list):
        for child in value:  # pyright: ignore[reportUnknownVariableType]
            yield from walk_strings(child)
