"""Terminal control characters in model and tool text: shown, never acted on.

A model (or a tool it called) controls the text, tool inputs, call ids, reasons and failure
messages a terminal renderer prints. Written raw, an escape sequence there can retitle the
window, write the clipboard (OSC 52), clear the screen, or, with a carriage return, draw a
harmless-looking line over an approval marker. Before the fix every one reached the chunks as is.
"""

from __future__ import annotations

from typing import Any

import pytest
from surfaces_testkit import Stream

from actoviq.surfaces import (
    APPROVAL_MARKER,
    RunEventSemanticProjector,
    SurfaceSemanticEvent,
    TextRenderOptions,
    escape_terminal_controls,
    render_text,
)

OSC_TITLE = "\x1b]0;owned\x07"
OSC_CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"


def _semantics(script: list[tuple[str, Any]]) -> list[SurfaceSemanticEvent]:
    stream = Stream()
    projector = RunEventSemanticProjector()
    return [e for kind, data in script for e in projector.project(stream.next(kind, data))]


def _terminal_unsafe(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain text", "plain text"),
        ("a\x1b[2Jb", "a\\x1b[2Jb"),
        (OSC_TITLE, "\\x1b]0;owned\\x07"),
        ("over\rwrite", "over\\rwrite"),
        ("csi\x9b31m", "csi\\x9b31m"),
        ("del\x7f", "del\\x7f"),
        ("bidi \u202eevil\u202c \u2066x\u2069", "bidi \\u202eevil\\u202c \\u2066x\\u2069"),
        ("lines\nand\ttabs", "lines\nand\ttabs"),
        ("nul\x00", "nul\\x00"),
        ("ünïcödé ✓ 中文", "ünïcödé ✓ 中文"),
    ],
)
def test_escape_terminal_controls(raw: str, shown: str) -> None:
    assert escape_terminal_controls(raw) == shown
    assert escape_terminal_controls(shown) == shown  # idempotent: escaping twice changes nothing


def test_single_line_escapes_newlines_and_tabs_too() -> None:
    assert escape_terminal_controls("a\nb\tc\r", single_line=True) == "a\\nb\\tc\\r"


def test_clean_text_is_returned_as_is() -> None:
    text = "nothing to escape here"
    assert escape_terminal_controls(text) is text


def test_model_text_tool_lines_and_approvals_cannot_drive_the_terminal() -> None:
    semantics = _semantics(
        [
            ("model.text.delta", {"delta": f"hello{OSC_TITLE} there"}),
            ("model.text.delta", {"delta": f"{OSC_CLIPBOARD}\r[tool] fake -> ok"}),
            (
                "tool.started",
                {"callId": "c\r1", "name": "search", "input": {"q": "x\u202ey\x1b[8m"}},
            ),
            (
                "tool.failed",
                {"callId": "c\r1", "name": "search", "failure": {"message": "no\x1b[2Jpe\nx"}},
            ),
            (
                "run.interrupted",
                {
                    "interruptionId": "i1",
                    "reason": "r",
                    "interruptions": [
                        {
                            "id": "i1",
                            "kind": "approval",
                            "reason": "ok?\r\x1b[2K[approval required] harmless (safe)",
                            "callId": "d\x1b[1A",
                            "toolName": "pay",
                        }
                    ],
                },
            ),
        ]
    )
    text = "".join(render_text(semantics))
    assert _terminal_unsafe(text) == []
    assert "\u202e" not in text
    lines = text.splitlines()
    assert (
        lines[0] == "hello\\x1b]0;owned\\x07 there\\x1b]52;c;cm0gLXJmIH4=\\x07\\r[tool] fake -> ok"
    )
    assert lines[1].startswith("[tool] search ")
    assert lines[1].endswith(" -> failed: no\\x1b[2Jpe\\nx")
    assert lines[2].startswith(f"{APPROVAL_MARKER} pay (d\\x1b[1A): ok?\\r\\x1b[2K")
    assert len(lines) == 3  # no newline smuggled in from a label


def test_escaping_can_be_turned_off_for_non_terminals() -> None:
    semantics = _semantics(
        [
            ("model.text.delta", {"delta": f"raw{OSC_TITLE}"}),
            ("run.completed", {"status": "completed"}),
        ]
    )
    text = "".join(render_text(semantics, TextRenderOptions(escape_controls=False)))
    assert OSC_TITLE in text
