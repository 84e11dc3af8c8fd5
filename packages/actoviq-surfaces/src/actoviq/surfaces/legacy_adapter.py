"""``LegacyAgentEventRunEventAdapter``: legacy ``AgentEvent`` → ``RunEvent`` (spec 03 §6.5, Q25).

Each run gets a trace context (registered up front, carried by the legacy event, derived from
its parent, or a fresh root) and its own sequencer, so sequences are per run, start at 1 and
increase even when parent and child streams interleave. Payloads are redacted with the surface
mode of the one engine; the legacy object is never mutated.

Identity (Q25 fixed): a legacy event is a replay only when it *is* one — the same embedded
``eventId``, the same ``identity_key(event)``, or the very same object adapted again. Two
distinct but byte-identical events (same payload, same millisecond) are both adapted; the
reference deduplicated them by fingerprint and lost one.

Example:
    >>> adapter = LegacyAgentEventRunEventAdapter()
    >>> event = {"type": "response.text.delta", "runId": "r1", "timestamp": 0,
    ...          "iteration": 1, "delta": "hi", "snapshot": "hi"}
    >>> adapted = adapter.adapt(event)
    >>> adapted.type, adapted.sequence, adapter.adapt(event) is None
    ('model.text.delta', 1, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

import attrs

from actoviq.core import ActoviqError, JsonObject
from actoviq.events import (
    Clock,
    IdFactory,
    RandomIdFactory,
    RunEvent,
    RunEventSequencer,
    SystemClock,
    TraceContext,
)
from actoviq.surfaces.errors import (
    LegacyEventError,
    LegacyEventIdentityCollisionError,
    LegacyRunContextError,
)
from actoviq.surfaces.identity import DEFAULT_DEDUPE_WINDOW_SIZE, IdentityWindow, fingerprint
from actoviq.surfaces.legacy_types import LegacyAgentEvent, legacy_run_event_payload
from actoviq.surfaces.redaction import SurfaceRedaction, surface_redactor

__all__ = ["LegacyAdapterOptions", "LegacyAgentEventRunEventAdapter"]

IdentityKey = Callable[[LegacyAgentEvent], "str | None"]


@attrs.frozen(kw_only=True, slots=True)
class LegacyAdapterOptions:
    """Legacy adapter settings.

    Attributes:
        run_contexts: contexts registered up front (parents before or after their children).
        dedupe_window_size: how many identities are remembered.
        identity_key: a transport identity for events without an ``eventId`` (e.g. a message
            offset); ``None`` from it means "no identity" (object identity only).
        redaction: the replacement text and extra sensitive keys of the surface mode.
        ids: event/trace/span id factory (inject ``SequentialIdFactory`` in tests).
        clock: time for legacy events without a timestamp.
    """

    run_contexts: tuple[TraceContext, ...] = attrs.field(default=(), converter=tuple)
    dedupe_window_size: int = DEFAULT_DEDUPE_WINDOW_SIZE
    identity_key: IdentityKey | None = None
    redaction: SurfaceRedaction | None = None
    ids: IdFactory | None = None
    clock: Clock | None = None


class _Run:
    __slots__ = ("context", "sequencer")

    def __init__(self, context: TraceContext) -> None:
        self.context = context
        self.sequencer: RunEventSequencer | None = None


def _blank(value: object) -> bool:
    return not isinstance(value, str) or not value or value.isspace()


def _iso(value: object, clock: Clock) -> str:
    if value is None:
        moment = clock.now()
    elif type(value) is str and value.strip():
        return value
    elif type(value) in (int, float) and math.isfinite(cast(float, value)):
        moment = datetime.fromtimestamp(cast(float, value) / 1000.0, tz=UTC)
    else:
        raise LegacyEventError(
            f"Legacy event timestamp must be an ISO string or epoch milliseconds, got {value!r}."
        )
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class LegacyAgentEventRunEventAdapter:
    """Adapts legacy events of any number of runs into ``RunEvent`` s (one state machine).

    Args:
        options: see :class:`LegacyAdapterOptions`.

    Raises:
        LegacyRunContextError: a pre-registered context is invalid or contradicts its parent.
    """

    def __init__(self, options: LegacyAdapterOptions | None = None) -> None:
        self._options = options if options is not None else LegacyAdapterOptions()
        self._ids: IdFactory = self._options.ids or RandomIdFactory()
        self._clock: Clock = self._options.clock or SystemClock()
        self._redactor = surface_redactor(self._options.redaction)
        self._window: IdentityWindow[tuple[str, object]] = IdentityWindow(
            self._options.dedupe_window_size
        )
        self._runs: dict[str, _Run] = {}
        for context in self._options.run_contexts:
            self.register_run(context)

    # -- run contexts -----------------------------------------------------------------------------

    def register_run(self, context: TraceContext) -> TraceContext:
        """Register ``context`` (idempotent for an equal one).

        Raises:
            LegacyRunContextError: a child without ``parent_span_id``, a context that differs
                from the registered one, or a parent/child mismatch.
        """
        if not isinstance(context, TraceContext):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise LegacyRunContextError(f"Expected a TraceContext, got {type(context).__name__}.")
        if context.parent_run_id is not None and context.parent_span_id is None:
            raise LegacyRunContextError(
                f'Child run "{context.run_id}" needs a parentSpanId.',
                details={"runId": context.run_id},
            )
        known = self._runs.get(context.run_id)
        if known is not None:
            if known.context != context:
                raise LegacyRunContextError(
                    f'Run context for "{context.run_id}" cannot change after registration.',
                    details={"runId": context.run_id},
                )
            return known.context
        parent = self._runs.get(context.parent_run_id) if context.parent_run_id else None
        if parent is not None:
            self._check_child(context, parent.context)
        for run in self._runs.values():
            if run.context.parent_run_id == context.run_id:
                self._check_child(run.context, context)
        self._runs[context.run_id] = _Run(context)
        return context

    @staticmethod
    def _check_child(child: TraceContext, parent: TraceContext) -> None:
        if child.trace_id != parent.trace_id or child.parent_span_id != parent.span_id:
            raise LegacyRunContextError(
                f'Child run "{child.run_id}" must inherit the trace of parent "{parent.run_id}".',
                details={"runId": child.run_id, "parentRunId": parent.run_id},
            )

    def _context(self, **fields: Any) -> TraceContext:
        try:
            return TraceContext(**fields)
        except ActoviqError as error:
            raise LegacyRunContextError(error.message, details=error.details) from None

    def register_root_run(
        self, run_id: str, *, trace_id: str | None = None, span_id: str | None = None
    ) -> TraceContext:
        """Register a top-level run; missing trace/span ids are generated."""
        return self.register_run(
            self._context(
                run_id=run_id,
                trace_id=trace_id or self._ids.trace_id(),
                span_id=span_id or self._ids.span_id(),
            )
        )

    def register_child_run(
        self,
        run_id: str,
        parent_run_id: str,
        *,
        trace_id: str | None = None,
        span_id: str | None = None,
    ) -> TraceContext:
        """Register a child of ``parent_run_id`` (the parent gets a fresh root if unknown)."""
        parent = self._runs.get(parent_run_id)
        parent_context = (
            parent.context if parent is not None else self.register_root_run(parent_run_id)
        )
        return self.register_run(
            self._context(
                run_id=run_id,
                trace_id=trace_id or parent_context.trace_id,
                span_id=span_id or self._ids.span_id(),
                parent_span_id=parent_context.span_id,
                parent_run_id=parent_run_id,
            )
        )

    def get_run_context(self, run_id: str) -> TraceContext | None:
        """The context of ``run_id``, or None."""
        run = self._runs.get(run_id)
        return None if run is None else run.context

    def get_last_sequence(self, run_id: str) -> int:
        """The last sequence given to ``run_id`` (0 if none)."""
        run = self._runs.get(run_id)
        return 0 if run is None or run.sequencer is None else run.sequencer.last_sequence

    def reset(self) -> None:
        """Forget every run, registration and identity (pre-registrations included)."""
        self._runs.clear()
        self._window.clear()

    # -- adapting ---------------------------------------------------------------------------------

    def _resolve(self, event: LegacyAgentEvent, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is not None:
            return run
        trace_id, span_id = event.get("traceId"), event.get("spanId")
        parent_run_id = event.get("parentRunId")
        if not _blank(trace_id) and not _blank(span_id):
            self.register_run(
                self._context(
                    run_id=run_id,
                    trace_id=trace_id,
                    span_id=span_id,
                    parent_run_id=None if _blank(parent_run_id) else parent_run_id,
                    parent_span_id=event.get("parentSpanId") or None,
                )
            )
        elif not _blank(parent_run_id):
            self.register_child_run(run_id, cast(str, parent_run_id))
        else:
            self.register_root_run(run_id)
        return self._runs[run_id]

    def _identity(self, event: LegacyAgentEvent, run_id: str) -> tuple[str, bool]:
        embedded = event.get("eventId")
        if not _blank(embedded):
            return f"event:{embedded}", True
        key_fn = self._options.identity_key
        key = key_fn(event) if key_fn is not None else None
        if key is not None:
            return f"legacy:{run_id}:{key}", False
        return f"object:{id(event)}", False

    def adapt(self, event: LegacyAgentEvent) -> RunEvent | None:
        """The ``RunEvent`` for one legacy event, or None for a replay.

        Raises:
            LegacyEventError: not a mapping, a blank ``type`` or ``runId``, a bad timestamp.
            LegacyEventIdentityCollisionError: a known identity with a different payload.
            LegacyRunContextError: the event's trace fields contradict a registered context.
            RedactionError: the payload cannot be redacted (nothing is adapted).
        """
        if not isinstance(event, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise LegacyEventError(f"A legacy event must be a mapping, got {type(event).__name__}.")
        kind, run_id = event.get("type"), event.get("runId")
        if _blank(kind):
            raise LegacyEventError("Legacy event type must be a non-blank string.")
        if _blank(run_id):
            raise LegacyEventError(f'Legacy event "{kind}" has no runId.')
        run_id = cast(str, run_id)
        printed = fingerprint(event)
        key, embedded = self._identity(event, run_id)
        seen = self._window.get(key)
        if seen is not None:
            if seen[0] == printed:
                return None
            raise LegacyEventIdentityCollisionError(
                f'Legacy event identity collision for run "{run_id}" ({key.split(":", 1)[0]}).',
                details={"runId": run_id},
            )
        timestamp = _iso(event.get("timestamp"), self._clock)
        event_type, payload = legacy_run_event_payload(event)
        data = self._redactor.redact(payload)
        run = self._resolve(event, run_id)
        if run.sequencer is None:
            run.sequencer = RunEventSequencer(run.context, ids=self._ids, clock=self._clock)
        adapted = run.sequencer.next(
            event_type, cast(JsonObject, data) if type(data) is dict else {}, timestamp=timestamp
        )
        if embedded:
            adapted = attrs.evolve(adapted, event_id=cast(str, event["eventId"]))
        # The object itself is kept for object identities, so its id cannot be reused meanwhile.
        self._window.remember(key, (printed, event if key.startswith("object:") else None))
        return adapted

    def adapt_many(self, events: Iterable[LegacyAgentEvent]) -> list[RunEvent]:
        """Adapt several events, leaving out replays."""
        out: list[RunEvent] = []
        for event in events:
            adapted = self.adapt(event)
            if adapted is not None:
                out.append(adapted)
        return out
