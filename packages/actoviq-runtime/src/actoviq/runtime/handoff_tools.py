"""Model-driven handoff: an agent's ``handoffs`` offered to the model as tools (ADR-005, §8.2-20).

Each :class:`~actoviq.core.HandoffRef` of an agent becomes one function tool named after the
handoff id, next to the agent's own tools, so every provider adapter offers it the same way. When
the model calls one, the runtime does not run a tool: it records a ``transferred`` tool result
(the transcript stays valid for every adapter), finishes the turn's other calls, and ends the run
``completed`` with :attr:`RunResult.handoff <actoviq.core.RunResult.handoff>` set. Executing the
handoff (the target agent's run, ownership, input filters) is orchestration's job; only the first
handoff call of a turn counts, later ones get an error result.

Example:
    >>> from actoviq.core import HandoffRef
    >>> [d.name for d in handoff_tool_definitions([HandoffRef(id="to-billing",
    ...     target_agent_id="billing")])]
    ['to-billing']
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import ClassVar, Final

from actoviq.core import (
    ActoviqError,
    HandoffCallItem,
    HandoffRef,
    JsonObject,
    ToolCallItem,
    ToolResultItem,
)
from actoviq.providers import ModelToolDefinition
from actoviq.runtime.tools import PendingTool, PendingToolState

__all__ = [
    "HANDOFF_TOOL_INPUT_SCHEMA",
    "HandoffToolError",
    "handoff_call_item",
    "handoff_outcome",
    "handoff_tool_definitions",
    "handoff_tools",
    "ignored_handoff_result",
    "transferred_result",
]

_TOOL_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

HANDOFF_TOOL_INPUT_SCHEMA: Final[JsonObject] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "description": "Why the conversation is handed off."}
    },
    "additionalProperties": False,
}
"""The input of every handoff tool: an optional reason (kept on the ``handoff_call`` item)."""


class HandoffToolError(ActoviqError, ValueError):
    """An agent's handoff cannot be offered as a tool (bad name, duplicate, clash with a tool)."""

    default_code: ClassVar[str] = "HANDOFF_TOOL_INVALID"


def handoff_tools(
    agent_id: str, handoffs: Sequence[HandoffRef], tool_names: Collection[str]
) -> dict[str, HandoffRef]:
    """The agent's handoffs by tool name (the handoff id), in declaration order.

    Raises:
        HandoffToolError: an id that is not a tool name (``[A-Za-z0-9_-]{1,64}``), a duplicate
            id, or an id that is also one of the agent's tools.
    """
    tools: dict[str, HandoffRef] = {}
    for ref in handoffs:
        name = ref.id
        details: JsonObject = {"agentId": agent_id, "handoffId": name}
        if not isinstance(name, str) or not _TOOL_NAME.match(name):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise HandoffToolError(
                f'Agent "{agent_id}" handoff id {name!r} is not a valid tool name '
                "(letters, digits, '_' or '-', at most 64).",
                details=details,
            )
        if name in tools:
            raise HandoffToolError(
                f'Agent "{agent_id}" declares handoff "{name}" twice.', details=details
            )
        if name in tool_names:
            raise HandoffToolError(
                f'Agent "{agent_id}" handoff "{name}" has the name of one of its tools.',
                details=details,
            )
        tools[name] = ref
    return tools


def handoff_tool_definitions(handoffs: Sequence[HandoffRef]) -> tuple[ModelToolDefinition, ...]:
    """One function tool per handoff (name = handoff id), for the model request."""
    return tuple(
        ModelToolDefinition(
            name=ref.id,
            description=ref.description
            or f'Hand the conversation over to agent "{ref.target_agent_id}".',
            input_schema=HANDOFF_TOOL_INPUT_SCHEMA,
        )
        for ref in handoffs
    )


def handoff_call_item(call: ToolCallItem, ref: HandoffRef) -> HandoffCallItem:
    """The canonical ``handoff_call`` for the model's call of handoff tool ``ref``."""
    metadata: JsonObject = {"handoffId": ref.id, "toolName": call.name}
    if ref.metadata:
        metadata["handoff"] = dict(ref.metadata)
    return HandoffCallItem(
        id=call.id, target_agent_id=ref.target_agent_id, input=call.input, metadata=metadata
    )


def transferred_result(call: ToolCallItem, ref: HandoffRef) -> ToolResultItem:
    """The result the model sees for the handoff it made: the transfer is accepted."""
    return ToolResultItem(
        call_id=call.id,
        name=call.name,
        status="success",
        output={"handoffId": ref.id, "targetAgentId": ref.target_agent_id, "transferred": True},
    )


def ignored_handoff_result(call: ToolCallItem, executed: HandoffRef) -> ToolResultItem:
    """The result of a second handoff call in one turn: only the first one is executed."""
    return ToolResultItem(
        call_id=call.id,
        name=call.name,
        status="error",
        output={
            "kind": "handoff_ignored",
            "message": f'Only one handoff per turn: "{executed.id}" was executed.',
            "retryable": False,
        },
    )


def _handoff_id(item: HandoffCallItem) -> str:
    metadata = item.metadata or {}
    handoff_id = metadata.get("handoffId")
    return handoff_id if isinstance(handoff_id, str) else item.target_agent_id


def handoff_outcome(
    current: HandoffCallItem | None,
    pending: PendingTool,
    ref: HandoffRef,
    handoffs: Mapping[str, HandoffRef],
) -> tuple[HandoffCallItem | None, ToolResultItem | None]:
    """The run's handoff after the model's handoff call ``pending``, and the result to commit.

    The first handoff of a turn transfers; a later one gets an error result. A call already
    committed (a resumed turn) re-derives the handoff and commits nothing.
    """
    call = pending.call
    if pending.state is PendingToolState.COMMITTED:
        result = pending.result
        if current is None and result is not None and result.status == "success":
            return handoff_call_item(call, ref), None
        return current, None
    if current is None:
        return handoff_call_item(call, ref), transferred_result(call, ref)
    return current, ignored_handoff_result(call, handoffs[_handoff_id(current)])
