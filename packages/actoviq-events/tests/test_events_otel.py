from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from actoviq.core import JsonValue
from actoviq.events import (
    EventDispatcher,
    EventDispatcherClosedError,
    EventEmitter,
    EventOrderError,
    EventValidationError,
    ManualClock,
    OpenTelemetrySink,
    RunEvent,
    SequentialIdFactory,
    TraceContext,
    create_child_trace_context,
    create_root_trace_context,
    default_processors,
)

USAGE: dict[str, JsonValue] = {"requests": 1, "inputTokens": 12, "outputTokens": 7}


@pytest.fixture
def otel() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    index: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        index.setdefault(span.name, []).append(span)
    return index


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _span_id(span: ReadableSpan) -> int:
    context = span.get_span_context()
    assert context is not None
    return context.span_id


async def _emit_tool_run(emitter: EventEmitter, *, extra: dict[str, Any] | None = None) -> None:
    await emitter.emit("run.started", {"agentId": "weather", **(extra or {})})
    await emitter.emit("model.requested", {"turn": 1, "model": "openai:gpt-test"})
    await emitter.emit("model.text.delta", {"delta": "Let me check", "outputIndex": 0})
    await emitter.emit(
        "model.response.completed", {"responseId": "resp_1", "finishReason": "tool_calls"}
    )
    await emitter.emit("model.completed", {"turn": 1, "finishReason": "tool_calls", "usage": USAGE})
    await emitter.emit(
        "tool.started", {"callId": "call_1", "name": "get_weather", "effect": "read"}
    )
    await emitter.emit("tool.completed", {"callId": "call_1", "name": "get_weather"})
    await emitter.emit("model.requested", {"turn": 2, "model": "openai:gpt-test"})
    await emitter.emit("model.completed", {"turn": 2, "finishReason": "stop", "usage": USAGE})
    await emitter.emit("run.completed", {"status": "completed", "usage": USAGE})


async def test_synthetic_run_builds_the_genai_span_tree(
    otel: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = otel
    ids = SequentialIdFactory()
    sink = OpenTelemetrySink(tracer_provider=provider)
    async with EventDispatcher(default_processors(), [sink]) as dispatcher:
        emitter = EventEmitter(
            create_root_trace_context("run-1", ids=ids), dispatcher, ids=ids, clock=ManualClock()
        )
        await _emit_tool_run(emitter)
        assert dispatcher.failures == ()
    spans = exporter.get_finished_spans()
    assert len(spans) == 4
    names = _by_name(spans)
    assert sorted(names) == ["chat gpt-test", "execute_tool get_weather", "invoke_agent weather"]
    run = names["invoke_agent weather"][0]
    chats = sorted(names["chat gpt-test"], key=lambda span: span.start_time or 0)
    tool = names["execute_tool get_weather"][0]
    assert len(chats) == 2
    assert run.parent is None
    for child in (*chats, tool):
        assert _parent_id(child) == _span_id(run)
        assert child.context is not None and run.context is not None
        assert child.context.trace_id == run.context.trace_id
    assert run.kind == SpanKind.INTERNAL
    assert chats[0].kind == SpanKind.CLIENT
    assert run.status.status_code == StatusCode.OK
    assert tool.status.status_code == StatusCode.OK
    run_attributes = dict(run.attributes or {})
    assert run_attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run_attributes["gen_ai.agent.id"] == "weather"
    assert run_attributes["actoviq.run.id"] == "run-1"
    assert run_attributes["actoviq.run.status"] == "completed"
    assert run_attributes["gen_ai.usage.input_tokens"] == 12
    first = dict(chats[0].attributes or {})
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == "gpt-test"
    assert first["gen_ai.provider.name"] == "openai"
    assert first["gen_ai.response.id"] == "resp_1"
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert first["gen_ai.usage.input_tokens"] == 12
    assert first["gen_ai.usage.output_tokens"] == 7
    assert first["actoviq.turn"] == 1
    assert dict(chats[1].attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    tool_attributes = dict(tool.attributes or {})
    assert tool_attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool_attributes["gen_ai.tool.name"] == "get_weather"
    assert tool_attributes["gen_ai.tool.call.id"] == "call_1"
    assert tool_attributes["actoviq.tool.effect"] == "read"
    # Timing comes from the envelope timestamps (ManualClock steps 1 ms per event).
    assert run.start_time == 1767225600000000000
    assert run.end_time == run.start_time + 9_000_000
    assert chats[0].start_time is not None and tool.start_time is not None
    assert chats[0].start_time < tool.start_time
    # Content is omitted by default: the text delta became nothing.
    for span in spans:
        assert not span.events
        for value in (span.attributes or {}).values():
            assert "Let me check" not in str(value)
    for value in run_attributes.values():
        assert isinstance(value, str | bool | int | float | tuple)


async def test_content_is_recorded_only_when_opted_in(
    otel: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = otel
    ids = SequentialIdFactory()
    sink = OpenTelemetrySink(tracer_provider=provider, capture_content=True)
    async with EventDispatcher(default_processors(), [sink]) as dispatcher:
        emitter = EventEmitter(create_root_trace_context("run-c", ids=ids), dispatcher, ids=ids)
        await emitter.emit("run.started", {"agentId": "a"})
        await emitter.emit("custom.thing", {"note": "hello", "api_key": "sk-test-CANARYOTEL1"})
        await _emit_tool_run_tail(emitter)
    names = _by_name(exporter.get_finished_spans())
    chat = names["chat m"][0]
    assert [event.name for event in chat.events] == ["gen_ai.content.delta"]
    assert dict(chat.events[0].attributes or {})["gen_ai.content"] == "streamed text"
    run = names["invoke_agent a"][0]
    custom = [event for event in run.events if event.name == "custom.thing"]
    data = str(dict(custom[0].attributes or {})["actoviq.event.data"])
    assert "hello" in data
    assert "CANARY" not in data


async def _emit_tool_run_tail(emitter: EventEmitter) -> None:
    await emitter.emit("model.requested", {"turn": 1, "model": "m"})
    await emitter.emit("model.text.delta", {"delta": "streamed text"})
    await emitter.emit("model.completed", {"turn": 1, "finishReason": "stop", "usage": USAGE})
    await emitter.emit("run.completed", {"status": "completed", "usage": USAGE})


async def test_child_runs_link_to_the_parent_span(
    otel: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = otel
    ids = SequentialIdFactory()
    sink = OpenTelemetrySink(tracer_provider=provider)
    root_context = create_root_trace_context("root", ids=ids)
    child_context = create_child_trace_context("child", parent=root_context, ids=ids)
    async with EventDispatcher([], [sink]) as dispatcher:
        root = EventEmitter(root_context, dispatcher, ids=ids)
        child = EventEmitter(child_context, dispatcher, ids=ids)
        await root.emit("run.started", {"agentId": "lead"})
        await child.emit("run.started", {"agentId": "helper"})
        await child.emit("run.failed", {"error": {"name": "RunError", "message": "boom"}})
        await root.emit("run.completed", {"status": "completed", "usage": USAGE})
    names = _by_name(exporter.get_finished_spans())
    lead = names["invoke_agent lead"][0]
    helper = names["invoke_agent helper"][0]
    assert _parent_id(helper) == _span_id(lead)
    assert helper.status.status_code == StatusCode.ERROR
    assert dict(helper.attributes or {})["error.type"] == "RunError"
    assert dict(helper.attributes or {})["actoviq.run.parent_id"] == "root"
    assert [event.name for event in helper.events] == ["exception"]


async def test_orphan_child_run_uses_a_remote_parent_from_the_envelope(
    otel: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = otel
    parent = TraceContext(run_id="remote-root", trace_id="ab" * 16, span_id="cd" * 8)
    context = create_child_trace_context("child", parent=parent, ids=SequentialIdFactory())
    sink = OpenTelemetrySink(tracer_provider=provider)
    async with EventDispatcher([], [sink]) as dispatcher:
        emitter = EventEmitter(context, dispatcher)
        await emitter.emit("run.started", {"agentId": "helper"})
        await emitter.emit("run.cancelled", {"reason": "stop"})
    (span,) = exporter.get_finished_spans()
    assert span.context is not None
    assert span.context.trace_id == int("ab" * 16, 16)
    assert _parent_id(span) == int("cd" * 8, 16)
    assert dict(span.attributes or {})["actoviq.run.status"] == "cancelled"
    assert span.status.status_code == StatusCode.UNSET


async def test_root_run_nests_under_the_hosts_active_span(
    otel: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = otel
    tracer = provider.get_tracer("host")
    sink = OpenTelemetrySink(tracer_provider=provider)
    async with EventDispatcher([], [sink]) as dispatcher:
        emitter = EventEmitter(create_root_trace_context("r"), dispatcher)
        with tracer.start_as_current_span("http request") as host:
            await emitter.emit("run.started", {"agentId": "a"})
        await emitter.emit("run.completed", {"status": "completed", "usage": USAGE})
    names = _by_name(exporter.get_finished_spans())
    assert _parent_id(names["invoke_agent a"][0]) == host.get_span_context().span_id


async def test_tool_failure_rejection_and_interruption(
    otel: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = otel
    sink = OpenTelemetrySink(tracer_provider=provider)
    async with EventDispatcher(default_processors(), [sink]) as dispatcher:
        emitter = EventEmitter(create_root_trace_context("r"), dispatcher)
        await emitter.emit("run.started", {"agentId": "a"})
        await emitter.emit("tool.started", {"callId": "c1", "name": "fetch", "effect": "read"})
        failure = {"name": "ToolExecutionError", "message": "GET https://u:pw@x failed"}
        await emitter.emit("tool.failed", {"callId": "c1", "name": "fetch", "failure": failure})
        await emitter.emit("tool.rejected", {"callId": "c2", "name": "send_email"})
        await emitter.emit("tool.started", {"callId": "c3", "name": "slow", "effect": "read"})
        await emitter.emit("run.interrupted", {"interruptionId": "r:c4", "reason": "approval"})
    names = _by_name(exporter.get_finished_spans())
    failed = names["execute_tool fetch"][0]
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.status.description is not None
    assert "pw" not in failed.status.description
    assert dict(failed.attributes or {})["error.type"] == "ToolExecutionError"
    rejected = names["execute_tool send_email"][0]
    assert dict(rejected.attributes or {})["actoviq.tool.outcome"] == "rejected"
    unfinished = names["execute_tool slow"][0]
    assert dict(unfinished.attributes or {})["actoviq.incomplete"] is True
    run = names["invoke_agent a"][0]
    assert dict(run.attributes or {})["actoviq.run.status"] == "interrupted"


def _event(
    sequence: int, type: str, data: JsonValue, *, run_id: str = "r", event_id: str = ""
) -> RunEvent:
    return RunEvent(
        event_id=event_id or f"{run_id}-{sequence}",
        sequence=sequence,
        run_id=run_id,
        trace_id="a" * 32,
        span_id="b" * 16,
        type=type,
        timestamp="2026-01-01T00:00:00.000Z",
        data=data,
    )


async def test_order_dedupe_bounds_and_close(
    otel: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = otel
    sink = OpenTelemetrySink(
        tracer_provider=provider,
        max_open_runs=2,
        max_open_spans_per_run=1,
        max_span_events=1,
        max_seen_event_ids=4,
    )
    await sink.write(_event(1, "run.started", {"agentId": "a"}))
    await sink.write(_event(1, "run.started", {"agentId": "a"}))  # duplicate id: ignored
    with pytest.raises(EventOrderError, match="non-monotonic"):
        await sink.write(_event(1, "custom", {}, event_id="other"))
    await sink.write(_event(2, "tool.started", {"callId": "c1", "name": "t1"}))
    await sink.write(_event(3, "tool.started", {"callId": "c2", "name": "t2"}))  # evicts c1
    await sink.write(_event(4, "custom.one", {}))
    await sink.write(_event(5, "custom.two", {}))  # over max_span_events: counted
    await sink.write(_event(1, "run.started", {"agentId": "b"}, run_id="r2"))
    await sink.write(_event(1, "run.started", {"agentId": "c"}, run_id="r3"))  # evicts run r
    assert sink.evicted_runs == 1
    assert sink.open_runs == 2
    names = _by_name(exporter.get_finished_spans())
    assert dict(names["execute_tool t1"][0].attributes or {})["actoviq.incomplete"] is True
    run = names["invoke_agent a"][0]
    assert dict(run.attributes or {})["actoviq.events.dropped"] == 1
    assert dict(run.attributes or {})["actoviq.incomplete"] is True
    await sink.aclose()
    await sink.aclose()
    assert sink.open_runs == 0
    assert len(_by_name(exporter.get_finished_spans())["invoke_agent c"]) == 1
    with pytest.raises(EventDispatcherClosedError):
        await sink.write(_event(9, "custom", {}))


def test_bounds_are_validated() -> None:
    with pytest.raises(EventValidationError):
        OpenTelemetrySink(max_open_runs=0)
    with pytest.raises(EventValidationError):
        OpenTelemetrySink(export_timeout=0)


class HangingProvider(trace.NoOpTracerProvider):
    def __init__(self) -> None:
        self.release = threading.Event()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self.release.wait(5)
        return True


async def test_export_timeout_bounds_flush() -> None:
    provider = HangingProvider()
    sink = OpenTelemetrySink(tracer_provider=provider, export_timeout=0.01)
    try:
        assert await sink.force_flush() is False
    finally:
        provider.release.set()
    fine = OpenTelemetrySink(tracer_provider=TracerProvider())
    assert await fine.force_flush() is True


async def test_a_child_that_starts_after_its_parent_ended_joins_the_parents_trace(
    otel: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    # A handoff target starts after the run that handed off completed: its span must still
    # nest under that run's span (the root's trace id is the SDK's, not the envelope's).
    provider, exporter = otel
    ids = SequentialIdFactory()
    sink = OpenTelemetrySink(tracer_provider=provider)
    async with EventDispatcher(default_processors(), [sink]) as dispatcher:
        root = create_root_trace_context("source", ids=ids)
        source = EventEmitter(root, dispatcher, ids=ids, clock=ManualClock())
        await source.emit("run.started", {"agentId": "triage"})
        await source.emit("run.completed", {"status": "completed", "usage": USAGE})
        target = EventEmitter(
            create_child_trace_context("target", parent=root, ids=ids),
            dispatcher,
            ids=ids,
            clock=ManualClock(),
        )
        await target.emit("run.started", {"agentId": "billing"})
        await target.emit("run.completed", {"status": "completed", "usage": USAGE})
    names = _by_name(exporter.get_finished_spans())
    triage = names["invoke_agent triage"][0]
    billing = names["invoke_agent billing"][0]
    assert _parent_id(billing) == _span_id(triage)
    assert billing.context is not None and triage.context is not None
    assert billing.context.trace_id == triage.context.trace_id
