"""Per-run projector state: trace context, last sequence, snapshots and tool records.

Text and reasoning snapshots are keyed by ``(iteration, outputIndex)`` (spec 03 §8.1 Q26: the
text of one model call never leaks into the next). Only the current iteration's snapshots and
argument buffers are kept, and every snapshot is a bounded tail, so a run's state stays small
whatever the stream length.
"""

from __future__ import annotations

import json
from typing import Any, Final, cast

from actoviq.core import JsonObject

__all__ = ["ArgumentBuffer", "RunState", "Snapshot", "TraceKey"]

TraceKey = tuple[str | None, str, str, str | None]
"""``(parentRunId, traceId, spanId, parentSpanId)`` of a run."""

MAX_ARGUMENT_CHARS: Final = 64 * 1024
"""Argument text buffered per tool call; longer argument streams are not rebuilt from deltas."""

MAX_STARTED_TOOLS: Final = 1024


class Snapshot:
    """The accumulated text of one block, as a tail of at most ``limit`` characters.

    When the text outgrows ``limit``, its front is dropped down to ``limit // 2`` characters
    (so a long stream pays one slice per ``limit // 2`` characters, not one per delta).
    ``offset`` counts the characters dropped, so ``offset + len(text)`` is the full length.
    ``held`` is raw text not shown yet (a possible secret's start, see the projector).
    """

    __slots__ = ("given", "held", "limit", "offset", "refusal", "text")

    def __init__(self, limit: int) -> None:
        self.text = ""
        self.offset = 0
        self.limit = limit
        # Raw text held back because it could still be the start of a secret (bounded; see
        # ``actoviq.events.held_tail_start``); released by the next delta or the block's end.
        self.held = ""
        self.given = False  # the producer sends whole snapshots (they already hold ``held``)
        self.refusal = False  # the block streams a refusal (its release is a refusal delta)

    def add(self, delta: str) -> str:
        """Append ``delta``; return the new snapshot text."""
        text = self.text + delta
        if len(text) > self.limit:
            text = self.trim(text)
        self.text = text
        return text

    def trim(self, text: str) -> str:
        """Cut an over-long text down to its tail (``limit // 2`` characters); count the cut."""
        drop = len(text) - self.limit // 2
        self.offset += drop
        return text[drop:]

    def replace(self, text: str) -> str:
        """Replace the snapshot (a producer sent its own); return the kept text."""
        over = len(text) - self.limit
        if over > 0:
            self.offset = over
            text = text[over:]
        else:
            self.offset = 0
        self.text = text
        return text


class ArgumentBuffer:
    """Raw argument text of one tool call (never emitted as is) and its parsed input."""

    __slots__ = ("complete", "length", "name", "overflow", "parts", "size")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.length = 0
        self.overflow = False
        self.complete: JsonObject | None = None
        self.name: str | None = None

    def add(self, fragment: str) -> None:
        """Buffer one raw fragment (past the limit, buffering stops for good)."""
        self.length += len(fragment)
        if self.overflow:
            return
        self.size += len(fragment)
        if self.size > MAX_ARGUMENT_CHARS:
            self.overflow = True
            self.parts.clear()
            return
        self.parts.append(fragment)

    def reset_to(self, text: str) -> None:
        """A producer sent the whole text so far (legacy ``snapshot``)."""
        self.parts = [text]
        self.size = self.length = len(text)
        self.overflow = self.size > MAX_ARGUMENT_CHARS
        if self.overflow:
            self.parts.clear()

    def text(self) -> str | None:
        """The buffered raw text, or None after an overflow."""
        return None if self.overflow else "".join(self.parts)

    def parse(self) -> JsonObject | None:
        """The arguments as a JSON object once the buffered text is one (else None)."""
        if self.complete is not None:
            return self.complete
        if self.overflow or not self.parts:
            return None
        tail = self.parts[-1].rstrip()
        if not tail.endswith("}"):
            return None  # cheap: an object can only be complete when the text ends in "}"
        try:
            value: Any = json.loads("".join(self.parts))
        except ValueError:
            return None
        return cast(JsonObject, value) if type(value) is dict else None


class RunState:
    """What the projector remembers about one run."""

    __slots__ = (
        "arguments",
        "delta_block",
        "delta_index",
        "envelope",
        "iteration",
        "last_sequence",
        "parent_run_id",
        "parent_span_id",
        "reasoning",
        "span_id",
        "started_tools",
        "text",
        "trace",
        "trace_id",
    )

    def __init__(self, trace: TraceKey) -> None:
        self.trace = trace
        # The same four values, unpacked for the per-event comparison on the hot path.
        self.parent_run_id, self.trace_id, self.span_id, self.parent_span_id = trace
        self.last_sequence = 0
        # ``(runId, parentRunId, traceId, spanId, parentSpanId)``: shared by the identity-window
        # entries of the run's text deltas (set when the projector registers the run).
        self.envelope: tuple[str | None, ...] = ()
        self.iteration = 0
        self.text: dict[tuple[int, object], Snapshot] = {}
        self.reasoning: dict[tuple[int, object], Snapshot] = {}
        self.arguments: dict[str, ArgumentBuffer] = {}
        self.started_tools: dict[str, JsonObject] = {}
        # The text block the last runtime text delta went to (the projector's hot path skips
        # the ``text`` lookup while deltas keep going to it); forgotten whenever ``text`` is.
        self.delta_block: Snapshot | None = None
        self.delta_index: object = None

    def new_iteration(self, iteration: int) -> None:
        """A model call begins: earlier calls' snapshots and argument buffers are dropped."""
        self.iteration = iteration
        self.delta_block = None
        self.text.clear()
        self.reasoning.clear()
        self.arguments.clear()

    def remember_tool(self, call_id: str, record: JsonObject) -> None:
        """Keep a started tool's record until it completes (bounded)."""
        tools = self.started_tools
        if call_id not in tools and len(tools) >= MAX_STARTED_TOOLS:
            del tools[next(iter(tools))]
        tools[call_id] = record

    def release(self, *, interrupted: bool = False) -> None:
        """The run reached a terminal event: drop the heavy parts, keep the validation state.

        An interrupted run keeps its tool arguments: its calls start when it is resumed.
        """
        self.delta_block = None
        self.text.clear()
        self.reasoning.clear()
        self.started_tools.clear()
        if not interrupted:
            self.arguments.clear()
