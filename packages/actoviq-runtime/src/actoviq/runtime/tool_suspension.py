"""Suspended tools: a running tool pauses the run until the host decides (``ToolSuspension``).

A tool that cannot finish without a decision from outside (an agent tool whose child run waits for
an approval) raises :class:`~actoviq.runtime.tools.ToolSuspension` with the interruptions it waits
for. The call goes ``started -> awaiting_approval``; the interruptions are stored in the run state
marked with the call (``metadata.suspendedCallId`` / ``suspendedToolName``) and surface in
``RunResult.interruptions``. ``resume()`` with decisions for some of them invokes the tool again
with ``ctx.resumption``; without any, the run interrupts again with the same interruptions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

import attrs

from actoviq.core import Interruption, ToolCallItem
from actoviq.runtime.tools import (
    InterruptionDecision,
    PendingTool,
    PendingToolState,
    ToolFailure,
    ToolResumption,
    ToolSuspension,
)

__all__ = [
    "SUSPENDED_CALL_KEY",
    "SUSPENDED_TOOL_KEY",
    "interruptions_of",
    "mark_suspension",
    "resumption_for",
    "suspended_interruptions",
]

SUSPENDED_CALL_KEY: Final = "suspendedCallId"
SUSPENDED_TOOL_KEY: Final = "suspendedToolName"


def suspended_interruptions(
    pending: PendingTool, interruptions: Iterable[Interruption]
) -> list[Interruption]:
    """The stored interruptions a suspended ``pending`` call waits for (empty if none)."""
    if pending.state is not PendingToolState.AWAITING_APPROVAL:
        return []
    return interruptions_of(pending.call.id, interruptions)


def interruptions_of(call_id: str, interruptions: Iterable[Interruption]) -> list[Interruption]:
    """The interruptions a suspension of call ``call_id`` stored (whatever its state now)."""
    return [
        entry
        for entry in interruptions
        if entry.metadata is not None and entry.metadata.get(SUSPENDED_CALL_KEY) == call_id
    ]


def mark_suspension(
    call: ToolCallItem, suspension: ToolSuspension, open_now: Iterable[Interruption]
) -> list[Interruption] | ToolFailure:
    """The suspension's interruptions marked with ``call``, or the failure of a bad suspension.

    A suspension needs at least one :class:`Interruption` and ids that are unique and not
    already open in the run (``open_now``; the call's own earlier ones are being replaced).
    """
    entries = suspension.interruptions
    opened = tuple(open_now)
    earlier = interruptions_of(call.id, opened)
    seen = {entry.id for entry in opened if entry not in earlier}
    valid = bool(entries)
    for entry in entries:
        if not isinstance(entry, Interruption) or entry.id in seen:  # pyright: ignore[reportUnnecessaryIsInstance]
            valid = False
            break
        seen.add(entry.id)
    if not valid:
        return ToolFailure(
            kind="execution",
            tool_name=call.name,
            call_id=call.id,
            message=f'Tool "{call.name}" suspended without valid, unique interruptions.',
        )
    return [
        attrs.evolve(
            entry,
            metadata={
                **(entry.metadata or {}),
                SUSPENDED_CALL_KEY: call.id,
                SUSPENDED_TOOL_KEY: call.name,
            },
        )
        for entry in entries
    ]


def resumption_for(
    nested: Sequence[Interruption], decisions: Mapping[str, InterruptionDecision]
) -> ToolResumption | None:
    """The resumption for a suspended call, or None when no decision answers it yet."""
    decided = tuple(decisions[entry.id] for entry in nested if entry.id in decisions)
    if not decided:
        return None
    return ToolResumption(interruptions=tuple(nested), decisions=decided)
