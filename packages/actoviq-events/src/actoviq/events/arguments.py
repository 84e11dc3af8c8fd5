"""Tool-call argument *text*: the one place key-based redaction cannot see into (D6, D10).

A model streams a tool call's arguments as JSON text in pieces (``model.tool_call.delta``'s
``argumentsDelta``; raw provider events carry the same pieces as ``arguments``, ``partial_json``
or an ``…arguments.delta`` event's ``delta``). A piece is not a JSON object, so the keys inside it
(``api_key``) never reach the key matcher; a secret may even be split across pieces. The
redaction engine therefore fails closed on argument text (see :class:`RedactionPolicy
<actoviq.events.redaction.RedactionPolicy>`):

* text under an argument key that parses as a whole JSON object or array is parsed, redacted by
  key like any other value, and serialised again;
* text that does not parse (a fragment) is withheld: the replacement marker in raw events;
  ``model.tool_call.delta`` events carry ``argumentsLength`` instead of ``argumentsDelta``, and
  the event that completes a call's arguments also carries them parsed and redacted
  (``arguments``), assembled by :class:`ArgumentStreams`;
* ``RedactionPolicy(raw_argument_deltas=True)`` restores the raw fragments for hosts that want
  them (and accept that a key-based engine cannot redact them).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any, Final, cast

__all__ = [
    "ARGUMENT_TEXT_KEYS",
    "FRAGMENT",
    "MAX_ARGUMENT_TEXT",
    "ArgumentStreams",
    "is_argument_delta_event",
    "parse_argument_text",
]

ARGUMENT_TEXT_KEYS: Final = frozenset({"arguments", "arguments_delta", "partial_json"})
"""Normalised keys (``snake_case``) whose string values are tool-argument JSON text."""

MAX_ARGUMENT_TEXT: Final = 1 << 20
"""Characters of argument text parsed or assembled per call; beyond that it is only withheld."""

MAX_OPEN_CALLS: Final = 1024
"""Calls whose arguments are being assembled at once (the oldest is forgotten beyond that)."""

FRAGMENT: Final = object()
"""What :func:`parse_argument_text` returns for text that is not one whole JSON value."""


def _no_constants(name: str) -> object:
    raise ValueError(f"non-finite number {name}")


def parse_argument_text(text: str) -> object:
    """The JSON value ``text`` holds, or :data:`FRAGMENT` (not whole JSON, too long, too deep)."""
    if len(text) > MAX_ARGUMENT_TEXT:
        return FRAGMENT
    try:
        return json.loads(text, parse_constant=_no_constants)
    except (ValueError, RecursionError):
        return FRAGMENT


def is_argument_delta_event(event: object) -> bool:
    """A raw provider stream event whose ``delta`` is argument text (``…arguments.delta``)."""
    if type(event) is not dict:
        return False
    kind = cast(dict[str, Any], event).get("type")
    return isinstance(kind, str) and kind.endswith("arguments.delta")


class ArgumentStreams:
    """Assembles each streamed call's argument pieces until they parse as one JSON object.

    Keyed by ``(run id, call id)``; bounded in calls (:data:`MAX_OPEN_CALLS`, oldest forgotten)
    and in text per call (:data:`MAX_ARGUMENT_TEXT`: longer arguments are never emitted).
    """

    __slots__ = ("_calls", "_max_calls")

    def __init__(self, max_calls: int = MAX_OPEN_CALLS) -> None:
        self._max_calls = max_calls
        self._calls: OrderedDict[tuple[str, str], tuple[list[str], int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._calls)

    def add(self, run_id: str, call_id: str, piece: str) -> dict[str, Any] | None:
        """Add one piece; return the call's arguments once they parse as a JSON object."""
        key = (run_id, call_id)
        calls = self._calls
        entry = calls.pop(key, None)
        parts, size = entry if entry is not None else ([], 0)
        size += len(piece)
        if size > MAX_ARGUMENT_TEXT:
            calls[key] = ([], size)  # too long to assemble: keep only the count
            return None
        parts.append(piece)
        if piece.rstrip().endswith("}"):  # an object can only be complete on a closing brace
            value = parse_argument_text("".join(parts))
            if type(value) is dict:
                return cast(dict[str, Any], value)
        calls[key] = (parts, size)
        while len(calls) > self._max_calls:
            calls.popitem(last=False)
        return None

    def forget_run(self, run_id: str) -> None:
        """Drop every call of ``run_id`` (its model turn or the run ended)."""
        for key in [key for key in self._calls if key[0] == run_id]:
            del self._calls[key]
