"""A deterministic, scripted model provider for tests, examples and the offline demo (D4).

Each call consumes the next scripted turn. A turn can be a :class:`ScriptedTurn` (text, tool calls,
reasoning, streamed deltas, usage, an error, delays), a ready :class:`ModelResponse`, a plain string
(assistant text), an exception (raised by the call) or a callable ``(request) -> turn``. Every call
is recorded in :attr:`ScriptedProvider.calls` (request, context, streaming).

Example:
    >>> from actoviq.core import TextItem, ToolCallItem
    >>> provider = ScriptedProvider(
    ...     turns=[
    ...         ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="lookup", input={"q": "x"})]),
    ...         ScriptedTurn(text="done", stream_deltas=["do", "ne"]),
    ...     ]
    ... )
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs

from actoviq.core import (
    UNSET,
    AbortSignal,
    JsonValue,
    OutputItem,
    ProviderResponseError,
    ReasoningItem,
    StructuredItem,
    TextItem,
    ToolCallItem,
    Unset,
    Usage,
    normalize_usage_delta,
)
from actoviq.providers.base import BaseModelProvider, PreparedCall
from actoviq.providers.capabilities import (
    ALL_CAPABILITIES,
    CapabilitiesSource,
    ModelCapabilities,
)
from actoviq.providers.mapping._common import attach_structured_output
from actoviq.providers.stream import StreamMapper, abort_reason
from actoviq.providers.types import (
    FinishReason,
    ModelCallContext,
    ModelRequest,
    ModelResponse,
    ModelStreamEvent,
    ReasoningDelta,
    ResponseCompleted,
    TextDelta,
    ToolCallDelta,
    UsageReport,
)

__all__ = ["ScriptedCall", "ScriptedProvider", "ScriptedTurn", "TurnLike"]


@attrs.frozen(kw_only=True, slots=True)
class ScriptedTurn:
    """One scripted model answer.

    Attributes:
        text: assistant text (streamed as ``stream_deltas`` or as one delta).
        tool_calls: tool calls, in order.
        reasoning: reasoning summary text (a ``ReasoningItem`` owned by the provider).
        output: explicit output items (then ``text``, ``tool_calls`` and ``reasoning`` are unused).
        stream_deltas: text chunks to stream (their concatenation should equal ``text``).
        events: explicit stream events (before the final ``response.completed``).
        usage: a :class:`Usage` or a camelCase usage mapping; ``requests`` defaults to 1.
        finish_reason: defaults to ``tool_calls`` when there are tool calls, else ``stop``.
        structured_output: the parsed structured value (also appended as a structured item).
            Without it, when the request asks for an output schema, ``text`` that parses as
            JSON becomes the structured output, as with the real adapters.
        error: raised instead of answering (after ``error_after_events`` events when streaming).
        error_after_events: how many stream events to yield before raising ``error``.
        delay: seconds to wait before answering (abortable).
        event_delay: seconds to wait between stream events (abortable).
        response_id: the response id (default ``scripted_<n>``).
    """

    text: str | None = None
    tool_calls: Sequence[ToolCallItem] = ()
    reasoning: str | None = None
    output: Sequence[OutputItem] | None = None
    stream_deltas: Sequence[str] | None = None
    events: Sequence[ModelStreamEvent] | None = None
    usage: Usage | Mapping[str, object] | None = None
    finish_reason: FinishReason | None = None
    structured_output: JsonValue | Unset = UNSET
    error: BaseException | None = None
    error_after_events: int = 0
    delay: float = 0.0
    event_delay: float = 0.0
    response_id: str | None = None


TurnLike: TypeAlias = (
    "ScriptedTurn | ModelResponse | str | BaseException | Callable[[ModelRequest], Any]"
)
"""One scripted turn.

A `ScriptedTurn`, a response, text, an exception to raise, or a function of the request.
"""


@attrs.frozen(kw_only=True, slots=True)
class ScriptedCall:
    """A recorded call."""

    request: ModelRequest
    context: ModelCallContext
    streaming: bool


class ScriptedProvider(BaseModelProvider):
    """A provider that answers from a script, deterministically, with declared capabilities.

    Args:
        turns: the script, consumed one turn per call.
        id: provider id (default ``"scripted"``).
        capabilities: declared capabilities (default: everything).
        repeat_last: keep answering with the last turn when the script runs out (otherwise
            :class:`~actoviq.core.ProviderResponseError` ``SCRIPT_EXHAUSTED``).
    """

    def __init__(
        self,
        turns: Sequence[TurnLike] = (),
        *,
        id: str = "scripted",
        capabilities: CapabilitiesSource | None = None,
        default_capabilities: ModelCapabilities = ALL_CAPABILITIES,
        repeat_last: bool = False,
    ) -> None:
        super().__init__(
            id=id, default_capabilities=default_capabilities, capabilities=capabilities
        )
        self._turns: list[TurnLike] = list(turns)
        self._index = 0
        self._repeat_last = repeat_last
        self.calls: list[ScriptedCall] = []

    @property
    def requests(self) -> list[ModelRequest]:
        """The requests received, in order (after preflight, ``model`` resolved)."""
        return [call.request for call in self.calls]

    @property
    def remaining(self) -> int:
        """How many scripted turns are left."""
        return max(0, len(self._turns) - self._index)

    def add_turns(self, *turns: TurnLike) -> None:
        """Append turns to the script."""
        self._turns.extend(turns)

    def _next_turn(self, request: ModelRequest) -> ScriptedTurn | ModelResponse:
        if self._index < len(self._turns):
            turn = self._turns[self._index]
            self._index += 1
        elif self._repeat_last and self._turns:
            turn = self._turns[-1]
        else:
            raise ProviderResponseError(
                f"ScriptedProvider {self.id} has no scripted turn left for call {len(self.calls)}.",
                code="SCRIPT_EXHAUSTED",
                provider_id=self.id,
            )
        if callable(turn) and not isinstance(turn, BaseException):
            turn = turn(request)
        if isinstance(turn, str):
            return ScriptedTurn(text=turn)
        if isinstance(turn, BaseException):
            return ScriptedTurn(error=turn)
        if isinstance(turn, ScriptedTurn | ModelResponse):
            return turn
        raise TypeError(f"Unsupported scripted turn {type(turn).__name__}.")

    def _response(self, turn: ScriptedTurn, prepared: PreparedCall) -> ModelResponse:
        output: list[OutputItem]
        if turn.output is not None:
            output = list(turn.output)
        else:
            output = []
            if turn.reasoning is not None:
                output.append(
                    ReasoningItem(
                        provider=self.id,
                        summary=turn.reasoning,
                        opaque={"type": "scripted_reasoning", "text": turn.reasoning},
                    )
                )
            if turn.text is not None:
                output.append(TextItem(role="assistant", text=turn.text))
            output.extend(turn.tool_calls)
        structured = turn.structured_output
        if structured is UNSET and turn.output is None and prepared.request.output_schema:
            # Like the real adapters: with a schema, assistant text that parses as JSON is the
            # structured output (so a script can stream JSON text as deltas).
            structured = attach_structured_output(prepared.request, output)
        elif structured is not UNSET:
            schema = prepared.request.output_schema
            output.append(
                StructuredItem(
                    value=structured,
                    schema_name=schema.name if schema is not None else None,
                )
            )
        finish: FinishReason = turn.finish_reason or (
            "tool_calls" if any(isinstance(item, ToolCallItem) for item in output) else "stop"
        )
        return ModelResponse(
            id=turn.response_id or f"scripted_{len(self.calls)}",
            model=prepared.model,
            output=output,
            finish_reason=finish,
            usage=_usage(turn.usage),
            structured_output=structured,
        )

    async def _generate(self, prepared: PreparedCall, context: ModelCallContext) -> ModelResponse:
        self.calls.append(ScriptedCall(request=prepared.request, context=context, streaming=False))
        turn = self._next_turn(prepared.request)
        if isinstance(turn, ModelResponse):
            return attrs.evolve(turn, model=prepared.model)
        await _sleep(turn.delay, context.signal)
        if turn.error is not None:
            raise turn.error
        return self._response(turn, prepared)

    def _stream_mapper(self, prepared: PreparedCall) -> StreamMapper:
        return _ScriptedMapper()

    async def _open_stream(
        self, prepared: PreparedCall, context: ModelCallContext
    ) -> AsyncIterator[Any]:
        self.calls.append(ScriptedCall(request=prepared.request, context=context, streaming=True))
        turn = self._next_turn(prepared.request)
        return self._events(turn, prepared, context)

    async def _events(
        self, turn: ScriptedTurn | ModelResponse, prepared: PreparedCall, context: ModelCallContext
    ) -> AsyncIterator[ModelStreamEvent]:
        if isinstance(turn, ModelResponse):
            response = attrs.evolve(turn, model=prepared.model)
            for event in _default_events(response):
                yield event
            yield ResponseCompleted(response=response)
            return
        await _sleep(turn.delay, context.signal)
        if turn.error is not None and turn.error_after_events <= 0:
            raise turn.error
        response = self._response(turn, prepared)
        events = list(turn.events) if turn.events is not None else _turn_events(turn, response)
        for count, event in enumerate(events, start=1):
            if count > 1:
                if turn.event_delay > 0:
                    await _sleep(turn.event_delay, context.signal)
                else:
                    # Like a network stream, let other tasks (the stream's consumer) run between
                    # events: one event-loop turn, no timer.
                    await asyncio.sleep(0)
            yield event
            if turn.error is not None and count >= turn.error_after_events:
                raise turn.error
        if turn.error is not None:
            raise turn.error
        yield ResponseCompleted(response=response)


class _ScriptedMapper:
    def __init__(self) -> None:
        self._last: ModelResponse | None = None

    def map(self, event: Any) -> list[ModelStreamEvent]:
        return [event]

    def finalize(self) -> ModelResponse:  # pragma: no cover - scripted streams always complete
        raise ProviderResponseError("Scripted stream ended without a response.")


_ONE_REQUEST = Usage(requests=1)  # frozen, so every unscripted turn may share it


def _usage(value: Usage | Mapping[str, object] | None) -> Usage:
    if value is None:
        return _ONE_REQUEST
    if isinstance(value, Usage):
        return value
    usage = normalize_usage_delta(value)
    return usage if "requests" in value else attrs.evolve(usage, requests=1)


def _turn_events(turn: ScriptedTurn, response: ModelResponse) -> list[ModelStreamEvent]:
    events: list[ModelStreamEvent] = []
    if turn.reasoning is not None and turn.output is None:
        events.append(ReasoningDelta(delta=turn.reasoning, output_index=0))
    if turn.stream_deltas is not None:
        events.extend(TextDelta(delta=delta, output_index=0) for delta in turn.stream_deltas)
    elif turn.text:
        events.append(TextDelta(delta=turn.text, output_index=0))
    for index, call in enumerate(
        item for item in response.output if isinstance(item, ToolCallItem)
    ):
        events.append(
            ToolCallDelta(
                call_id=call.id,
                name=call.name,
                arguments_delta=json.dumps(call.input, separators=(",", ":"), ensure_ascii=False),
                output_index=index,
            )
        )
    if isinstance(response.usage, Usage):
        events.append(UsageReport(usage=response.usage))
    return events


def _default_events(response: ModelResponse) -> list[ModelStreamEvent]:
    text = response.text
    return [TextDelta(delta=text, output_index=0)] if text else []


async def _sleep(seconds: float, signal: AbortSignal | None) -> None:
    """Sleep, but wake and raise the abort reason when ``signal`` aborts."""
    if signal is not None and signal.aborted:
        raise abort_reason(signal)
    if seconds <= 0:
        return
    if signal is None:
        await asyncio.sleep(seconds)
        return
    loop = asyncio.get_running_loop()
    woke: asyncio.Future[None] = loop.create_future()

    def on_abort(_: object) -> None:
        if not woke.done():
            woke.set_result(None)

    remove = signal.add_listener(on_abort)
    handle = loop.call_later(seconds, lambda: woke.done() or woke.set_result(None))
    try:
        await woke
    finally:
        handle.cancel()
        remove()
    if signal.aborted:
        raise abort_reason(signal)
