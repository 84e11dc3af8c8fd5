"""``OpenTelemetrySink``: runs as GenAI-semantic-convention spans (decision D6, spec 03 §8.3 S9).

One ``invoke_agent {agent}`` span per run, a ``chat {model}`` child per model call and an
``execute_tool {tool}`` child per tool call, built from the envelope's run tree: a child run's span
is parented to its parent run's span (or, if that run is not open in this sink, to a remote parent
from ``traceId``/``parentSpanId``); a root run nests under the host's active span (``contextvars``).

Only ``opentelemetry-api`` is used; the host chooses the SDK, its span processor and exporter.
Ending a span runs the host's span processors synchronously, so production hosts should use a
``BatchSpanProcessor`` (bounded queue, its own export timeout) rather than a simple processor.
Attributes are primitives (strings are text-redacted and truncated); message content (deltas,
provider events, unknown event data) is omitted unless ``capture_content=True``; orchestration
events keep their ids, statuses and durations as span-event attributes. Every buffer is
bounded: open runs, open spans per run, span events per span and remembered event ids.

Example:
    >>> from opentelemetry.trace import NoOpTracerProvider
    >>> sink = OpenTelemetrySink(tracer_provider=NoOpTracerProvider())
    >>> sink.id
    'opentelemetry'
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final, cast

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import (
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
    TracerProvider,
)

from actoviq.events.envelope import RunEvent
from actoviq.events.errors import EventDispatcherClosedError, EventOrderError, EventValidationError
from actoviq.events.redaction import RedactionPolicy, Redactor
from actoviq.events.types import is_terminal_event_type

__all__ = ["INSTRUMENTATION_NAME", "OpenTelemetrySink"]

INSTRUMENTATION_NAME: Final = "actoviq.events"
"""The OpenTelemetry instrumentation scope name of the spans Actoviq emits."""

# The non-content fields of orchestration events, recorded as span-event attributes.
# fmt: off
_ORCHESTRATION_KEYS: Final = frozenset((
    "graphId", "graphRunId", "nodeId", "attempt", "attempts", "durationMs", "childRunId",
    "childRunIds", "agentId", "status", "reason", "kind", "failurePolicy", "handoffId",
    "fromAgentId", "toAgentId", "iteration", "parentGraphRunId", "parentNodeId",
))
# fmt: on
_Primitive = str | bool | int | float
_AttributeValue = _Primitive | Sequence[str] | Sequence[int] | Sequence[float] | Sequence[bool]


def _ns(timestamp: str) -> int | None:
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return int(moment.timestamp() * 1_000_000) * 1000


def _split_model(model: object) -> tuple[str | None, str | None]:
    """``"openai:gpt-x"`` or ``{provider, model}`` → (provider, model)."""
    if isinstance(model, str):
        provider, sep, name = model.partition(":")
        return (provider, name) if sep and provider and name else (None, model or None)
    if isinstance(model, Mapping):
        mapping = cast(Mapping[str, object], model)
        provider = mapping.get("provider", mapping.get("providerId"))
        name = mapping.get("model", mapping.get("modelId"))
        return (
            provider if isinstance(provider, str) else None,
            name if isinstance(name, str) else None,
        )
    return None, None


class _SpanState:
    """One open span and its bounded event count."""

    __slots__ = ("dropped_events", "events", "span")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.events = 0
        self.dropped_events = 0


class _RunState:
    __slots__ = ("chat", "last_sequence", "run", "tools")

    def __init__(self, run: _SpanState, sequence: int) -> None:
        self.run = run
        self.last_sequence = sequence
        self.chat: _SpanState | None = None
        self.tools: OrderedDict[str, _SpanState] = OrderedDict()


class OpenTelemetrySink:
    """Turns run events into OpenTelemetry spans (GenAI semantic conventions).

    Args:
        tracer_provider: where spans go (default: the global provider).
        tracer: use this tracer instead of one from ``tracer_provider``.
        id: the sink id (default ``"opentelemetry"``).
        capture_content: also record message content (deltas, provider events, unknown event
            data) as span events; off by default (D6).
        redactor: scans every string attribute (default: text scanning on).
        max_open_runs: open runs kept; the oldest is ended as incomplete beyond this.
        max_open_spans_per_run: open tool spans per run; the oldest is ended beyond this.
        max_span_events: span events recorded per span; later ones are counted as dropped.
        max_seen_event_ids: remembered event ids for dedupe (FIFO window).
        max_attribute_length: string attributes are truncated to this many characters.
        export_timeout: seconds :meth:`force_flush` / :meth:`aclose` wait for the provider.

    Raises:
        EventValidationError: a bound is not positive.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        tracer: Tracer | None = None,
        id: str = "opentelemetry",
        capture_content: bool = False,
        redactor: Redactor | None = None,
        max_open_runs: int = 1024,
        max_open_spans_per_run: int = 256,
        max_span_events: int = 128,
        max_seen_event_ids: int = 8192,
        max_attribute_length: int = 4096,
        export_timeout: float = 5.0,
    ) -> None:
        bounds = {
            "max_open_runs": max_open_runs,
            "max_open_spans_per_run": max_open_spans_per_run,
            "max_span_events": max_span_events,
            "max_seen_event_ids": max_seen_event_ids,
            "max_attribute_length": max_attribute_length,
        }
        for name, value in bounds.items():
            if type(value) is not int or value < 1:
                raise EventValidationError(f"OpenTelemetrySink {name} must be a positive int.")
        if not export_timeout > 0:
            raise EventValidationError("OpenTelemetrySink export_timeout must be positive.")
        self.id = id
        self._provider = tracer_provider
        self._tracer = tracer or trace.get_tracer(
            INSTRUMENTATION_NAME, tracer_provider=tracer_provider
        )
        self._capture = capture_content
        self._redactor = redactor or Redactor(RedactionPolicy(scan_text=True))
        self._max_runs = max_open_runs
        self._max_spans = max_open_spans_per_run
        self._max_events = max_span_events
        self._max_length = max_attribute_length
        self._export_timeout = export_timeout
        self._runs: OrderedDict[str, _RunState] = OrderedDict()
        # Spans of runs that already ended, so a child started after its parent ended (a
        # handoff target, a resumed child) still nests under it in the same trace.
        self._ended: OrderedDict[str, SpanContext] = OrderedDict()
        self._seen: set[str] = set()
        self._seen_order: deque[str] = deque()
        self._max_seen = max_seen_event_ids
        self._evicted_runs = 0
        self._closed = False

    @property
    def open_runs(self) -> int:
        """Runs whose span is still open."""
        return len(self._runs)

    @property
    def evicted_runs(self) -> int:
        """Runs ended early because ``max_open_runs`` was exceeded."""
        return self._evicted_runs

    # -- attributes ---------------------------------------------------------------------------

    def _text(self, value: str) -> str:
        text = self._redactor.redact_text(value)
        if len(text) > self._max_length:
            return text[: self._max_length - 1] + "…"
        return text

    def _attr(self, value: object) -> _AttributeValue | None:
        """A primitive attribute value, or None to omit."""
        if isinstance(value, bool | int | float):
            return value
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, list | tuple):
            items = cast(Sequence[object], value)
            if items and all(isinstance(item, str) for item in items):
                return [self._text(cast(str, item)) for item in items]
        return None

    def _set(self, span: Span, attributes: Mapping[str, object]) -> None:
        for key, value in attributes.items():
            converted = self._attr(value)
            if converted is not None:
                span.set_attribute(key, converted)

    def _add_event(
        self, state: _SpanState, name: str, attributes: Mapping[str, object], when: int | None
    ) -> None:
        if state.events >= self._max_events:
            state.dropped_events += 1
            return
        state.events += 1
        clean: dict[str, _AttributeValue] = {}
        for key, value in attributes.items():
            converted = self._attr(value)
            if converted is not None:
                clean[key] = converted
        state.span.add_event(name, clean, timestamp=when)

    def _content(self, data: object) -> str:
        return self._text(json.dumps(self._redactor.redact(data), ensure_ascii=False))

    # -- span lifecycle -------------------------------------------------------------------------

    def _end(
        self,
        state: _SpanState,
        when: int | None,
        *,
        incomplete: bool = False,
        status: Status | None = None,
    ) -> None:
        span = state.span
        if state.dropped_events:
            span.set_attribute("actoviq.events.dropped", state.dropped_events)
        if incomplete:
            span.set_attribute("actoviq.incomplete", True)
        if status is not None:
            span.set_status(status)
        span.end(end_time=when)

    def _parent_context(self, event: RunEvent) -> Context | None:
        if event.parent_run_id is not None:
            parent = self._runs.get(event.parent_run_id)
            if parent is not None:
                return trace.set_span_in_context(parent.run.span)
            ended = self._ended.get(event.parent_run_id)
            if ended is not None:
                return trace.set_span_in_context(NonRecordingSpan(ended))
        if event.parent_span_id is not None:
            try:
                remote = SpanContext(
                    trace_id=int(event.trace_id, 16),
                    span_id=int(event.parent_span_id, 16),
                    is_remote=True,
                    trace_flags=TraceFlags(TraceFlags.SAMPLED),
                )
            except ValueError:
                return None
            if remote.is_valid:
                return trace.set_span_in_context(NonRecordingSpan(remote))
        return None  # the host's current context (contextvars)

    def _open_run(self, event: RunEvent, when: int | None) -> _RunState:
        while len(self._runs) >= self._max_runs:
            _, oldest = self._runs.popitem(last=False)
            self._finish_run(oldest, None, incomplete=True)
            self._evicted_runs += 1
        data = event.data if isinstance(event.data, dict) else {}
        agent = data.get("agentId")
        name = f"invoke_agent {self._text(agent)}" if isinstance(agent, str) else "invoke_agent"
        span = self._tracer.start_span(
            name,
            context=self._parent_context(event),
            kind=SpanKind.INTERNAL,
            start_time=when,
        )
        self._set(
            span,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.id": agent,
                "actoviq.run.id": event.run_id,
                "actoviq.run.parent_id": event.parent_run_id,
                "actoviq.trace_id": event.trace_id,
                "actoviq.span_id": event.span_id,
                "actoviq.parent_span_id": event.parent_span_id,
                "actoviq.run.resumed": event.type == "run.resumed",
            },
        )
        state = _RunState(_SpanState(span), event.sequence)
        self._runs[event.run_id] = state
        return state

    def _finish_run(
        self,
        state: _RunState,
        when: int | None,
        *,
        incomplete: bool = False,
        status: Status | None = None,
    ) -> None:
        if state.chat is not None:
            self._end(state.chat, when, incomplete=True)
            state.chat = None
        for tool in state.tools.values():
            self._end(tool, when, incomplete=True)
        state.tools.clear()
        self._end(state.run, when, incomplete=incomplete, status=status)

    def _child(self, state: _RunState, name: str, kind: SpanKind, when: int | None) -> _SpanState:
        span = self._tracer.start_span(
            name,
            context=trace.set_span_in_context(state.run.span),
            kind=kind,
            start_time=when,
        )
        return _SpanState(span)

    # -- write ----------------------------------------------------------------------------------

    async def write(self, event: RunEvent) -> None:
        """Record one event.

        Raises:
            EventOrderError: the run's sequence did not increase.
            EventDispatcherClosedError: the sink was closed.
        """
        self.record(event)

    def record(self, event: RunEvent) -> None:
        """The synchronous body of :meth:`write`."""
        if self._closed:
            raise EventDispatcherClosedError(f'Event sink "{self.id}" is closed.')
        if event.event_id in self._seen:
            return
        state = self._runs.get(event.run_id)
        if state is not None and event.sequence <= state.last_sequence:
            raise EventOrderError(
                f"Run {event.run_id} emitted non-monotonic trace event {event.sequence}."
            )
        self._remember(event.event_id)
        when = _ns(event.timestamp)
        if state is None:
            state = self._open_run(event, when)
        else:
            self._runs.move_to_end(event.run_id)
        state.last_sequence = event.sequence
        data: dict[str, Any] = cast(dict[str, Any], event.data) if type(event.data) is dict else {}
        self._apply(state, event, data, when)
        if is_terminal_event_type(event.type):
            self._runs.pop(event.run_id, None)
            self._remember_ended(event.run_id, state.run.span.get_span_context())
            self._terminal(state, event, data, when)

    def _remember_ended(self, run_id: str, context: SpanContext) -> None:
        ended = self._ended
        ended[run_id] = context
        ended.move_to_end(run_id)
        while len(ended) > self._max_runs:
            ended.popitem(last=False)

    def _remember(self, event_id: str) -> None:
        self._seen.add(event_id)
        self._seen_order.append(event_id)
        while len(self._seen_order) > self._max_seen:
            self._seen.discard(self._seen_order.popleft())

    def _apply(
        self, state: _RunState, event: RunEvent, data: dict[str, Any], when: int | None
    ) -> None:
        kind = event.type
        if kind in ("run.started", "run.resumed"):
            return
        if kind == "model.requested":
            if state.chat is not None:
                self._end(state.chat, when, incomplete=True)
            provider, model = _split_model(data.get("model"))
            name = f"chat {self._text(model)}" if model else "chat"
            chat = self._child(state, name, SpanKind.CLIENT, when)
            self._set(
                chat.span,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": model,
                    "gen_ai.provider.name": provider,
                    "actoviq.turn": data.get("turn"),
                },
            )
            state.chat = chat
        elif kind == "model.completed":
            chat = state.chat
            if chat is not None:
                self._usage(chat.span, data.get("usage"))
                reason = data.get("finishReason")
                if isinstance(reason, str):
                    chat.span.set_attribute("gen_ai.response.finish_reasons", [self._text(reason)])
                self._end(chat, when)
                state.chat = None
        elif kind == "model.response.completed":
            if state.chat is not None:
                self._set(state.chat.span, {"gen_ai.response.id": data.get("responseId")})
        elif kind in ("model.text.delta", "model.reasoning.delta", "model.tool_call.delta"):
            if self._capture and state.chat is not None:
                content = data.get("delta", data.get("argumentsDelta"))
                if "arguments" in data:  # a call's whole arguments, already redacted
                    content = json.dumps(data["arguments"], ensure_ascii=False)
                self._add_event(
                    state.chat,
                    "gen_ai.content.delta",
                    {"actoviq.event.type": kind, "gen_ai.content": content},
                    when,
                )
        elif kind == "tool.started":
            self._tool_started(state, data, when)
        elif kind in ("tool.completed", "tool.failed", "tool.rejected"):
            self._tool_ended(state, kind, data, when)
        elif kind == "session.loaded":
            self._set(state.run.span, {"gen_ai.conversation.id": data.get("sessionId")})
        elif kind in ("model.usage", "session.committed") or is_terminal_event_type(kind):
            return
        else:
            attributes: dict[str, object] = {
                "actoviq.event.id": event.event_id,
                "actoviq.event.sequence": event.sequence,
            }
            if kind.startswith("orchestration."):  # ids and statuses only, never content
                for key in _ORCHESTRATION_KEYS.intersection(data):
                    attributes[f"actoviq.{key}"] = data[key]
            if self._capture:
                attributes["actoviq.event.data"] = self._content(event.data)
            self._add_event(state.run, kind, attributes, when)

    def _usage(self, span: Span, usage: object) -> None:
        if isinstance(usage, dict):
            values = cast(dict[str, object], usage)
            self._set(
                span,
                {
                    "gen_ai.usage.input_tokens": values.get("inputTokens"),
                    "gen_ai.usage.output_tokens": values.get("outputTokens"),
                },
            )

    def _tool_started(self, state: _RunState, data: dict[str, Any], when: int | None) -> None:
        call_id = data.get("callId")
        name = data.get("name")
        key = call_id if isinstance(call_id, str) else f"#{len(state.tools)}"
        while len(state.tools) >= self._max_spans:
            _, oldest = state.tools.popitem(last=False)
            self._end(oldest, when, incomplete=True)
        label = f"execute_tool {self._text(name)}" if isinstance(name, str) else "execute_tool"
        tool = self._child(state, label, SpanKind.INTERNAL, when)
        self._set(
            tool.span,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.type": "function",
                "actoviq.tool.effect": data.get("effect"),
            },
        )
        previous = state.tools.pop(key, None)
        if previous is not None:
            self._end(previous, when, incomplete=True)
        state.tools[key] = tool

    def _tool_ended(
        self, state: _RunState, kind: str, data: dict[str, Any], when: int | None
    ) -> None:
        call_id = data.get("callId")
        tool = state.tools.pop(call_id, None) if isinstance(call_id, str) else None
        if tool is None:  # e.g. a rejection on resume: no tool.started was emitted
            tool = self._child(state, "execute_tool", SpanKind.INTERNAL, when)
            name = data.get("name")
            if isinstance(name, str):
                tool.span.update_name(f"execute_tool {self._text(name)}")
            self._set(
                tool.span,
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": call_id,
                    "gen_ai.tool.type": "function",
                },
            )
        outcome = kind.removeprefix("tool.")
        tool.span.set_attribute("actoviq.tool.outcome", outcome)
        if kind == "tool.failed":
            failure = data.get("failure")
            error_type, message = self._error_parts(failure, "tool_error")
            tool.span.set_attribute("error.type", error_type)
            self._add_event(
                tool,
                "exception",
                {"exception.type": error_type, "exception.message": message},
                when,
            )
            self._end(tool, when, status=Status(StatusCode.ERROR, self._text(message)))
        elif kind == "tool.completed":
            self._end(tool, when, status=Status(StatusCode.OK))
        else:
            self._end(tool, when)

    def _error_parts(self, error: object, default: str) -> tuple[str, str]:
        if isinstance(error, dict):
            values = cast(dict[str, object], error)
            name = values.get("name", values.get("type", values.get("code")))
            message = values.get("message")
            return (
                self._text(name) if isinstance(name, str) else default,
                self._text(message) if isinstance(message, str) else "",
            )
        if isinstance(error, str):
            return default, self._text(error)
        return default, ""

    def _terminal(
        self, state: _RunState, event: RunEvent, data: dict[str, Any], when: int | None
    ) -> None:
        run = state.run.span
        kind = event.type
        status: Status | None = None
        if kind == "run.completed":
            self._usage(run, data.get("usage"))
            self._set(run, {"actoviq.run.status": data.get("status", "completed")})
            status = Status(StatusCode.OK)
        elif kind in ("run.failed", "run.error"):
            error_type, message = self._error_parts(data.get("error"), "run_error")
            self._set(run, {"actoviq.run.status": "failed", "error.type": error_type})
            self._add_event(
                state.run,
                "exception",
                {"exception.type": error_type, "exception.message": message},
                when,
            )
            status = Status(StatusCode.ERROR, message or kind)
        elif kind == "run.cancelled":
            self._set(
                run, {"actoviq.run.status": "cancelled", "actoviq.run.reason": data.get("reason")}
            )
        elif kind == "run.interrupted":
            self._set(
                run,
                {
                    "actoviq.run.status": "interrupted",
                    "actoviq.run.interruption_id": data.get("interruptionId"),
                    "actoviq.run.reason": data.get("reason"),
                },
            )
        else:
            self._set(run, {"actoviq.run.status": kind})
        self._finish_run(state, when, status=status)

    # -- flush and close --------------------------------------------------------------------------

    async def force_flush(self) -> bool:
        """Ask the provider to export buffered spans, waiting at most ``export_timeout``.

        Returns:
            True when the provider flushed in time (or has nothing to flush).
        """
        provider = self._provider if self._provider is not None else trace.get_tracer_provider()
        flush = getattr(provider, "force_flush", None)
        if not callable(flush):
            return True
        timeout_ms = int(self._export_timeout * 1000)
        try:
            async with asyncio.timeout(self._export_timeout + 0.5):
                result = await asyncio.to_thread(flush, timeout_ms)
        except TimeoutError:
            return False
        return result is not False

    async def aclose(self) -> None:
        """End every open span as incomplete, then flush (bounded by ``export_timeout``)."""
        if self._closed:
            return
        self._closed = True
        while self._runs:
            _, state = self._runs.popitem(last=False)
            self._finish_run(state, None, incomplete=True)
        await self.force_flush()
