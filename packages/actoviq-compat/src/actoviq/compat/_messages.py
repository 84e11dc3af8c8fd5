"""Canonical items as a legacy ``MessageParam`` list: one block per item, same roles merged.

The block mapping is the providers package's (``to_legacy_message_param``); this module only
joins consecutive blocks of one role into one message, as 0.x transcripts (and Anthropic's
alternating-role rule) have them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from actoviq.core import CanonicalItem, TextItem
from actoviq.providers.legacy import MessageParam, to_legacy_message_param

__all__ = ["append_blocks", "to_legacy_messages"]


def append_blocks(messages: list[Any], role: str, blocks: list[Any]) -> None:
    """Append ``blocks`` as a ``role`` message, merged into the last one when it has that role.

    A merged message whose content was a string becomes a text block first.
    """
    last = cast(dict[str, Any], messages[-1]) if messages and type(messages[-1]) is dict else None
    if last is not None and last.get("role") == role:
        content = last.get("content")
        if isinstance(content, str):
            last["content"] = [{"type": "text", "text": content}, *blocks]
            return
        if type(content) is list:
            cast(list[Any], content).extend(blocks)
            return
    messages.append({"role": role, "content": blocks})


def to_legacy_messages(items: Iterable[CanonicalItem]) -> list[MessageParam]:
    """The legacy transcript of ``items`` (system texts are left out: they are the prompt)."""
    messages: list[Any] = []
    for item in items:
        if isinstance(item, TextItem) and item.role == "system":
            continue
        param = to_legacy_message_param(item)
        append_blocks(messages, param["role"], list(param["content"]))
    return cast(list[MessageParam], messages)
