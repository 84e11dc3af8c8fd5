"""Run-scoped values: ``RunContext``, ``RunResult``, ``Interruption`` (spec 02 §1.5, D5)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any, Generic, Literal, TypeAlias, TypeVar

import attrs

from actoviq.core._unset import UNSET, Unset
from actoviq.core._validate import check_json
from actoviq.core.abort import AbortSignal
from actoviq.core.converter import (
    converter,
    item_from_json,
    items_from_json,
    register_wire_class,
)
from actoviq.core.errors import ItemValidationError
from actoviq.core.items import CanonicalItem, HandoffCallItem
from actoviq.core.json import JsonObject, JsonValue
from actoviq.core.usage import Usage, UsageAccumulator, normalize_usage_delta

__all__ = [
    "Interruption",
    "InterruptionKind",
    "RunContext",
    "RunResult",
    "RunStatus",
    "iso_now",
    "to_iso",
]

TContext = TypeVar("TContext")
TOutput = TypeVar("TOutput")

RunStatus: TypeAlias = Literal["completed", "interrupted", "cancelled"]
"""How a run ended: completed, interrupted (resumable) or cancelled."""
InterruptionKind: TypeAlias = Literal["approval", "reconciliation"]
"""Why a run paused: a tool call awaits approval, or a side effect awaits reconciliation."""


def to_iso(moment: datetime) -> str:
    """ISO-8601 UTC with millisecond precision and a ``Z`` suffix, like JS ``toISOString()``."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class _IsoNow:
    """Formats the wall clock like :func:`to_iso`, cached per millisecond.

    Hot: every run and store write stamps times. The date part is cached per second; tuples are
    replaced whole, so concurrent callers from threads see a consistent pair.
    """

    __slots__ = ("_millisecond", "_second")

    def __init__(self) -> None:
        self._second: tuple[int, str] = (-1, "")
        self._millisecond: tuple[int, str] = (-1, "")

    def __call__(self) -> str:
        milliseconds = time.time_ns() // 1_000_000
        cached = self._millisecond
        if cached[0] == milliseconds:
            return cached[1]
        seconds, fraction = divmod(milliseconds, 1000)
        second = self._second
        if second[0] != seconds:
            second = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(seconds)))
            self._second = second
        text = f"{second[1]}{fraction:03d}Z"
        self._millisecond = (milliseconds, text)
        return text


_iso_now = _IsoNow()


def iso_now() -> str:
    """The current time as :func:`to_iso` writes it (``2026-07-11T00:00:00.000Z``)."""
    return _iso_now()


@attrs.define(kw_only=True, slots=True)
class RunContext(Generic[TContext]):
    """What instructions, tools, guardrails and middleware see of the current run.

    ``usage`` is shared by every model call in the run; everything else is fixed for the run.
    """

    run_id: str
    agent_id: str
    context: TContext
    signal: AbortSignal
    started_at: str
    usage: UsageAccumulator = attrs.field(factory=UsageAccumulator)
    metadata: JsonObject = attrs.field(factory=lambda: {})
    deadline_at: str | None = None
    session_id: str | None = None


@attrs.frozen(kw_only=True, slots=True)
class Interruption:
    """A durable pause that :func:`resume` continues (an approval, or a reconciliation).

    ``id`` is what an ``InterruptionDecision`` names.
    """

    id: str
    kind: InterruptionKind
    reason: str
    call_id: str | None = None
    tool_name: str | None = None
    input: JsonValue | Unset = attrs.field(default=UNSET, validator=check_json)
    metadata: JsonObject | None = None


def _usage_from_json(data: Any) -> Usage:
    return normalize_usage_delta(data)


@attrs.frozen(kw_only=True, slots=True)
class RunResult(Generic[TOutput]):
    """The outcome of a run.

    ``interruptions`` and ``state`` are set when ``status == "interrupted"``: ``state`` is the
    serialised run state (JSON) to pass to ``resume``. ``handoff`` is set when a completed run
    ended because the model handed the conversation to another agent (one of the agent's
    ``handoffs``): orchestration executes it; ``output`` is then the assistant's text so far.
    """

    run_id: str
    agent_id: str
    status: RunStatus
    output: TOutput
    items: tuple[CanonicalItem, ...]
    usage: Usage
    started_at: str
    completed_at: str
    session_id: str | None = None
    metadata: JsonObject | None = None
    interruptions: tuple[Interruption, ...] = ()
    state: JsonObject | None = None
    handoff: HandoffCallItem | None = None


def _handoff_from_json(data: Any) -> HandoffCallItem:
    item = item_from_json(data)
    if not isinstance(item, HandoffCallItem):
        raise ItemValidationError("RunResult.handoff must be a handoff_call item.", field="handoff")
    return item


register_wire_class(Interruption)
register_wire_class(
    RunResult,
    decoders={
        "items": lambda data: tuple(items_from_json(data)),
        "usage": _usage_from_json,
        "interruptions": lambda data: tuple(
            converter.structure(entry, Interruption) for entry in data
        ),
        "handoff": _handoff_from_json,
    },
)
