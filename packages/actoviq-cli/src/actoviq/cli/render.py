"""Terminal and JSON renderers of semantic events (the ``cli`` surface target).

The terminal renderer is :class:`actoviq.surfaces.TextRenderer` (text inline, one line per tool
call, approval markers, errors, usage) with each chunk styled by the semantic type of the event it
came from; the JSON renderer writes each event as ``{"kind": "event", "event": {...}}`` per line.
Neither looks at raw ``RunEvent`` s.
"""

from __future__ import annotations

from typing import Final, Protocol

from actoviq.cli.output import Output
from actoviq.surfaces import (
    SurfaceSemanticEvent,
    SurfaceSemanticType,
    TextRenderer,
    TextRenderOptions,
    surface_event_to_json,
)

__all__ = ["EventSink", "JsonEventSink", "TerminalEventSink", "sink_for"]

T = SurfaceSemanticType
_STYLES: Final[dict[SurfaceSemanticType, str]] = {
    T.REASONING_DELTA: "dim italic",
    T.TOOL_STARTED: "cyan",
    T.TOOL_PROGRESS: "dim cyan",
    T.TOOL_COMPLETED: "cyan",
    T.TOOL_FAILED: "yellow",
    T.TOOL_REJECTED: "yellow",
    T.INTERRUPTION_REQUESTED: "bold yellow",
    T.INTERRUPTION_CANCELLED: "yellow",
    T.ERROR: "bold red",
    T.USAGE: "dim",
    T.EXTENSION: "dim",
}


class EventSink(Protocol):
    """Receives a run's semantic events in order."""

    def feed(self, event: SurfaceSemanticEvent) -> None:
        """Show one event."""
        ...

    def finish(self) -> None:
        """End the output cleanly (the run is over)."""
        ...


class TerminalEventSink:
    """Streams a run to the terminal: :class:`TextRenderer` chunks, styled by event type.

    Args:
        output: where to write.
        show_reasoning: include reasoning text (dim, prefixed ``(thinking)``).
    """

    def __init__(self, output: Output, *, show_reasoning: bool = False) -> None:
        self.output = output
        self.renderer = TextRenderer(
            TextRenderOptions(show_reasoning=show_reasoning, escape_controls=output.is_terminal)
        )

    def feed(self, event: SurfaceSemanticEvent) -> None:
        """Write the event's chunks (most events have none: lifecycle, request bookkeeping)."""
        style = _STYLES.get(event.type)
        for chunk in self.renderer.feed(event):
            self.output.write(chunk, style)

    def finish(self) -> None:
        """Close an open line."""
        for chunk in self.renderer.finish():
            self.output.write(chunk)


class JsonEventSink:
    """Writes every semantic event as one NDJSON line ``{"kind": "event", "event": {...}}``."""

    def __init__(self, output: Output) -> None:
        self.output = output

    def feed(self, event: SurfaceSemanticEvent) -> None:
        """Write the event's wire form."""
        self.output.emit({"kind": "event", "event": surface_event_to_json(event)})

    def finish(self) -> None:
        """Nothing to close."""


def sink_for(output: Output, *, show_reasoning: bool = False) -> EventSink:
    """The JSON sink with ``--json``, else the terminal one."""
    if output.json_mode:
        return JsonEventSink(output)
    return TerminalEventSink(output, show_reasoning=show_reasoning)
