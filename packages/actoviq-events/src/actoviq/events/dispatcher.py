"""Processors → sinks: the ``EventDispatcher`` (spec 03 §5.3, §5.7, §8.4).

Processors run sequentially and may rewrite or drop (return ``None``) an event; sinks are then
written sequentially, in order, each awaited under its own timeout. In ``"isolate"`` mode (the
default) a failing or hanging sink is reported through ``on_failure`` and :attr:`failures` and the
next sinks still receive the event; a failing ordinary processor leaves the event unchanged. A
*fail-closed* processor (the redaction processor) that fails drops the event instead: it is never
delivered unredacted. In ``"raise"`` mode every failure propagates to the caller.

Example:
    >>> import asyncio
    >>> from actoviq.events import InMemoryEventSink, RedactionProcessor
    >>> async def demo(event):
    ...     sink = InMemoryEventSink()
    ...     async with EventDispatcher([RedactionProcessor()], [sink]) as dispatcher:
    ...         await dispatcher.dispatch(event)
    ...     return sink.events
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Final, Literal, Protocol, TypeVar, cast, runtime_checkable

import attrs

from actoviq.core import ActoviqError
from actoviq.events.envelope import RunEvent
from actoviq.events.errors import (
    EventDispatcherClosedError,
    EventSinkTimeoutError,
    EventValidationError,
    RedactionError,
)
from actoviq.events.redaction import RedactionPolicy, RedactionProcessor, Redactor

__all__ = [
    "DEFAULT_SINK_TIMEOUT",
    "DeliveryFailure",
    "EventDispatcher",
    "EventProcessor",
    "EventSink",
    "FailureMode",
    "FailureStage",
    "default_processors",
]

DEFAULT_SINK_TIMEOUT: Final = 10.0
"""Seconds a sink's ``write`` (or an async processor) may take before it is reported."""

_T = TypeVar("_T")

FailureMode = Literal["isolate", "raise"]
FailureStage = Literal["processor", "sink", "close"]


@runtime_checkable
class EventProcessor(Protocol):
    """Rewrites or drops events; runs before every sink.

    ``process`` may be sync or async; returning ``None`` drops the event. A processor may declare
    ``fail_closed = True`` so a failure drops the event instead of passing it on unchanged.
    """

    @property
    def id(self) -> str:
        """Non-blank, unique within a dispatcher."""
        ...

    def process(self, event: RunEvent) -> RunEvent | Awaitable[RunEvent | None] | None:
        """Return the (possibly new) event, or ``None`` to drop it."""
        ...


@runtime_checkable
class EventSink(Protocol):
    """Receives processed events; must not mutate them (events are frozen, data is a clone)."""

    @property
    def id(self) -> str:
        """Non-blank, unique within a dispatcher."""
        ...

    def write(self, event: RunEvent) -> Awaitable[None] | None:
        """Deliver one event (sync or async)."""
        ...

    async def aclose(self) -> None:
        """Flush and release resources; idempotent."""
        ...


@attrs.frozen(kw_only=True, slots=True)
class DeliveryFailure:
    """A reported (isolated) failure; ``message`` has been text-redacted.

    Attributes:
        stage: ``"processor"``, ``"sink"`` or ``"close"``.
        component_id: the processor or sink id.
        event_id: the event being handled (None for close).
        run_id: its run (None for close).
        event_type: its type (None for close).
        error_type: the exception class name.
        code: the ``ActoviqError`` code, if any.
        message: the error message, secrets scanned out.
        timed_out: the component exceeded its timeout.
        dropped: the event was not delivered at all (fail-closed processor).
        error: the exception itself (not in repr or equality).
    """

    stage: FailureStage
    component_id: str
    event_id: str | None
    run_id: str | None
    event_type: str | None
    error_type: str
    code: str | None
    message: str
    timed_out: bool = False
    dropped: bool = False
    error: BaseException | None = attrs.field(default=None, repr=False, eq=False)


def default_processors(policy: RedactionPolicy | None = None) -> list[EventProcessor]:
    """The default chain: redaction first (D6: default on), so every sink sees redacted clones."""
    return [RedactionProcessor(Redactor(policy))]


def _check_ids(kind: str, components: Iterable[EventProcessor | EventSink]) -> None:
    seen: set[str] = set()
    for component in components:
        identifier = getattr(component, "id", None)
        if type(identifier) is not str or not identifier.strip():
            raise EventValidationError(f"Event {kind} id must not be empty.")
        if identifier in seen:
            raise EventValidationError(f'Duplicate event {kind} id "{identifier}".')
        seen.add(identifier)


class EventDispatcher:
    """Runs events through processors and into sinks; owns the sinks' lifetime.

    Args:
        processors: run in order; see :func:`default_processors` (pass it explicitly: an empty
            list really means no redaction).
        sinks: written in order, each awaited (a slow sink applies backpressure).
        failure_mode: ``"isolate"`` (report and continue) or ``"raise"``.
        sink_timeout: seconds per sink write / async processor (``None`` for no limit).
        close_timeout: seconds per sink ``aclose``.
        on_failure: called with each :class:`DeliveryFailure` (isolate mode).
        max_failures_kept: how many recent failures :attr:`failures` keeps.
        message_redactor: scans failure messages (default: text scanning on).

    Raises:
        EventValidationError: a blank or duplicate processor/sink id, or a bad timeout.
    """

    def __init__(
        self,
        processors: Iterable[EventProcessor] = (),
        sinks: Iterable[EventSink] = (),
        *,
        failure_mode: FailureMode = "isolate",
        sink_timeout: float | None = DEFAULT_SINK_TIMEOUT,
        close_timeout: float | None = DEFAULT_SINK_TIMEOUT,
        on_failure: Callable[[DeliveryFailure], None] | None = None,
        max_failures_kept: int = 1000,
        message_redactor: Redactor | None = None,
    ) -> None:
        self._processors = tuple(processors)
        self._sinks = tuple(sinks)
        _check_ids("processor", self._processors)
        _check_ids("sink", self._sinks)
        if failure_mode not in ("isolate", "raise"):
            raise EventValidationError(f"Unknown failure mode {failure_mode!r}.")
        for label, value in (("sink_timeout", sink_timeout), ("close_timeout", close_timeout)):
            if value is not None and not value > 0:
                raise EventValidationError(f"{label} must be a positive number of seconds.")
        self._mode: FailureMode = failure_mode
        self._sink_timeout = sink_timeout
        self._close_timeout = close_timeout
        self._on_failure = on_failure
        self._failures: deque[DeliveryFailure] = deque(maxlen=max(1, max_failures_kept))
        self._failure_count = 0
        self._redactor = message_redactor or Redactor(RedactionPolicy(scan_text=True))
        self._closed = False

    @property
    def processors(self) -> tuple[EventProcessor, ...]:
        """The processors, in order."""
        return self._processors

    @property
    def sinks(self) -> tuple[EventSink, ...]:
        """The sinks, in order."""
        return self._sinks

    @property
    def failures(self) -> tuple[DeliveryFailure, ...]:
        """The most recent reported failures (bounded)."""
        return tuple(self._failures)

    @property
    def failure_count(self) -> int:
        """How many failures were reported in total."""
        return self._failure_count

    @property
    def closed(self) -> bool:
        """True after :meth:`aclose`."""
        return self._closed

    async def dispatch(self, event: RunEvent) -> RunEvent | None:
        """Process and deliver one event; return what the sinks received (None if dropped).

        Raises:
            EventDispatcherClosedError: after :meth:`aclose`.
            Exception: in ``"raise"`` mode, the first processor or sink failure.
        """
        if self._closed:
            raise EventDispatcherClosedError("EventDispatcher is closed.")
        current: RunEvent | None = event
        for processor in self._processors:
            if current is None:
                return None
            current = await self._run_processor(processor, current)
        if current is None:
            return None
        for sink in self._sinks:
            await self._write(sink, current)
        return current

    async def _run_processor(self, processor: EventProcessor, event: RunEvent) -> RunEvent | None:
        try:
            outcome = processor.process(event)
            result = cast(
                object,
                await self._bounded(outcome, processor.id)
                if inspect.isawaitable(outcome)
                else outcome,
            )
        except Exception as error:
            fail_closed = bool(getattr(processor, "fail_closed", False)) or isinstance(
                error, RedactionError
            )
            if self._mode == "raise":
                raise
            self._report("processor", processor.id, event, error, dropped=fail_closed)
            return None if fail_closed else event
        if result is not None and not isinstance(result, RunEvent):
            error = EventValidationError(
                f'Event processor "{processor.id}" returned {type(result).__name__}, '
                "not a RunEvent or None."
            )
            fail_closed = bool(getattr(processor, "fail_closed", False))
            if self._mode == "raise":
                raise error
            self._report("processor", processor.id, event, error, dropped=fail_closed)
            return None if fail_closed else event
        return result

    async def _write(self, sink: EventSink, event: RunEvent) -> None:
        try:
            result = sink.write(event)
            if inspect.isawaitable(result):
                await self._bounded(result, sink.id)
        except Exception as error:
            if self._mode == "raise":
                raise
            self._report("sink", sink.id, event, error)

    async def _bounded(self, awaitable: Awaitable[_T], component: str) -> _T:
        if self._sink_timeout is None:
            return await awaitable
        try:
            async with asyncio.timeout(self._sink_timeout):
                return await awaitable
        except TimeoutError:
            raise EventSinkTimeoutError(
                f'Event component "{component}" did not finish within {self._sink_timeout} s.'
            ) from None

    def _report(
        self,
        stage: FailureStage,
        component_id: str,
        event: RunEvent | None,
        error: BaseException,
        *,
        dropped: bool = False,
    ) -> None:
        failure = DeliveryFailure(
            stage=stage,
            component_id=component_id,
            event_id=event.event_id if event else None,
            run_id=event.run_id if event else None,
            event_type=event.type if event else None,
            error_type=type(error).__name__,
            code=error.code if isinstance(error, ActoviqError) else None,
            message=self._redactor.redact_text(str(error)),
            timed_out=isinstance(error, EventSinkTimeoutError),
            dropped=dropped,
            error=error,
        )
        self._failures.append(failure)
        self._failure_count += 1
        if self._on_failure is not None:
            self._on_failure(failure)

    async def aclose(self) -> None:
        """Close every sink concurrently (each under ``close_timeout``); idempotent.

        Raises:
            ExceptionGroup: "One or more event sinks failed to close." (in isolate mode the
                failures are also reported).
        """
        if self._closed:
            return
        self._closed = True
        errors: list[tuple[EventSink, Exception]] = []

        async def close_one(sink: EventSink) -> None:
            try:
                if self._close_timeout is None:
                    await sink.aclose()
                else:
                    async with asyncio.timeout(self._close_timeout):
                        await sink.aclose()
            except TimeoutError:
                errors.append(
                    (
                        sink,
                        EventSinkTimeoutError(
                            f'Event sink "{sink.id}" did not close within {self._close_timeout} s.'
                        ),
                    )
                )
            except Exception as error:
                errors.append((sink, error))

        async with asyncio.TaskGroup() as group:
            for sink in self._sinks:
                group.create_task(close_one(sink))
        if errors:
            for sink, error in errors:
                self._report("close", sink.id, None, error)
            raise ExceptionGroup(
                "One or more event sinks failed to close.", [error for _, error in errors]
            )

    async def __aenter__(self) -> EventDispatcher:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
