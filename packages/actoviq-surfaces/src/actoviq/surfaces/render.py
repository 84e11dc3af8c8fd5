r"""Plain-text rendering of semantic events for terminals: ``render_text`` / ``arender_text``.

What a terminal shows, as text chunks to write in order (no colours, no cursor movement; a host
may style the chunks it gets, e.g. with ``rich``):

* model text inline, as it streams (``text.delta``); refusals inline too;
* one line per tool call: ``[tool] name {input}`` and its outcome on the same line
  (`` -> ok (12 ms)``, `` -> failed: …``, `` -> rejected``); when calls interleave, the outcome
  gets its own ``[tool] name -> …`` line;
* an approval as a prompt marker line per pending call:
  ``[approval required] send_email (call_1): Tool "send_email" requires approval.``;
* errors, cancellations and dropped-delta gaps as bracketed lines;
* the run's usage at the end: ``[usage] 2 requests, 120 in / 30 out tokens``.

Every line-shaped item starts on a fresh line, so text and markers never run together. What the
model or a tool controls (text, tool names and inputs, call ids, reasons, messages) goes through
:func:`escape_terminal_controls` first: an escape sequence, a carriage return or a bidirectional
override in a model's output shows as a visible escape (``\x1b``) instead of moving the cursor,
retitling the window, writing the clipboard or forging an approval line. The
renderer is a small state machine (:class:`TextRenderer`) with two drivers: :func:`render_text`
over any iterable and :func:`arender_text` over an async iterable such as a
:class:`~actoviq.surfaces.bridge.BridgeStream`.

Example:
    >>> from actoviq.events import RunEventSequencer, create_root_trace_context
    >>> from actoviq.surfaces import RunEventSemanticProjector
    >>> sequencer = RunEventSequencer(create_root_trace_context("r1"))
    >>> projector = RunEventSemanticProjector()
    >>> events = [
    ...     sequencer.next("model.text.delta", {"delta": "Hello"}),
    ...     sequencer.next("model.text.delta", {"delta": " world"}),
    ...     sequencer.next("run.completed", {"status": "completed", "usage": {"requests": 1}}),
    ... ]
    >>> "".join(render_text(projector.project_many(events)))
    'Hello world\n[usage] 1 request\n'
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any, Final, cast

import attrs

from actoviq.core import JsonObject
from actoviq.surfaces.types import SurfaceSemanticEvent
from actoviq.surfaces.types import SurfaceSemanticType as T

__all__ = [
    "APPROVAL_MARKER",
    "TextRenderOptions",
    "TextRenderer",
    "arender_text",
    "escape_terminal_controls",
    "render_text",
]

APPROVAL_MARKER: Final = "[approval required]"
"""Starts the line a terminal shows for each call waiting for an approval decision."""


_TEXT_UNSAFE: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_UNSAFE: Final = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_terminal_controls(text: str, *, single_line: bool = False) -> str:
    r"""``text`` with what a terminal would act on shown as visible escapes.

    C0 controls (ESC, BEL, backspace, carriage return, ...), DEL, C1 controls and the
    bidirectional embedding, override and isolate characters become ``\x1b``-style escapes, so
    text a model or tool controls cannot move the cursor, change the window title, write the
    clipboard (OSC 52), hide or reorder what is shown. Newlines and tabs are kept unless
    ``single_line`` (then they show as ``\n`` and ``\t`` too). Text without such characters is
    returned as is (the same object).

    Args:
        text: what to show.
        single_line: also escape newlines and tabs (for one-line labels: names, ids, reasons).

    Example:
        >>> escape_terminal_controls("ok\x1b]0;pwned\x07")
        'ok\\x1b]0;pwned\\x07'
        >>> escape_terminal_controls("a\nb", single_line=True)
        'a\\nb'
    """
    pattern = _LINE_UNSAFE if single_line else _TEXT_UNSAFE
    if pattern.search(text) is None:
        return text
    return pattern.sub(_visible, text)


@attrs.frozen(kw_only=True, slots=True)
class TextRenderOptions:
    """What :class:`TextRenderer` shows.

    Attributes:
        show_reasoning: show reasoning text (prefixed ``(thinking)``); off by default.
        show_usage: the run's usage line at the end.
        max_input_chars: tool inputs longer than this are cut with ``…``.
        show_child_runs: also render events of child runs (sub-agents).
        escape_controls: show terminal control characters in model and tool text as visible
            escapes (:func:`escape_terminal_controls`); turn off only when the chunks do not
            go to a terminal.
    """

    show_reasoning: bool = False
    show_usage: bool = True
    max_input_chars: int = 120
    show_child_runs: bool = True
    escape_controls: bool = True


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _usage_line(usage: JsonObject) -> str:
    parts: list[str] = []
    requests = usage.get("requests")
    if type(requests) is int:
        parts.append(_plural(requests, "request"))
    tokens_in, tokens_out = usage.get("inputTokens"), usage.get("outputTokens")
    if type(tokens_in) is int and type(tokens_out) is int and (tokens_in or tokens_out):
        parts.append(f"{tokens_in} in / {tokens_out} out tokens")
    cost = usage.get("costUsd")
    if type(cost) in (int, float) and cast(float, cost) > 0:
        parts.append(f"${cast(float, cost):.4f}")
    return "[usage] " + (", ".join(parts) if parts else "no usage reported")


class TextRenderer:
    """Turns semantic events into text chunks (see the module docstring).

    Args:
        options: see :class:`TextRenderOptions`.
    """

    def __init__(self, options: TextRenderOptions | None = None) -> None:
        self.options = options if options is not None else TextRenderOptions()
        self._at_line_start = True
        self._open_tool: str | None = None  # callId whose line is waiting for its outcome
        self._mode: str | None = None  # "text" | "thinking" while a block streams inline

    def _line(self, out: list[str], text: str) -> None:
        if self._open_tool is not None:
            out.append("\n")
            self._open_tool = None
            self._at_line_start = True
        if not self._at_line_start:
            out.append("\n")
        if self.options.escape_controls:
            text = escape_terminal_controls(text, single_line=True)
        out.append(text + "\n")
        self._at_line_start = True
        self._mode = None

    def _inline(self, out: list[str], text: str, mode: str) -> None:
        if self.options.escape_controls:
            text = escape_terminal_controls(text)
        if not text:
            return
        if self._open_tool is not None:
            out.append("\n")
            self._open_tool = None
            self._at_line_start = True
        if self._mode != mode:
            if not self._at_line_start:
                out.append("\n")
            if mode == "thinking":
                out.append("(thinking) ")
            self._mode = mode
        out.append(text)
        self._at_line_start = text.endswith("\n")

    def _input(self, value: object) -> str:
        if value is None:
            return ""
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        limit = self.options.max_input_chars
        return " " + (text if len(text) <= limit else text[: max(limit - 1, 0)] + "…")

    def _tool_outcome(self, event: SurfaceSemanticEvent) -> str:
        data = event.data
        if event.type is T.TOOL_REJECTED:
            return "rejected"
        if event.type is T.TOOL_FAILED:
            message = data.get("outputText")
            failure = data.get("failure")
            if type(message) is not str and type(failure) is dict:
                message = cast(JsonObject, failure).get("message")
            return f"failed: {message}" if type(message) is str and message else "failed"
        duration = data.get("durationMs")
        return f"ok ({round(cast(float, duration))} ms)" if type(duration) in (int, float) else "ok"

    def feed(self, event: SurfaceSemanticEvent) -> list[str]:
        """The chunks for one event (possibly none)."""
        if event.parent_run_id is not None and not self.options.show_child_runs:
            return []
        out: list[str] = []
        data = event.data
        kind = event.type
        if kind is T.TEXT_DELTA or (kind is T.MODEL_CONTENT and event.phase == "refusal"):
            self._inline(out, cast(str, data.get("delta") or ""), "text")
        elif kind is T.REASONING_DELTA:
            if self.options.show_reasoning:
                self._inline(out, cast(str, data.get("delta") or ""), "thinking")
        elif kind is T.TOOL_STARTED:
            name = data.get("publicName") or data.get("name") or "tool"
            self._line(out, f"[tool] {name}{self._input(data.get('input'))}")
            out[-1] = out[-1][:-1]  # keep the line open for the outcome
            self._at_line_start = False
            self._open_tool = cast(str, data.get("callId") or "")
        elif kind in (T.TOOL_COMPLETED, T.TOOL_FAILED, T.TOOL_REJECTED):
            outcome = self._tool_outcome(event)
            if self._open_tool is not None and self._open_tool == data.get("callId"):
                if self.options.escape_controls:
                    outcome = escape_terminal_controls(outcome, single_line=True)
                out.append(f" -> {outcome}\n")
                self._open_tool = None
                self._at_line_start = True
            else:
                name = data.get("publicName") or data.get("name") or "tool"
                self._line(out, f"[tool] {name} -> {outcome}")
        elif kind is T.TOOL_PROGRESS:
            message = data.get("message")
            if type(message) is str and message:
                self._line(out, f"  ... {message}")
        elif kind is T.INTERRUPTION_REQUESTED:
            self._interruption(out, data)
        elif kind is T.INTERRUPTION_CANCELLED:
            reason = data.get("reason")
            self._line(out, f"[cancelled] {reason}" if reason else "[cancelled]")
        elif kind is T.ERROR:
            code = data.get("code")
            label = f"[error {code}]" if type(code) is str else "[error]"
            self._line(out, f"{label} {data.get('message', 'Unknown error')}")
        elif kind is T.TERMINAL:
            self._terminal(out)
        elif kind is T.USAGE:
            usage = data.get("usage")
            if data.get("scope") == "run" and self.options.show_usage and type(usage) is dict:
                self._line(out, _usage_line(cast(JsonObject, usage)))
        elif kind is T.EXTENSION and data.get("producerType") == "stream.dropped":
            count = data.get("count")
            self._inline(out, f" [... {count} deltas dropped] ", "text")
        return out

    def _interruption(self, out: list[str], data: JsonObject) -> None:
        if data.get("scope") != "run":
            self._line(out, f"[retrying] {data.get('reason', '')}".rstrip())
            return
        entries: Any = data.get("interruptions")
        if type(entries) is not list or not entries:
            entries = [{"id": data.get("interruptionId"), "reason": data.get("reason")}]
        for raw in cast(list[Any], entries):
            entry = cast(JsonObject, raw) if type(raw) is dict else {}
            marker = (
                APPROVAL_MARKER
                if entry.get("kind", "approval") == "approval"
                else "[reconciliation required]"
            )
            tool = entry.get("toolName")
            call = entry.get("callId")
            where = f" {tool}" if tool else ""
            where += f" ({call})" if call else ""
            reason = entry.get("reason") or ""
            self._line(out, f"{marker}{where}: {reason}".rstrip(": ").rstrip())

    def _terminal(self, out: list[str]) -> None:
        if self._open_tool is not None:
            out.append("\n")
            self._open_tool = None
            self._at_line_start = True
        if not self._at_line_start:
            out.append("\n")
            self._at_line_start = True
        self._mode = None

    def finish(self) -> list[str]:
        """Chunks that end the output cleanly (a final newline if a line is open)."""
        out: list[str] = []
        self._terminal(out)
        return out


def render_text(
    events: Iterable[SurfaceSemanticEvent], options: TextRenderOptions | None = None
) -> Iterator[str]:
    """Text chunks for a terminal, in order (see the module docstring).

    Args:
        events: semantic events, e.g. a projector's output or a target's copies.
        options: what to show.

    Example:
        >>> # for chunk in render_text(semantics):
        >>> #     sys.stdout.write(chunk)
    """
    renderer = TextRenderer(options)
    for event in events:
        yield from renderer.feed(event)
    yield from renderer.finish()


async def arender_text(
    events: AsyncIterable[SurfaceSemanticEvent], options: TextRenderOptions | None = None
) -> AsyncIterator[str]:
    """:func:`render_text` over an async iterable (e.g. ``AgentRuntimeBridgeAdapter.stream``).

    Example:
        >>> # async with bridge.stream("hi") as stream:
        >>> #     async for chunk in arender_text(stream):
        >>> #         sys.stdout.write(chunk)
    """
    renderer = TextRenderer(options)
    async for event in events:
        for chunk in renderer.feed(event):
            yield chunk
    for chunk in renderer.finish():
        yield chunk
