"""Redacting text that arrives in pieces, so no secret shows split across two pieces.

A secret's shape is only visible whole: ``"Bearer sk-"`` then ``"abc123"`` are two innocent
strings. Scanning each streamed delta alone would deliver the second half of the secret. So the
stream is cut at *safe points* instead: :func:`held_tail_start` finds the tail of the text seen so
far that could still be the start of a secret (the word being written, with the key, ``=``/``:``
or ``Bearer`` before it that a value may still follow, and in surface mode an unfinished
stack-trace frame). That tail is held back; everything before it is redacted and released. The
next piece (or the end of the stream, :meth:`TextStreamSegmenter.flush`) releases the held tail
once it shows what it is. Every character is delivered once, in order.

The hold is bounded (:data:`DEFAULT_MAX_HELD_CHARS`): a single unbroken run longer than that is
cut at the bound, so memory and delay stay flat whatever the model writes.

Example:
    >>> stream = TextStreamRedactor(Redactor(RedactionPolicy(scan_text=True)))
    >>> [stream.feed("use Bearer sk-te"), stream.feed("st-abc12345 now"), stream.flush()]
    ['use ', 'Bearer [REDACTED] ', 'now']
"""

from __future__ import annotations

import re
from typing import Final

from actoviq.events.errors import EventValidationError
from actoviq.events.redaction import RedactionPolicy, Redactor
from actoviq.events.redaction_text import ASSIGNMENT_KEYS, KEY_PREFIX

__all__ = [
    "DEFAULT_MAX_HELD_CHARS",
    "TextStreamRedactor",
    "TextStreamSegmenter",
    "held_tail_start",
]

DEFAULT_MAX_HELD_CHARS: Final = 1024
"""The longest tail a streamed text holds back (a longer unbroken run is cut at this bound)."""

# Words after which a secret value may still follow past whitespace: the secret-named keys of
# the assignment rule (with their prefixes, optionally quoted, optionally with their ``=``/``:``),
# ``authorization``, the one-token authorization schemes (``Bearer``, ``Basic``, ``Token``…),
# or a lone ``=``/``:``. Matched against one whitespace-free word.
_KEYWORDS: Final = (
    rf"{KEY_PREFIX}(?:{ASSIGNMENT_KEYS}|authorization)"
    r"|bearer|basic|token|bot|api-?key|ntlm|jwt"
)
_CONNECTOR: Final = re.compile(
    rf"(?:(?:{_KEYWORDS})[\"']?(?:[=:][\"']?)?|\A[\"']?[=:][\"']?)\Z", re.IGNORECASE
)
# A cheap necessary condition for a connector word, checked before the regular expressions:
# it ends in a quote, ``=`` or ``:``, or its last three letters end one of the keywords.
_SEPARATORS: Final = frozenset("\"'=:")
# (Tails that end common words, such as "code" or "special", are left out: a key ending so
# still holds once its ``=``/``:`` is written; only "passcode :" split before the colon is not.)
_STEM_TAILS: Final = frozenset(
    {"rer", "sic", "key", "ken", "ord", "swd", "pwd", "ase", "ret", "ion", "bot", "tlm", "jwt"}
)
_LAST_WORD: Final = re.compile(r"(?<!\S)\S+\Z")
_WORD_BEFORE: Final = re.compile(r"(?<!\S)\S+\s*\Z")
# Surface mode: a stack frame still being written (its path not yet complete). A ``File "…"``
# line holds until the line after it (its source line) is complete; a JavaScript/Java frame
# holds once it looks like one (``at name (`` or ``at /path``); a line ending in ``File`` or
# ``at`` holds those words until the next one shows whether a frame follows.
_OPEN_FRAME: Final = re.compile(
    r"(?:[ \t]*\bFile(?: \"[^\n]*(?:\n[^\n]*)?| ?)"
    r"|[ \t]*\bat ?"
    r"|[ \t]*\bat (?:[^\n()]*\([^()\n]*|(?:[A-Za-z]:[\\/]|/|file:|node:)[^\s)]*))\Z"
)
_MAX_CONNECTORS: Final = 3


def held_tail_start(
    text: str, *, stack_frames: bool = False, max_held: int = DEFAULT_MAX_HELD_CHARS
) -> int:
    """Where the tail of ``text`` that could still become (part of) a secret begins.

    ``text[:start]`` can be redacted on its own: no secret shape that begins in it can continue
    past ``start``, whatever comes next. ``len(text)`` means nothing needs holding.

    Args:
        text: the stream's text not yet released.
        stack_frames: also hold an unfinished stack-trace frame (surface mode).
        max_held: the longest tail held; a longer one is cut to its last ``max_held`` chars.

    Example:
        >>> held_tail_start("say hello ")
        10
        >>> held_tail_start("the key is api_key= ")
        11
    """
    end = len(text)
    if not end:
        return 0
    if (
        # The common streamed word ("runtime "): ends in one space after a word that takes no
        # value, with no stack frame anywhere in it.
        text[-1] == " "
        and end > 3
        and text[-2] not in _SEPARATORS
        and not text[-2].isspace()
        and text[-4:-1].lower() not in _STEM_TAILS
        and not (stack_frames and ("File" in text or "at " in text))
    ):
        return end
    floor = end - max_held if end > max_held else 0
    start = end
    if not text[-1].isspace():  # the text ends inside a word: the word may go on
        found = _LAST_WORD.search(text, floor)
        start = found.start() if found is not None else floor
        if not text.isascii() and "=" not in text[start:] and ":" not in text[start:]:
            # Every secret shape starts with an ASCII character, and only an assignment or a
            # URL (an "=" or ":") carries non-ASCII characters inside one: in a word without
            # them only its trailing ASCII run can still grow into a secret. (Scripts written
            # without spaces would otherwise be held up to the bound.)
            ascii_run = end
            while ascii_run > start and text[ascii_run - 1].isascii():
                ascii_run -= 1
            start = ascii_run
    for _ in range(_MAX_CONNECTORS):
        word_end = start
        while word_end > floor and text[word_end - 1].isspace():
            word_end -= 1
        if word_end <= floor or (
            text[word_end - 1] not in _SEPARATORS
            and text[max(floor, word_end - 3) : word_end].lower() not in _STEM_TAILS
        ):
            break  # the word before cannot take a value: nothing before ``start`` is open
        found = _WORD_BEFORE.search(text, floor, start)
        if found is None or _CONNECTOR.search(found.group().rstrip()) is None:
            break
        start = found.start()
    if stack_frames and start > floor and ("File" in text or "at " in text):
        last = text.rfind("\n", floor, end)  # a frame spans at most its line and the next
        before = text.rfind("\n", floor, last) if last > floor else -1
        found = _OPEN_FRAME.search(text, max(floor, before + 1))
        if found is not None and found.start() < start:
            start = found.start()
    return max(start, floor)


class TextStreamSegmenter:
    """Cuts a stream of text pieces at points where each released part can be redacted alone.

    :meth:`feed` returns the raw (unredacted) text that is safe to release now; :meth:`flush`
    returns the held rest at the end of the stream. Joined, the returned strings are exactly
    the pieces fed, in order. Not thread-safe: one per stream.

    Args:
        stack_frames: also hold unfinished stack-trace frames (surface mode).
        max_held_chars: the longest tail held back.

    Raises:
        EventValidationError: ``max_held_chars`` is not a positive int.
    """

    __slots__ = ("_frames", "_held", "_max_held")

    def __init__(
        self, *, stack_frames: bool = False, max_held_chars: int = DEFAULT_MAX_HELD_CHARS
    ) -> None:
        if type(max_held_chars) is not int or max_held_chars < 1:
            raise EventValidationError(
                f"max_held_chars must be a positive int, got {max_held_chars!r}."
            )
        self._held = ""
        self._frames = stack_frames
        self._max_held = max_held_chars

    @property
    def held(self) -> str:
        """The raw text held back right now (never delivered yet)."""
        return self._held

    def feed(self, piece: str) -> str:
        """Add ``piece``; return the raw text that may be released (possibly ``""``)."""
        text = self._held + piece if self._held else piece
        cut = held_tail_start(text, stack_frames=self._frames, max_held=self._max_held)
        self._held = text[cut:]
        return text[:cut]

    def flush(self) -> str:
        """The stream ended: return the held text and hold nothing."""
        text, self._held = self._held, ""
        return text


class TextStreamRedactor:
    """A :class:`TextStreamSegmenter` whose released parts go through ``Redactor.redact_text``.

    Surface mode (``strip_stack_traces``) in the redactor's policy also holds stack frames.

    Args:
        redactor: the engine (default: text scanning on).
        max_held_chars: the longest tail held back.
    """

    __slots__ = ("_redact", "_segmenter")

    def __init__(
        self, redactor: Redactor | None = None, *, max_held_chars: int = DEFAULT_MAX_HELD_CHARS
    ) -> None:
        engine = redactor if redactor is not None else Redactor(RedactionPolicy(scan_text=True))
        self._redact = engine.redact_text
        self._segmenter = TextStreamSegmenter(
            stack_frames=engine.policy.strip_stack_traces, max_held_chars=max_held_chars
        )

    @property
    def held(self) -> str:
        """The raw text held back right now."""
        return self._segmenter.held

    def feed(self, piece: str) -> str:
        """Add ``piece``; return the redacted text that may be delivered now."""
        released = self._segmenter.feed(piece)
        return self._redact(released) if released else ""

    def flush(self) -> str:
        """The stream ended: the held text, redacted."""
        released = self._segmenter.flush()
        return self._redact(released) if released else ""
