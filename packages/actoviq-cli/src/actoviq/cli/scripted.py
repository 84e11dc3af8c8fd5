"""The ``scripted:`` provider of the command: offline, deterministic and restart-proof.

``--model scripted:<anything>`` runs agents without a network. Without a script every answer
echoes the last user message and counts the user messages the model was sent, which makes a
session's history visible (``You said: hi (message 3)``). A script (JSON, named by
``[providers.scripted] script = "script.json"`` or ``$ACTOVIQ_SCRIPT``) lists turns::

    {"turns": [
      {"match": "pay", "toolCalls": [{"id": "call_pay", "name": "send_payment",
                                      "input": {"invoice": "INV-42"}}]},
      {"match": "pay", "text": "Paid."},
      {"match": "slow", "text": "a long answer", "eventDelayMs": 200}
    ]}

A turn is chosen from the request alone, never from a counter: the turns whose ``match``
(a case-insensitive regular expression) finds the last user message are the candidates, and the
``k``-th is used where ``k`` is the number of model answers since that message. So a run resumed
in another process, or a chat restarted, gets the answer its transcript calls for. Past the last
candidate the echo answers. Turn keys: ``text``, ``toolCalls`` (``id`` optional), ``reasoning``,
``streamDeltas`` (default: the text word by word), ``usage`` (camelCase), ``delayMs``,
``eventDelayMs``, ``match``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

import attrs

from actoviq.cli.errors import CliConfigError
from actoviq.core import CanonicalItem, TextItem, ToolCallItem, ToolResultItem
from actoviq.providers import ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn

__all__ = ["ScriptTurn", "load_script", "scripted_provider", "select_turn"]

_TURN_KEYS: Final = frozenset(
    {"match", "text", "toolCalls", "reasoning", "streamDeltas", "usage", "delayMs", "eventDelayMs"}
)


@attrs.frozen(kw_only=True, slots=True)
class ScriptTurn:
    """One scripted answer and the user messages it applies to (``match``)."""

    match: re.Pattern[str] | None
    turn: ScriptedTurn


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text) or [text]


def _turn(raw: object, where: str) -> ScriptTurn:
    if not isinstance(raw, dict):
        raise CliConfigError("a turn must be an object", path=where)
    data = cast(dict[str, Any], raw)
    unknown = sorted(set(data) - _TURN_KEYS)
    if unknown:
        raise CliConfigError(f"unknown turn key {unknown[0]!r}", path=where)
    try:
        pattern = re.compile(data["match"], re.IGNORECASE) if "match" in data else None
        calls = [
            ToolCallItem(
                id=str(call.get("id") or f"call_{index}"),
                name=call["name"],
                input=call.get("input", {}),
            )
            for index, call in enumerate(cast(list[dict[str, Any]], data.get("toolCalls", [])))
        ]
        text = cast(str | None, data.get("text"))
        deltas = data.get("streamDeltas")
        turn = ScriptedTurn(
            text=text,
            tool_calls=calls,
            reasoning=cast(str | None, data.get("reasoning")),
            stream_deltas=cast(list[str], deltas)
            if deltas is not None
            else (_words(text) if text else None),
            usage=cast(Mapping[str, object] | None, data.get("usage")),
            delay=float(data.get("delayMs", 0)) / 1000.0,
            event_delay=float(data.get("eventDelayMs", 0)) / 1000.0,
        )
    except (KeyError, TypeError, ValueError, re.error) as error:
        raise CliConfigError(f"invalid turn: {type(error).__name__}: {error}", path=where) from None
    return ScriptTurn(match=pattern, turn=turn)


def load_script(path: Path) -> tuple[ScriptTurn, ...]:
    """Read a script file (``{"turns": [...]}`` or a bare list of turns).

    Raises:
        CliConfigError: unreadable, not JSON, or a malformed turn.
    """
    try:
        data: object = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as error:
        raise CliConfigError(f"cannot read the script: {error}", path=str(path)) from None
    if isinstance(data, dict):
        data = cast(dict[str, Any], data).get("turns")
    if not isinstance(data, list):
        raise CliConfigError("a script is a list of turns or {'turns': [...]}", path=str(path))
    return tuple(
        _turn(raw, f"{path} turn {index}") for index, raw in enumerate(cast(list[Any], data))
    )


def _last_user_text(items: Sequence[CanonicalItem]) -> tuple[int, str]:
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if isinstance(item, TextItem) and item.role == "user":
            return index, item.text
    return -1, ""


def _answers_since(items: Sequence[CanonicalItem], start: int) -> int:
    """Model answers after ``start``: runs of model output separated by tool results."""
    answers, in_answer = 0, False
    for item in items[start + 1 :]:
        if isinstance(item, ToolResultItem) or (
            isinstance(item, TextItem) and item.role != "assistant"
        ):
            in_answer = False
        elif not in_answer:
            answers, in_answer = answers + 1, True
    return answers


def _echo(items: Sequence[CanonicalItem], text: str) -> ScriptedTurn:
    count = sum(1 for item in items if isinstance(item, TextItem) and item.role == "user")
    reply = f"You said: {text} (message {count})"
    return ScriptedTurn(text=reply, stream_deltas=_words(reply))


def select_turn(turns: Sequence[ScriptTurn], request: ModelRequest) -> ScriptedTurn:
    """The answer ``request`` calls for (see the module docstring)."""
    items = request.input
    start, text = _last_user_text(items)
    candidates = [t.turn for t in turns if t.match is None or t.match.search(text)]
    position = _answers_since(items, start)
    turn = candidates[position] if position < len(candidates) else _echo(items, text)
    if turn.usage is None:  # an estimate, so usage displays show something offline
        sent = sum(len(item.text) for item in items if isinstance(item, TextItem))
        answer = len(turn.text or "") + sum(len(str(call.input)) for call in turn.tool_calls)
        turn = attrs.evolve(
            turn, usage={"inputTokens": max(1, sent // 4), "outputTokens": max(1, answer // 4)}
        )
    return turn


def scripted_provider(
    turns: Sequence[ScriptTurn] = (), *, id: str = "scripted"
) -> ScriptedProvider:
    """A :class:`ScriptedProvider` answering with :func:`select_turn`."""
    script = tuple(turns)

    def answer(request: ModelRequest) -> ScriptedTurn:
        return select_turn(script, request)

    return ScriptedProvider([answer], id=id, repeat_last=True)
