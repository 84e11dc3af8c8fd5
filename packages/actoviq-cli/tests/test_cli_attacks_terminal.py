"""Model-controlled text reaching the terminal: escape sequences are shown, not acted on.

The approval question, streamed text and error lines carry text a model controls (call ids,
tool inputs, answers, an unknown tool's name). Before the fix an escape sequence or a carriage
return there went to the terminal raw: it could clear the line and redraw the approval question
as a different call, retitle the window or write the clipboard.
"""

from __future__ import annotations

import io

from actoviq.cli.approvals import describe_interruption
from actoviq.cli.output import Output
from actoviq.cli.render import TerminalEventSink
from actoviq.core import ActoviqError, Interruption
from actoviq.events import RunEventSequencer, create_root_trace_context
from actoviq.surfaces import RunEventSemanticProjector

ESCAPES = "\x1b]0;owned\x07\r\x1b[2K"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F]


def test_the_approval_question_cannot_be_redrawn() -> None:
    interruption = Interruption(
        id="i1",
        kind="approval",
        reason="needs approval",
        call_id=f"call_1{ESCAPES}Approve read_file (call_2)",
        tool_name="delete_everything",
        input={"path": f"/{ESCAPES}", "note": "a\nb"},
    )
    label = describe_interruption(interruption)
    assert _controls(label) == []
    assert "\n" not in label
    assert label.startswith("delete_everything (call_1\\x1b]0;owned\\x07\\r\\x1b[2K")


def test_streamed_text_is_escaped_on_a_terminal_and_raw_into_a_pipe() -> None:
    sequencer = RunEventSequencer(create_root_trace_context("r1"))
    projector = RunEventSemanticProjector()
    events = [
        sequencer.next("model.text.delta", {"delta": f"hi{ESCAPES}there\n"}),
        sequencer.next("run.completed", {"status": "completed"}),
    ]
    semantics = projector.project_many(events)
    shown: dict[str, str] = {}
    for name, stdout in (("terminal", _Terminal()), ("pipe", io.StringIO())):
        sink = TerminalEventSink(Output(stdout=stdout, stderr=io.StringIO()))
        for event in semantics:
            sink.feed(event)
        sink.finish()
        shown[name] = stdout.getvalue()
    assert _controls(shown["terminal"]) == []
    assert "hi\\x1b]0;owned\\x07\\r\\x1b[2Kthere" in shown["terminal"]
    assert f"hi{ESCAPES}there" in shown["pipe"]  # data into a file stays exact


def test_plain_lines_and_notes_are_escaped() -> None:
    stdout, stderr = _Terminal(), io.StringIO()
    output = Output(stdout=stdout, stderr=stderr)
    output.print(f"assistant: {ESCAPES}")
    output.note(f"note {ESCAPES}")
    assert _controls(stdout.getvalue()) == []
    assert _controls(stderr.getvalue()) == []


def test_an_error_line_is_one_escaped_line() -> None:
    stderr = io.StringIO()
    output = Output(stdout=io.StringIO(), stderr=stderr)
    output.fail(ActoviqError(f"Unknown tool 'x{ESCAPES}\nFAKE: all good'", code="X_FAILED"))
    text = stderr.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    assert _controls(text.rstrip("\n")) == []
    assert "\\x1b]0;owned\\x07" in text
