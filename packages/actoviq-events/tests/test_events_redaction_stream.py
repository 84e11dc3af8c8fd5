"""Streamed text redaction: a secret split across pieces at any point is never shown in part.

The canaries come from the strategy of ``test_events_canary_property.py`` (secrets under keys,
in bearer headers, URL credentials, query parameters, assignments, JSON in text).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actoviq.events import (
    EventValidationError,
    RedactionPolicy,
    Redactor,
    TextStreamRedactor,
    TextStreamSegmenter,
    held_tail_start,
)


def _canary_module() -> Any:
    path = Path(__file__).with_name("test_events_canary_property.py")
    spec = importlib.util.spec_from_file_location("actoviq_events_canary_strategy", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CANARY = _canary_module()
MARK: str = CANARY.MARK
canary_trees: st.SearchStrategy[Any] = CANARY._trees(scan_text=True)
SCANNING = Redactor(RedactionPolicy(scan_text=True))
SURFACE = Redactor(RedactionPolicy.surface())


def _streamed(pieces: list[str], redactor: Redactor = SCANNING) -> list[str]:
    stream = TextStreamRedactor(redactor)
    return [*(stream.feed(piece) for piece in pieces), stream.flush()]


@settings(max_examples=30, deadline=None)
@given(canary_trees)
def test_a_canary_split_in_two_at_any_position_never_shows(data: Any) -> None:
    text = json.dumps(data)
    at = text.index(MARK)
    for cut in range(max(0, at - 12), min(len(text), at + 40)):
        out = "".join(_streamed([text[:cut], text[cut:]]))
        assert MARK not in out, cut
        assert out == SCANNING.redact_text(text)  # the same as scanning the text whole


@settings(max_examples=60, deadline=None)
@given(canary_trees, st.lists(st.integers(0, 10_000), max_size=10))
def test_a_canary_split_in_many_pieces_never_shows(data: Any, cuts: list[int]) -> None:
    text = json.dumps(data)
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    released = _streamed(pieces, SURFACE)
    assert MARK not in "".join(released)
    segmenter = TextStreamSegmenter(stack_frames=True)
    raw = [*(segmenter.feed(piece) for piece in pieces), segmenter.flush()]
    assert "".join(raw) == text  # every character once, in order


def test_what_is_held_and_released() -> None:
    assert held_tail_start("plain words ") == len("plain words ")  # nothing could continue
    assert held_tail_start("half a wor") == len("half a ")  # the word being written
    assert held_tail_start("send Authorization: Bearer ") == len("send ")  # a value may follow
    assert held_tail_start("x password : ") == 2
    assert held_tail_start('{"password": ') == 0
    stream = TextStreamRedactor(SCANNING)
    assert stream.feed("use Bearer sk-te") == "use "
    assert stream.held == "Bearer sk-te"
    assert stream.feed("st-abc12345 now") == "Bearer [REDACTED] "
    assert stream.flush() == "now" and stream.held == ""


def test_surface_mode_holds_an_unfinished_stack_frame() -> None:
    trace = 'Traceback (most recent call last):\n  File "/srv/app/secret_path.py", line 3, in f\n'
    frame = trace.index("  File")
    assert held_tail_start(trace[:-20], stack_frames=True) == frame
    assert held_tail_start(trace + "    return x", stack_frames=True) == frame  # its source line
    assert held_tail_start(trace + "    return x\n", stack_frames=True) == len(trace) + 13
    for cut in range(frame, len(trace)):
        out = "".join(_streamed([trace[:cut], trace[cut:], "    return x\nok "], SURFACE))
        assert "secret_path" not in out, cut


def test_the_hold_is_bounded() -> None:
    token = "sk-" + "a" * 100
    assert held_tail_start(token, max_held=16) == len(token) - 16
    segmenter = TextStreamSegmenter(max_held_chars=16)
    released = segmenter.feed(token)
    assert len(segmenter.held) == 16 and released + segmenter.held == token
    with pytest.raises(EventValidationError, match="max_held_chars"):
        TextStreamSegmenter(max_held_chars=0)


def test_text_without_spaces_is_not_held_up() -> None:
    prose = "我们今天部署了新版本一切正常"  # no spaces: held to the bound before
    assert held_tail_start(prose) == len(prose)
    assert held_tail_start(prose + "see sk-ab") == len(prose) + len("see ")
    assert held_tail_start(prose + "sk-ab") == len(prose)  # the ASCII run may still grow
    assert held_tail_start("密码password=值") == 0  # an assignment may carry it: hold the word
    stream = TextStreamRedactor(SCANNING)
    out = [stream.feed(piece) for piece in ("部署用的令牌是sk-te", "st-CANARY1234 好的")]
    assert "CANARY" not in "".join([*out, stream.flush()])
    assert out[0] == "部署用的令牌是"
