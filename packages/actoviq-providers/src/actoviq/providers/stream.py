"""The model stream primitive (spec 02 §2.7, §6.5).

A :class:`ModelStream` is lazy (nothing runs until the first ``__anext__`` or
:meth:`ModelStream.final_response`), has exactly one consumer, and ends every successful run with
exactly one ``ResponseCompleted``. Use it as an async context manager so
the provider connection is closed even when the consumer stops early::

    async with provider.stream(request) as stream:
        async for event in stream:
            ...
        response = await stream.final_response()

Leaving the block before completion cancels the stream ("Model stream stopped early.").
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol

import attrs

from actoviq.core import AbortController, AbortSignal
from actoviq.providers._lifecycle import AsyncCloseable, Outcome
from actoviq.providers.errors import (
    ModelCallAbortedError,
    ModelCallTimeoutError,
    StreamConsumedError,
)
from actoviq.providers.types import (
    ModelCallContext,
    ModelResponse,
    ModelStreamEvent,
    ResponseCompleted,
)

__all__ = [
    "ModelStream",
    "StreamMapper",
    "StreamSource",
    "abort_reason",
    "check_call_available",
]

StreamSource = AsyncIterator[Any]
"""Provider events (plain dicts, or ModelStreamEvents for pass-through streams)."""


class StreamMapper(Protocol):
    """Maps provider events to :data:`ModelStreamEvent` s, holding its own state."""

    def map(self, event: Any) -> Sequence[ModelStreamEvent]:
        """Return the events for one provider event (may raise a typed provider error)."""
        ...

    def finalize(self) -> ModelResponse:
        """Build the final response when the source ended without a completion event."""
        ...


def abort_reason(signal: AbortSignal, default: str = "Model call aborted.") -> BaseException:
    """The exception to raise for an aborted ``signal``: its reason, or an AbortError."""
    reason = signal.reason
    if isinstance(reason, BaseException):
        return reason
    return ModelCallAbortedError(default, reason=reason)


def check_call_available(context: ModelCallContext) -> None:
    """Raise before any work when the context is already aborted or past its deadline."""
    if context.signal is not None and context.signal.aborted:
        raise abort_reason(context.signal)
    if context.deadline is not None and context.deadline <= time.time() * 1000:
        raise ModelCallTimeoutError()


StartFn = Callable[[ModelCallContext], Awaitable[StreamSource]]


class ModelStream(AsyncCloseable):
    """A lazy, single-consumer stream of model events with a settled final response.

    Args:
        context: the call context; its ``signal`` aborting cancels the stream with its reason.
        start: called once, on first use, with a context whose signal is the stream's own; runs
            preflight and opens the provider stream (so preflight errors surface on first use).
        mapper: turns provider events into stream events and builds the fallback final response.
    """

    def __init__(
        self,
        *,
        context: ModelCallContext | None,
        start: StartFn,
        mapper: StreamMapper,
    ) -> None:
        self._context = context or ModelCallContext()
        self._start = start
        self._mapper = mapper
        self._controller = AbortController()
        self._source: StreamSource | None = None
        self._queue: deque[ModelStreamEvent] = deque()
        self._consumer_started = False
        self._started = False
        self._finished = False  # source exhausted or failed: no more events
        self._natural_end = False
        self._reader: asyncio.Task[Any] | None = None  # the task suspended in a source read
        self._interrupting = False  # _on_abort cancelled the reader; _read withdraws it
        self._completed_emitted = False
        self._outcome: Outcome[ModelResponse] = Outcome()
        parent = self._context.signal
        self._detach: Callable[[], None] | None = None
        if parent is not None:
            self._detach = parent.add_listener(self._on_parent_abort)
        self._controller.signal.add_listener(self._on_abort)

    # -- control ----------------------------------------------------------------------------------

    @property
    def signal(self) -> AbortSignal:
        """The stream's own signal (aborted by :meth:`cancel` or by the parent signal)."""
        return self._controller.signal

    def cancel(self, reason: object = None) -> None:
        """Abort the stream; readers get ``reason`` (or AbortError "Model stream cancelled.").

        A no-op after completion.
        """
        if self._controller.signal.aborted:
            return
        self._controller.abort(
            reason if reason is not None else ModelCallAbortedError("Model stream cancelled.")
        )

    def _on_parent_abort(self, reason: object) -> None:
        if not self._controller.signal.aborted:
            self._controller.abort(reason)

    async def aclose(self) -> None:
        """Stop the stream: cancels it if unfinished, closes the provider source, settles."""
        if not self._natural_end:
            if not self._controller.signal.aborted and not self._outcome.settled:
                self._controller.abort(ModelCallAbortedError("Model stream stopped early."))
            if not self._outcome.settled:
                self._fail(abort_reason(self._controller.signal, "Model stream stopped early."))
        if self._reader is not None:
            return  # the reader is interrupted by the abort and closes the source itself
        self._finished = True
        await self._close_source()
        self._detach_parent()

    # -- settlement -------------------------------------------------------------------------------

    def _settle(self, response: ModelResponse) -> None:
        self._outcome.resolve(response)

    def _fail(self, error: BaseException) -> None:
        self._outcome.fail(error)

    def _detach_parent(self) -> None:
        if self._detach is not None:
            self._detach()
            self._detach = None

    async def _close_source(self) -> None:
        source, self._source = self._source, None
        closer = getattr(source, "aclose", None)
        if closer is not None:
            await closer()

    async def final_response(self) -> ModelResponse:
        """The final response; drains the stream first when nobody iterated it yet.

        Returns the same object on every call. Raises the stream's error (capability error,
        provider error, abort reason) when it failed.
        """
        if not self._consumer_started:
            async for _ in self:
                pass
        return await self._outcome.wait()

    # -- iteration --------------------------------------------------------------------------------

    def __aiter__(self) -> ModelStream:
        if self._consumer_started:
            raise StreamConsumedError("Model streams are single-consumer iterables.")
        self._consumer_started = True
        return self

    async def __anext__(self) -> ModelStreamEvent:
        try:
            while True:
                if self._queue:
                    return self._queue.popleft()
                if self._finished:
                    raise StopAsyncIteration
                await self._pump()
        except StopAsyncIteration:
            raise
        except BaseException as error:
            if isinstance(error, asyncio.CancelledError):
                self._fail(ModelCallAbortedError("Model stream cancelled.", reason=error))
                self.cancel()
            else:
                self._fail(error)
            self._finished = True
            await self._close_source()
            self._detach_parent()
            raise

    async def _pump(self) -> None:
        """Read one provider event (or the end) and queue what it maps to."""
        signal = self._controller.signal
        if signal.aborted:
            raise abort_reason(signal, "Model stream aborted.")
        if not self._started:
            self._started = True
            self._source = await self._start(attrs.evolve(self._context, signal=signal))
        assert self._source is not None
        try:
            event = await self._read(self._source)
        except StopAsyncIteration:
            self._end()
            return
        for mapped in self._mapper.map(event):
            if isinstance(mapped, ResponseCompleted):
                if self._completed_emitted:
                    continue  # exactly one completion (02 §6.5)
                self._completed_emitted = True
                self._settle(mapped.response)
            self._queue.append(mapped)

    def _end(self) -> None:
        response = self._outcome.value
        if response is None or not self._completed_emitted:
            response = self._mapper.finalize()
        self._settle(response)
        if not self._completed_emitted:
            self._completed_emitted = True
            self._queue.append(ResponseCompleted(response=response))
        self._natural_end = True
        self._finished = True
        self._detach_parent()

    def _on_abort(self, _: object) -> None:
        """Interrupt a read blocked in the provider source by cancelling the consuming task.

        Only a read suspended in another task is interrupted (an abort raised from inside the
        consumer is seen right after the read returns); the resulting ``CancelledError`` is turned
        into the abort reason by :meth:`_read`.
        """
        reader = self._reader
        if reader is None or self._interrupting or reader.done():
            return
        try:
            current = asyncio.current_task()
        except RuntimeError:  # aborted from outside any event loop
            current = None
        if current is reader:
            return
        self._interrupting = True
        reader.cancel()

    async def _read(self, source: StreamSource) -> Any:
        """The next provider event, read directly from the source (no task per event).

        While the read is suspended, :meth:`_on_abort` may cancel this task; that cancellation is
        ours, so it is withdrawn with ``Task.uncancel`` and the abort reason raised instead. A
        cancellation from anyone else (or on top of ours) propagates unchanged.
        """
        signal = self._controller.signal
        task = asyncio.current_task()
        self._reader = task
        try:
            event = await source.__anext__()
        except asyncio.CancelledError:
            if self._interrupting and task is not None:
                self._interrupting = False
                if task.uncancel() == 0:
                    raise abort_reason(signal, "Model stream aborted.") from None
            raise
        finally:
            self._reader = None
        if self._interrupting and task is not None:  # the source swallowed our cancellation
            self._interrupting = False
            task.uncancel()
            raise abort_reason(signal, "Model stream aborted.")
        if signal.aborted:
            raise abort_reason(signal, "Model stream aborted.")
        return event
