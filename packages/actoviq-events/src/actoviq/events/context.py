"""Trace contexts, the id/clock seam and ``contextvars`` propagation (spec 03 §5.1, §8.3 S8/S10).

Example:
    >>> ids = SequentialIdFactory()
    >>> root = create_root_trace_context("run-1", ids=ids)
    >>> child = create_child_trace_context("child-1", parent=root, ids=ids)
    >>> (child.trace_id == root.trace_id, child.parent_span_id == root.span_id)
    (True, True)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol, runtime_checkable

import attrs

from actoviq.core import iso_now
from actoviq.events.errors import EventValidationError

__all__ = [
    "Clock",
    "IdFactory",
    "ManualClock",
    "RandomIdFactory",
    "SequentialIdFactory",
    "SystemClock",
    "TraceContext",
    "create_child_trace_context",
    "create_root_trace_context",
    "current_trace_context",
    "use_trace_context",
]

_HEX = frozenset("0123456789abcdef")
_Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


@runtime_checkable
class IdFactory(Protocol):
    """Makes the ids stamped on events: inject a deterministic one in tests (S10)."""

    def event_id(self) -> str:
        """A fresh event id (UUIDv4 text by default)."""
        ...

    def trace_id(self) -> str:
        """A fresh trace id: 32 lowercase hex chars, not all zero."""
        ...

    def span_id(self) -> str:
        """A fresh span id: 16 lowercase hex chars, not all zero."""
        ...


@runtime_checkable
class Clock(Protocol):
    """The time source for event timestamps."""

    def now(self) -> datetime:
        """The current time as an aware UTC datetime."""
        ...


_UUID_VARIANT: Final = "89ab89ab89ab89ab"  # indexed by a random hex digit: RFC 4122 variant


class RandomIdFactory:
    """Production ids: UUIDv4 event ids, random OpenTelemetry-sized trace and span ids."""

    def event_id(self) -> str:
        """A random UUIDv4 (122 random bits from ``os.urandom``, canonical lowercase text)."""
        # Same distribution as ``str(uuid.uuid4())`` at a third of the cost: the version nibble
        # is fixed to 4 and the variant nibble is mapped onto 8..b from a random hex digit.
        h = os.urandom(16).hex()
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_UUID_VARIANT[int(h[16], 16)]}{h[17:20]}-{h[20:]}"

    def trace_id(self) -> str:
        """16 random bytes as hex (retried in the 2^-128 case of all zeros)."""
        while True:
            value = os.urandom(16).hex()
            if value != "0" * 32:
                return value

    def span_id(self) -> str:
        """8 random bytes as hex (never all zeros)."""
        while True:
            value = os.urandom(8).hex()
            if value != "0" * 16:
                return value


class SequentialIdFactory:
    """Deterministic ids for tests: counters rendered in the production shapes.

    Example:
        >>> ids = SequentialIdFactory()
        >>> ids.event_id()
        '00000000-0000-4000-8000-000000000001'
        >>> ids.trace_id(), ids.span_id()
        ('00000000000000000000000000000001', '0000000000000001')
    """

    __slots__ = ("_next_event", "_next_span", "_next_trace")

    def __init__(self, start: int = 1) -> None:
        self._next_event = start
        self._next_trace = start
        self._next_span = start

    def event_id(self) -> str:
        """``00000000-0000-4000-8000-<counter>``: a valid UUIDv4 layout."""
        value = self._next_event
        self._next_event = value + 1
        return f"00000000-0000-4000-8000-{value:012x}"

    def trace_id(self) -> str:
        """The trace counter as 32 hex chars."""
        value = self._next_trace
        self._next_trace += 1
        return f"{value:032x}"

    def span_id(self) -> str:
        """The span counter as 16 hex chars."""
        value = self._next_span
        self._next_span += 1
        return f"{value:016x}"


class SystemClock:
    """The wall clock (UTC).

    Besides :meth:`now` it offers :meth:`now_iso`, which the event sequencer uses when the
    clock's ``now`` is not overridden: the same text as ``to_iso(clock.now())`` without building
    a ``datetime`` (``actoviq.core.iso_now``).
    """

    __slots__ = ()

    def now(self) -> datetime:
        """``datetime.now(UTC)``."""
        return datetime.now(UTC)

    def now_iso(self) -> str:
        """The current time as ISO-8601 UTC with milliseconds and ``Z`` (core's ``iso_now``)."""
        return iso_now()


class ManualClock:
    """A deterministic clock: returns ``start``, then advances by ``step`` on every call.

    Example:
        >>> clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
        >>> clock.now().isoformat(), clock.now().isoformat()
        ('2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00.001000+00:00')
    """

    def __init__(
        self,
        start: datetime | None = None,
        step: timedelta = timedelta(milliseconds=1),
    ) -> None:
        self._current = start if start is not None else datetime(2026, 1, 1, tzinfo=UTC)
        if self._current.tzinfo is None:
            raise EventValidationError("ManualClock start must be timezone-aware.")
        self._step = step

    def now(self) -> datetime:
        """Return the current time, then advance it."""
        value = self._current
        self._current = value + self._step
        return value

    def advance(self, delta: timedelta) -> None:
        """Move the clock forward by ``delta``."""
        self._current += delta


def _check_hex(label: str, size: int) -> _Validator:
    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None and attribute.default is None:
            return
        if (
            type(value) is not str
            or len(value) != size
            or not set(value) <= _HEX
            or value == "0" * size
        ):
            raise EventValidationError(
                f"{label} must be {size} lowercase hex chars (not all zero), got {value!r}."
            )

    return validate


def _check_run_id(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None and attribute.default is None:
        return
    if type(value) is not str or not value.strip():
        raise EventValidationError(f"TraceContext.{attribute.name} must be a non-empty string.")


@attrs.frozen(kw_only=True, slots=True)
class TraceContext:
    """Where a run sits in its trace: every event of the run carries these fields.

    Attributes:
        run_id: the run.
        trace_id: 32 hex chars shared by the whole run tree.
        span_id: 16 hex chars, the run's own span.
        parent_span_id: the parent run's span (child runs only).
        parent_run_id: the parent run (child runs only).
    """

    run_id: str = attrs.field(validator=_check_run_id)
    trace_id: str = attrs.field(validator=_check_hex("traceId", 32))
    span_id: str = attrs.field(validator=_check_hex("spanId", 16))
    parent_span_id: str | None = attrs.field(
        default=None,
        validator=_check_hex("parentSpanId", 16),
    )
    parent_run_id: str | None = attrs.field(default=None, validator=_check_run_id)


_CURRENT: ContextVar[TraceContext | None] = ContextVar("actoviq_trace_context", default=None)
_DEFAULT_IDS = RandomIdFactory()
_new_context = object.__new__
_set_context_field = object.__setattr__  # the frozen class's own __setattr__ refuses writes


def current_trace_context() -> TraceContext | None:
    """The trace context of the run executing in this task (asyncio tasks inherit it)."""
    return _CURRENT.get()


class _TraceScope:
    """The context manager :func:`use_trace_context` returns (a class: no generator per use)."""

    __slots__ = ("_context", "_token")

    def __init__(self, context: TraceContext) -> None:
        self._context = context
        self._token: Token[TraceContext | None] | None = None

    def __enter__(self) -> TraceContext:
        self._token = _CURRENT.set(self._context)
        return self._context

    def __exit__(self, *_: object) -> None:
        token = self._token
        if token is not None:
            self._token = None
            _CURRENT.reset(token)


def use_trace_context(context: TraceContext) -> AbstractContextManager[TraceContext]:
    """Make ``context`` current for the block (providers, tools and child runs inherit it).

    Example:
        >>> ctx = create_root_trace_context("r", ids=SequentialIdFactory())
        >>> with use_trace_context(ctx):
        ...     current_trace_context() is ctx
        True
    """
    return _TraceScope(context)


def create_root_trace_context(run_id: str, *, ids: IdFactory | None = None) -> TraceContext:
    """A new trace for a top-level run: fresh trace id and span id, no parent."""
    factory = ids if ids is not None else _DEFAULT_IDS
    if factory.__class__ is RandomIdFactory and run_id.__class__ is str and run_id.strip():
        # Our own factory's trace and span ids are valid by construction: skip their checks.
        context = _new_context(TraceContext)
        _set_context_field(context, "run_id", run_id)
        _set_context_field(context, "trace_id", factory.trace_id())
        _set_context_field(context, "span_id", factory.span_id())
        _set_context_field(context, "parent_span_id", None)
        _set_context_field(context, "parent_run_id", None)
        return context
    return TraceContext(run_id=run_id, trace_id=factory.trace_id(), span_id=factory.span_id())


def create_child_trace_context(
    run_id: str,
    *,
    parent: TraceContext | None = None,
    ids: IdFactory | None = None,
) -> TraceContext:
    """A child run's context: the parent's trace id, a fresh span id, parent span and run ids.

    Args:
        run_id: the child run.
        parent: the parent run's context; defaults to :func:`current_trace_context`.
        ids: the id factory.

    Raises:
        EventValidationError: no parent was given and none is current.
    """
    source = parent if parent is not None else _CURRENT.get()
    if source is None:
        raise EventValidationError(
            "create_child_trace_context needs a parent context (none is current)."
        )
    factory = ids if ids is not None else _DEFAULT_IDS
    if (
        factory.__class__ is RandomIdFactory
        and source.__class__ is TraceContext
        and run_id.__class__ is str
        and run_id.strip()
    ):
        # The parent's fields were checked when it was built and our own factory's span id is
        # valid by construction: skip the validators (orchestration derives one per child).
        context = _new_context(TraceContext)
        _set_context_field(context, "run_id", run_id)
        _set_context_field(context, "trace_id", source.trace_id)
        _set_context_field(context, "span_id", factory.span_id())
        _set_context_field(context, "parent_span_id", source.span_id)
        _set_context_field(context, "parent_run_id", source.run_id)
        return context
    return TraceContext(
        run_id=run_id,
        trace_id=source.trace_id,
        span_id=factory.span_id(),
        parent_span_id=source.span_id,
        parent_run_id=source.run_id,
    )
