"""Processors → sinks: the ``EventDispatcher`` (spec 03 §5.3, §5.7, §8.4).

Processors run sequentially and may rewrite or drop (return ``None``) an event; sinks are then
written sequentially, in order, each under its own timeout. A sink ``write`` (or async
processor) that completes without suspending costs no timer and no task: the timeout bounds the
time a component spends suspended.

Ownership: the delivered event and its ``data`` are shared by every sink and by the caller of
``dispatch`` (``emit``), and nobody may mutate them. With the default processors the ``data`` is
the redactor's fresh clone, which references nothing of the caller's payload, so the caller may
go on mutating its own payload freely.

In ``"isolate"`` mode (the default) a failing or hanging sink is reported through ``on_failure``
and :attr:`failures` and the next sinks still receive the event; a failing ordinary processor
leaves the event unchanged. A *fail-closed* processor (the redaction processor) that fails drops
the event instead: it is never delivered unredacted. In ``"raise"`` mode every failure propagates
to the caller.

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
import types
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable
from types import CoroutineType
from typing import Any, Final, Literal, Protocol, TypeVar, cast, runtime_checkable

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
"""Seconds a sink's ``write`` (or an async processor) may spend suspended before it is reported."""

_T = TypeVar("_T")

FailureMode = Literal["isolate", "raise"]
"""What a dispatcher does when a processor or sink fails: isolate it, or raise."""
FailureStage = Literal["processor", "sink", "close"]
"""Where an event-pipeline failure happened."""


@runtime_checkable
class EventProcessor(Protocol):
    """Rewrites or drops events; runs before every sink.

    ``process`` may be sync or async; returning ``None`` drops the event. A processor may declare
    ``fail_closed = True`` so a failure drops the event instead of passing it on unchanged, and
    ``clones_data = True`` when the ``data`` of the events it returns is always a fresh structure
    that shares no mutable container with its input (the redaction processor does).
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
    """Receives processed events; must not mutate them (events are frozen, data is read-only).

    A sink may also offer ``write_owned(event)`` (same contract as ``write``). The dispatcher
    calls it instead of ``write`` when the event's ``data`` was produced by a ``clones_data``
    processor and not replaced since, so it references nothing the emitting code holds: a sink
    that keeps events (``InMemoryEventSink``) may then keep the data without copying it.
    """

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


_NOT_FRESH: Final = object()
_WriteOwned = Callable[[RunEvent], "Awaitable[None] | None"]


class _Done:
    """The result of a component call that finished without suspending."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value


@types.coroutine
def _resume(coroutine: Coroutine[Any, Any, _T], pending: Any) -> Generator[Any, Any, _T]:
    """Finish a coroutine already stepped to its first suspension, where it yielded ``pending``.

    This is ``yield from`` entered mid-way: every value the coroutine yields goes up to the task,
    and what the task sends or throws (a wake-up, a timeout's cancellation) goes back down.
    """
    while True:
        try:
            sent = yield pending
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as error:
            try:
                pending = coroutine.throw(error)
            except StopIteration as stop:
                return cast(_T, stop.value)
        else:
            try:
                pending = coroutine.send(sent)
            except StopIteration as stop:
                return cast(_T, stop.value)


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
        # ``clones_data`` is a declared class constant, read once.
        self._processor_entries = tuple(
            (processor, getattr(processor, "clones_data", False) is True)
            for processor in self._processors
        )
        self._sinks = tuple(sinks)
        self._sink_entries = tuple(
            (sink, cast(_WriteOwned | None, getattr(sink, "write_owned", None)))
            for sink in self._sinks
        )
        # Whether anything outside the dispatcher can see an event: a sink, or a processor other
        # than the built-in redaction (which only returns a redacted clone, keeping no trace of
        # it). A runtime skips building events nobody can see (see :attr:`observed`).
        self._observed = bool(self._sinks) or not all(
            processor.__class__ is RedactionProcessor
            and cast(RedactionProcessor, processor).redactor.__class__ is Redactor
            for processor in self._processors
        )
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
    def observed(self) -> bool:
        """True when a dispatched event can be seen outside the dispatcher.

        False only without sinks and with no processor but the built-in
        :class:`RedactionProcessor` (with the built-in :class:`Redactor`): then dispatching
        returns a redacted clone and nobody else receives anything, so a producer that does not
        need that clone may skip building the event (the runtime does, for runs without a
        stream; it still counts the event's sequence).
        """
        return self._observed

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

    async def dispatch(self, event: RunEvent, *, isolate: bool = False) -> RunEvent | None:
        """Process and deliver one event; return what the sinks received (None if dropped).

        The returned event (and what every sink received) is shared: treat its ``data`` as
        read-only (see the module docstring on ownership).

        Args:
            event: the stamped event.
            isolate: handle this event's failures as in ``"isolate"`` mode whatever the
                dispatcher's mode (report them, keep delivering). The runtime uses it for
                terminal events: every sink gets the chance to see how a run ended.

        Raises:
            EventDispatcherClosedError: after :meth:`aclose`.
            Exception: in ``"raise"`` mode (and not ``isolate``), the first processor or sink
                failure.
        """
        if self._closed:
            raise EventDispatcherClosedError("EventDispatcher is closed.")
        raising = self._mode == "raise" and not isolate
        current = event
        fresh: object = _NOT_FRESH  # the data last produced by a cloning processor
        for processor, clones_data in self._processor_entries:
            try:
                outcome: object = processor.process(current)
                # Fast path: the class of the event given (passed on or evolved). A catalogued
                # event is a RunEvent subclass, so anything else is checked with isinstance.
                if (
                    outcome.__class__ is not current.__class__
                    and outcome is not None
                    and not isinstance(outcome, RunEvent)
                ):
                    step = self._step(outcome, processor.id)
                    outcome = step.value if step.__class__ is _Done else await step
            except Exception as error:
                fail_closed = bool(getattr(processor, "fail_closed", False)) or isinstance(
                    error, RedactionError
                )
                if raising:
                    raise
                self._report("processor", processor.id, current, error, dropped=fail_closed)
                if fail_closed:
                    return None
                continue
            if outcome.__class__ is not current.__class__ and not isinstance(outcome, RunEvent):
                if outcome is None:
                    return None
                error = EventValidationError(
                    f'Event processor "{processor.id}" returned {type(outcome).__name__}, '
                    "not a RunEvent or None."
                )
                fail_closed = bool(getattr(processor, "fail_closed", False))
                if raising:
                    raise error
                self._report("processor", processor.id, current, error, dropped=fail_closed)
                if fail_closed:
                    return None
                continue
            current = cast(RunEvent, outcome)
            if clones_data:
                fresh = current.data
        # The data is the pipeline's own when a cloning processor produced it and nothing
        # replaced it since: sinks offering write_owned may then keep it without a copy.
        owned = fresh is current.data
        for sink, write_owned in self._sink_entries:
            try:
                result = (
                    sink.write(current)
                    if not owned or write_owned is None
                    else write_owned(current)
                )
                if result is not None:
                    step = self._step(result, sink.id)
                    if step.__class__ is not _Done:
                        await step
            except Exception as error:
                if raising:
                    raise
                self._report("sink", sink.id, current, error)
        return current

    def _step(self, outcome: object, component: str) -> Any:
        """Start what a processor or sink returned: a :class:`_Done` or an awaitable to finish.

        A coroutine is first stepped synchronously: most sinks and processors finish without ever
        suspending (an in-memory store, a buffer append), and then no timer is armed and nothing
        is scheduled. If it suspends, the rest of it runs under the component's timeout, so the
        timeout bounds the time the component spends suspended (synchronous work cannot be
        interrupted by asyncio anyway). Other awaitables are awaited under the timeout; anything
        else is the (synchronous) result itself.
        """
        if outcome.__class__ is CoroutineType:
            coroutine: Coroutine[Any, Any, object] = outcome  # type: ignore[assignment]
            try:
                pending = coroutine.send(None)
            except StopIteration as stop:
                return _Done(stop.value)
            return self._bounded(_resume(coroutine, pending), component)
        if inspect.isawaitable(outcome):
            return self._bounded(cast(Awaitable[object], outcome), component)
        return _Done(outcome)

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
