"""``RunEventSemanticProjector``: a stateful validator and normaliser (spec 03 §6.3, Q26).

For each source :class:`~actoviq.events.RunEvent` the projector

1. validates the envelope (schema version, ids, trace and span, sequence);
2. checks identity in a bounded window: an exact replay of a seen ``eventId`` gives ``[]``; the
   same ``eventId`` with another payload raises :class:`SurfaceEventIdentityCollisionError`;
3. checks the run: its trace context never changes, its sequence strictly increases (gaps are
   fine), a child run agrees with its parent (also when the parent shows up after the child);
4. redacts ``data`` with the surface mode of the one engine of ``actoviq.events``;
5. maps the event to zero or more :class:`SurfaceSemanticEvent` s.

Nothing is remembered from an event that fails a check, so a caller may skip it and go on.

Example:
    >>> from actoviq.events import RunEventSequencer, create_root_trace_context
    >>> sequencer = RunEventSequencer(create_root_trace_context("run-1"))
    >>> projector = RunEventSemanticProjector()
    >>> event = sequencer.next("model.text.delta", {"delta": "hi", "outputIndex": 0})
    >>> [(s.type.value, s.data["snapshot"]) for s in projector.project(event)]
    [('text.delta', 'hi')]
    >>> projector.project(event)  # an exact replay
    []
"""

from __future__ import annotations

from collections import deque
from typing import Any, Final, cast

import attrs

from actoviq.core import JsonObject
from actoviq.events import EVENT_CLASSES, RunEvent, held_tail_start
from actoviq.surfaces._admission import (
    DELTA_CLASS,
    MAX_SAFE,
    MISSING,
    WindowEntry,
    check_envelope,
    check_new_run,
    same_event,
)
from actoviq.surfaces._state import RunState, Snapshot, TraceKey
from actoviq.surfaces.errors import (
    SurfaceEventIdentityCollisionError,
    SurfaceEventSequenceError,
    SurfaceEventTraceError,
    SurfaceEventValidationError,
)
from actoviq.surfaces.identity import DEFAULT_DEDUPE_WINDOW_SIZE
from actoviq.surfaces.mapping import (
    MappingOptions,
    flush_held,
    map_source_event,
    redact_piece,
)
from actoviq.surfaces.redaction import SurfaceRedaction, surface_redactor
from actoviq.surfaces.types import (
    SurfaceSemanticCategory,
    SurfaceSemanticEvent,
    SurfaceSemanticType,
)
from actoviq.surfaces.types import _SemanticSlots as _Draft  # pyright: ignore[reportPrivateUsage]
from actoviq.surfaces.types import build_unchecked as _build

__all__ = [
    "DEFAULT_MAX_RUNS",
    "DEFAULT_MAX_SNAPSHOT_CHARS",
    "ProjectorOptions",
    "RunEventSemanticProjector",
]

DEFAULT_MAX_SNAPSHOT_CHARS: Final = 16_384
"""The longest ``snapshot`` a text/reasoning semantic carries (a tail of the text beyond it)."""

DEFAULT_MAX_RUNS: Final = 4096
"""How many runs a projector keeps validation state for (oldest forgotten first)."""

_ONE: Final = 1
# The envelope classes whose fields are plain attributes: ``RunEvent`` and the catalogue's typed
# subclasses the runtime emits (they add no fields or properties). Any other subclass takes the
# checked path.
_ENVELOPES: Final = frozenset({RunEvent, *EVENT_CLASSES.values()})
_TEXT_DELTA: Final = SurfaceSemanticType.TEXT_DELTA
_TEXT: Final = SurfaceSemanticCategory.TEXT
_OPENERS: Final = "{["
# Streamed tokens repeat (" the", " and"…): the release of a short delta that holds nothing back
# is remembered (hold and redaction are pure functions of the text), bounded per projector.
_CACHED_DELTA_CHARS: Final = 32
_CACHED_DELTAS: Final = 4096
# Source events that stream within a model call: they do not end its text blocks, so the text
# those blocks hold back (a possible secret's start) waits for them to end.
_STREAMING: Final = frozenset(
    {
        "model.text.delta",
        "model.reasoning.delta",
        "model.refusal.delta",
        "model.tool_call.delta",
        "model.usage",
        "model.provider.event",
        "response.text.delta",
        "response.thinking.delta",
        "response.tool_input.delta",
    }
)


def _positive(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not int or value < 1:
        raise SurfaceEventValidationError(
            f"ProjectorOptions.{attribute.name} must be a positive int, got {value!r}.",
            code="SURFACE_OPTIONS_INVALID",
        )


@attrs.frozen(kw_only=True, slots=True)
class ProjectorOptions:
    """Projector settings.

    Attributes:
        dedupe_window_size: how many event ids are remembered for replay detection.
        redaction: the replacement text and extra sensitive keys of the surface mode.
        include_extensions: project unknown source types as ``extension`` events.
        max_snapshot_chars: the longest snapshot carried; a longer text is carried as its
            tail (at least half this many characters) and ``snapshotOffset`` says how many
            characters were left out in front. Keeps the cost per delta and memory flat.
        max_runs: how many runs are tracked (memory stays flat with endless runs).
        raw_tool_input_deltas: also show tool argument text while it streams (text-scanned).
            Off by default: argument text is shown once it parses as a whole object (D10).
    """

    dedupe_window_size: int = attrs.field(default=DEFAULT_DEDUPE_WINDOW_SIZE, validator=_positive)
    redaction: SurfaceRedaction | None = None
    include_extensions: bool = True
    max_snapshot_chars: int = attrs.field(default=DEFAULT_MAX_SNAPSHOT_CHARS, validator=_positive)
    max_runs: int = attrs.field(default=DEFAULT_MAX_RUNS, validator=_positive)
    raw_tool_input_deltas: bool = False


class RunEventSemanticProjector:
    """Projects ``RunEvent`` s of any number of runs into semantic events (one state machine).

    Not thread-safe; use one per consumer (they are cheap).

    Args:
        options: see :class:`ProjectorOptions`.
    """

    __slots__ = (
        "_children",
        "_hot",
        "_hot_id",
        "_mapping",
        "_options",
        "_order",
        "_redact_text",
        "_redactor",
        "_released",
        "_runs",
        "_seen",
        "_window_size",
    )

    def __init__(self, options: ProjectorOptions | None = None) -> None:
        self._options = options if options is not None else ProjectorOptions()
        self._redactor = surface_redactor(self._options.redaction)
        self._redact_text = self._redactor.redact_text
        self._released: dict[str, str] = {}
        self._mapping = MappingOptions(
            redactor=self._redactor,
            include_extensions=self._options.include_extensions,
            max_snapshot_chars=self._options.max_snapshot_chars,
            raw_tool_input_deltas=self._options.raw_tool_input_deltas,
        )
        # The identity window: the last ``dedupe_window_size`` source events by id, with their
        # ids in arrival order for FIFO eviction (a dict + deque beats an OrderedDict here).
        self._seen: dict[str, WindowEntry] = {}
        self._order: deque[str] = deque()
        self._window_size = self._options.dedupe_window_size
        self._runs: dict[str, RunState] = {}
        self._children: dict[str, set[str]] = {}
        # The run of the last text delta and its id (the very string object): the next delta of
        # that run, with that same id object, skips the ``_runs`` lookup. Forgotten whenever a
        # run is forgotten, so it is always ``_runs[_hot_id]``.
        self._hot_id: str | None = None
        self._hot: RunState | None = None

    @property
    def options(self) -> ProjectorOptions:
        """The options in force."""
        return self._options

    def reset(self) -> None:
        """Forget every run, child link and identity."""
        self._seen.clear()
        self._order.clear()
        self._runs.clear()
        self._children.clear()
        self._hot_id = self._hot = None

    def last_sequence(self, run_id: str) -> int:
        """The last sequence accepted for ``run_id`` (0 if unknown)."""
        run = self._runs.get(run_id)
        return 0 if run is None else run.last_sequence

    # -- validation -------------------------------------------------------------------------------

    def _admit(self, event: RunEvent) -> RunState | None:
        """Validate; return the run's state (a new one is not registered yet) or None (replay)."""
        # One cheap expression for the common valid envelope; the slow path names the problem.
        if (
            event.__class__ not in _ENVELOPES
            or event.schema_version.__class__ is not int
            or event.schema_version != 1
            or event.event_id.__class__ is not str
            or not event.event_id
            or event.event_id.isspace()
            or event.run_id.__class__ is not str
            or not event.run_id
            or event.run_id.isspace()
            or event.type.__class__ is not str
            or not event.type
            or event.type.isspace()
            or event.trace_id.__class__ is not str
            or not event.trace_id
            or event.trace_id.isspace()
            or event.span_id.__class__ is not str
            or not event.span_id
            or event.span_id.isspace()
            or event.sequence.__class__ is not int
            or not 0 < event.sequence <= MAX_SAFE
        ):
            check_envelope(event)
        seen = self._seen.get(event.event_id)
        if seen is not None:
            if same_event(seen, event):
                return None
            raise SurfaceEventIdentityCollisionError(
                f"RunEvent {event.event_id} was seen before with a different payload.",
                details={"eventId": event.event_id, "runId": event.run_id},
            )
        trace: TraceKey = (event.parent_run_id, event.trace_id, event.span_id, event.parent_span_id)
        run = self._runs.get(event.run_id)
        if run is None:
            check_new_run(event, trace, self._runs, self._children)
            return RunState(trace)
        if run.trace != trace:
            raise SurfaceEventTraceError(
                f"Trace context changed within run {event.run_id}.",
                details={"runId": event.run_id},
            )
        if event.sequence <= run.last_sequence:
            raise SurfaceEventSequenceError(
                f"Run {event.run_id} event sequence {event.sequence} is not greater than "
                f"{run.last_sequence}.",
                details={"runId": event.run_id, "sequence": event.sequence},
            )
        return run

    def _commit(self, event: RunEvent, run: RunState) -> None:
        seen = self._seen
        order = self._order
        seen[event.event_id] = event
        order.append(event.event_id)
        if len(order) > self._window_size:
            del seen[order.popleft()]
        run.last_sequence = event.sequence
        runs = self._runs
        run_id = event.run_id
        if run_id in runs:
            return
        if len(runs) >= self._options.max_runs:
            oldest = next(iter(runs))
            del runs[oldest]
            self._children.pop(oldest, None)
            self._hot_id = self._hot = None
        runs[run_id] = run
        run.envelope = (run_id, *run.trace)
        parent_run_id = event.parent_run_id
        if parent_run_id is not None:
            self._children.setdefault(parent_run_id, set()).add(run_id)

    # -- projection -------------------------------------------------------------------------------

    def project(self, event: RunEvent) -> list[SurfaceSemanticEvent]:
        """The semantic events of one source event (``[]`` for an exact replay).

        Raises:
            SurfaceEventValidationError: not a ``RunEvent``, or a blank event id, run id or type.
            SurfaceEventSchemaVersionError: ``schemaVersion`` is not 1.
            SurfaceEventTraceError: a blank trace/span id, a trace change within a run, or a
                child that disagrees with its parent.
            SurfaceEventSequenceError: a sequence that is not positive or does not increase.
            SurfaceEventIdentityCollisionError: a known ``eventId`` with another payload.
            RedactionError: the data cannot be redacted (nothing is delivered or remembered).
        """
        if event.__class__ is DELTA_CLASS:
            # The hot path: a runtime text delta of a known run whose (already validated) trace
            # context it repeats. Any other case, or any doubt, takes the checked path below,
            # and nothing is changed before the last check (the id is new) has passed.
            run_id = event.run_id
            if run_id is self._hot_id:
                run = self._hot
            elif run_id.__class__ is str:
                run = self._hot = self._runs.get(run_id)
                self._hot_id = None if run is None else run_id
            else:
                run = None
            source: Any = event.data
            event_id: Any = event.event_id
            sequence: Any = event.sequence
            if (
                run is not None
                and sequence.__class__ is int
                and run.last_sequence < sequence <= MAX_SAFE
                and (event.parent_run_id, event.trace_id, event.span_id, event.parent_span_id)
                == run.trace
                and event.schema_version is _ONE  # the int 1 itself (else: the checked path)
                and event.type == "model.text.delta"
                and event_id.__class__ is str
                and event_id
                and not event_id.isspace()
                and source.__class__ is dict
            ):
                raw: dict[str, Any] = source
                delta: Any = raw.get("delta")
                # Runtime text deltas are {delta} or {delta, outputIndex}: nothing else to map.
                size = len(raw)
                index: Any = 0
                if size == 1:
                    given: Any = MISSING
                elif size == 2:
                    given = index = raw.get("outputIndex", raw)
                    if index.__class__ is not int or index < 0:
                        index = 0
                else:
                    given = raw
                timestamp = event.timestamp
                entry = (run.envelope, sequence, timestamp, delta, given)
                seen = self._seen
                # ``setdefault`` inserts the window entry (``delta_entry``, inlined) unless the
                # id is known (then the checked path tells a replay from a collision).
                if (
                    delta.__class__ is str
                    and given is not raw
                    and seen.setdefault(event_id, entry) is entry
                ):
                    order = self._order
                    order.append(event_id)
                    if len(order) > self._window_size:
                        del self._seen[order.popleft()]
                    run.last_sequence = sequence
                    iteration = run.iteration
                    block = run.delta_block
                    if block is None or run.delta_index != index:
                        block = run.text.get((iteration, index))
                        if block is None:
                            block = run.text[(iteration, index)] = Snapshot(
                                self._options.max_snapshot_chars
                            )
                        run.delta_block = block
                        run.delta_index = index
                    # Hold back what could still be the start of a secret (``release_text``).
                    held = block.held
                    released = None if held else self._released.get(delta)
                    if released is not None:
                        delta = released  # a short delta seen before: the same answer
                    else:
                        text = held + delta if held else delta
                        cut = held_tail_start(text, stack_frames=True)
                        if cut == len(text):
                            if held:
                                block.held = ""
                            released = text
                        else:
                            block.held = text[cut:]
                            released = text[:cut]
                        if released:
                            released = (
                                redact_piece(released, self._redactor)
                                if released[0] in _OPENERS
                                else self._redact_text(released)
                            )
                        if not held and cut == len(text) and len(delta) <= _CACHED_DELTA_CHARS:
                            cache = self._released
                            if len(cache) >= _CACHED_DELTAS:
                                cache.clear()
                            cache[delta] = released
                        delta = released
                    snapshot = block.text + delta
                    if len(snapshot) > block.limit:
                        snapshot = block.trim(snapshot)
                    block.text = snapshot
                    offset = block.offset
                    out: JsonObject = (
                        {
                            "delta": delta,
                            "snapshot": snapshot,
                            "outputIndex": index,
                            "iteration": iteration,
                        }
                        if not offset
                        else {
                            "delta": delta,
                            "snapshot": snapshot,
                            "outputIndex": index,
                            "iteration": iteration,
                            "snapshotOffset": offset,
                        }
                    )
                    # ``build_unchecked`` inlined: slots filled in place, then frozen (types.py).
                    semantic: Any = _Draft()
                    semantic.semantic_version = 1
                    semantic.source_event_id = event_id
                    semantic.source_type = "model.text.delta"
                    semantic.projection_index = 0
                    semantic.sequence = sequence
                    semantic.run_id = run_id
                    (
                        semantic.parent_run_id,
                        semantic.trace_id,
                        semantic.span_id,
                        semantic.parent_span_id,
                    ) = run.trace
                    semantic.timestamp = timestamp
                    semantic.type = _TEXT_DELTA
                    semantic.category = _TEXT
                    semantic.phase = "delta"
                    semantic.data = out
                    semantic.__class__ = SurfaceSemanticEvent
                    return [semantic]
        if event.__class__ in _ENVELOPES:
            run_id = event.run_id
            run = self._runs.get(run_id) if run_id.__class__ is str else None
        else:
            check_envelope(event)  # raises unless a valid RunEvent subclass
            run = None
        event_id: Any = event.event_id
        sequence: Any = event.sequence
        source_type: Any = event.type
        if (
            # The fast check: an event of a known run whose (already validated) trace context
            # it repeats; only its own id, type, version and sequence are checked here.
            run is None
            or event.trace_id != run.trace_id
            or event.span_id != run.span_id
            or event.parent_run_id != run.parent_run_id
            or event.parent_span_id != run.parent_span_id
            or event.schema_version != 1
            or event.schema_version.__class__ is not int
            or event_id.__class__ is not str
            or not event_id
            or event_id.isspace()
            or source_type.__class__ is not str
            or not source_type
            or source_type.isspace()
            or sequence.__class__ is not int
            or sequence > MAX_SAFE
        ):
            run = self._admit(event)
            if run is None:
                return []
        else:
            seen = self._seen.get(event_id)
            if seen is not None:
                if same_event(seen, event):
                    return []
                raise SurfaceEventIdentityCollisionError(
                    f"RunEvent {event_id} was seen before with a different payload.",
                    details={"eventId": event_id, "runId": event.run_id},
                )
            if sequence <= run.last_sequence:
                raise SurfaceEventSequenceError(
                    f"Run {event.run_id} event sequence {sequence} is not greater than "
                    f"{run.last_sequence}.",
                    details={"runId": event.run_id, "sequence": sequence},
                )
        source = event.data
        raw = cast(dict[str, Any], source) if type(source) is dict else {}
        redacted = self._redactor.redact(event.data)
        data: JsonObject = (
            cast(JsonObject, redacted) if type(redacted) is dict else {"value": redacted}
        )
        self._commit(event, run)
        if (run.text or run.reasoning) and event.type not in _STREAMING:
            # The event ends the model call's text blocks: what they hold back shows first.
            mapped = flush_held(run, self._mapping)
            mapped.extend(
                map_source_event(event.type, event.timestamp, data, raw, run, self._mapping)
            )
        else:
            mapped = map_source_event(event.type, event.timestamp, data, raw, run, self._mapping)
        return [
            _build(
                event.event_id,
                event.type,
                index,
                event.sequence,
                event.run_id,
                event.parent_run_id,
                event.trace_id,
                event.span_id,
                event.parent_span_id,
                event.timestamp,
                kind,
                category,
                phase,
                out,
            )
            for index, (kind, category, phase, out) in enumerate(mapped)
        ]

    def project_many(
        self, events: list[RunEvent] | tuple[RunEvent, ...]
    ) -> list[SurfaceSemanticEvent]:
        """Project several events in order and concatenate the results."""
        out: list[SurfaceSemanticEvent] = []
        for event in events:
            out.extend(self.project(event))
        return out
