"""Streamed text cut at secret-safe points when the run's events are text-scanned (D10).

With ``RedactionPolicy(scan_text=True)`` the redaction processor scans each event alone, so a
secret the model writes across two text deltas (``"Bearer sk-"`` + ``"abc123"``) would show its
second half. The runtime therefore re-cuts its text, reasoning and refusal deltas at points the
engine can redact each piece alone (:class:`actoviq.events.TextStreamSegmenter`): the tail that
could still be a secret's start waits for the next delta of its block, and what a block still
holds is emitted as one last delta before ``model.response.completed`` (or when the stream
ends). Every character is emitted once, in order; the final output items are untouched.
"""

from __future__ import annotations

from typing import Final

from actoviq.core import JsonObject
from actoviq.events import TextStreamSegmenter

__all__ = ["StreamTextHold"]

_TEXT_KINDS: Final = frozenset({"model.text.delta", "model.reasoning.delta", "model.refusal.delta"})


class StreamTextHold:
    """One model stream's text blocks, each held back at its possible-secret tail.

    Args:
        stack_frames: also hold unfinished stack frames (the policy strips them).
    """

    __slots__ = ("_blocks", "_frames")

    def __init__(self, *, stack_frames: bool) -> None:
        self._frames = stack_frames
        self._blocks: dict[tuple[str, object], TextStreamSegmenter] = {}

    def take(self, kind: str, data: JsonObject) -> JsonObject | None:
        """The data to emit for a stream event (``None``: nothing to emit yet)."""
        delta = data.get("delta") if kind in _TEXT_KINDS else None
        if type(delta) is not str:
            return data
        key = (kind, data.get("outputIndex"))
        block = self._blocks.get(key)
        if block is None:
            block = self._blocks[key] = TextStreamSegmenter(stack_frames=self._frames)
        released = block.feed(delta)
        if not released and len(data) == (2 if "outputIndex" in data else 1):
            return None  # only held text: an empty delta would say nothing
        return {**data, "delta": released}

    def flush(self) -> list[tuple[str, JsonObject]]:
        """The held rest of every block, as one last delta each (blocks in first-seen order)."""
        found: list[tuple[str, JsonObject]] = []
        for (kind, index), block in self._blocks.items():
            rest = block.flush()
            if rest:
                data: JsonObject = {"delta": rest}
                if type(index) is int:
                    data["outputIndex"] = index
                found.append((kind, data))
        return found
