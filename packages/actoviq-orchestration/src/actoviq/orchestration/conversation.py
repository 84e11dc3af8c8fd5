"""Who owns a conversation and what it holds (spec 04 §1.2).

Agent-as-tool keeps the owner (the manager); a handoff moves it to the target. Both return the
conversation as a :class:`ConversationState` value.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from actoviq.core import CanonicalItem

__all__ = ["ConversationOwner", "ConversationState"]


@attrs.frozen(kw_only=True, slots=True)
class ConversationOwner:
    """The agent (and its run) that owns the conversation."""

    agent_id: str
    run_id: str


def _items(value: Sequence[CanonicalItem]) -> tuple[CanonicalItem, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True, slots=True)
class ConversationState:
    """The owner and the canonical items of a conversation."""

    owner: ConversationOwner
    items: tuple[CanonicalItem, ...] = attrs.field(default=(), converter=_items)
