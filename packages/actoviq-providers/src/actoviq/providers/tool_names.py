"""Tool names a provider API cannot carry, mapped reversibly on the wire.

Canonical tool names may be anything (``workspace.read``, ``agent.spawn``); OpenAI function
names must match ``^[a-zA-Z0-9_-]{1,64}$`` and Anthropic tool names allow the same characters
(:data:`OPENAI_TOOL_NAMES`, :data:`ANTHROPIC_TOOL_NAMES`). An adapter with a rule builds one
:class:`ToolNameMap` per request from the names the request uses (its tools, the tool calls in
its transcript, a forced tool), sends the provider names, and maps the model's tool calls
(responses, stream deltas) back, so the runtime only ever sees canonical names.

The mapping is a pure function of that set of names, so every turn of a run maps alike:

- a name the rule accepts is sent as it is;
- any other name has every character the rule refuses replaced by ``_`` and is cut to the
  rule's length (``workspace.read`` → ``workspace_read``);
- when that result is also the result of another name, or a name sent as it is, each such name
  gets a suffix from the SHA-256 of the original (``workspace_read_1a2b3c4d``), still within the
  length;
- a name with no ASCII letter or digit (nothing recognisable would reach the model), or one whose
  result still collides, is refused with :class:`ToolNameError` before any network call.

Example:
    >>> names = ToolNameMap.of(["workspace.read", "workspace_write"], OPENAI_TOOL_NAMES)
    >>> names.to_provider("workspace.read"), names.to_canonical("workspace_read")
    ('workspace_read', 'workspace.read')
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import ClassVar, Final

import attrs

from actoviq.core import CanonicalItem, ToolCallItem, ToolResultItem
from actoviq.providers.errors import InvalidModelRequestError
from actoviq.providers.types import (
    ModelRequest,
    ModelResponse,
    ModelStreamEvent,
    ResponseCompleted,
    ToolCallDelta,
    ToolChoice,
)

__all__ = [
    "ANTHROPIC_TOOL_NAMES",
    "OPENAI_TOOL_NAMES",
    "ToolNameError",
    "ToolNameMap",
    "ToolNameRule",
]

_HASH_LENGTH: Final = 8
_ALNUM: Final = re.compile(r"[A-Za-z0-9]")


class ToolNameError(InvalidModelRequestError):
    """A tool name the provider cannot carry and that cannot be mapped to one it can."""

    default_code: ClassVar[str] = "PROVIDER_TOOL_NAME_INVALID"


@attrs.frozen(kw_only=True, slots=True)
class ToolNameRule:
    """What tool names one provider API accepts.

    Attributes:
        label: the API, for messages (``"OpenAI"``).
        allowed: a regex character class body of the accepted characters.
        max_length: the longest accepted name.
    """

    label: str
    allowed: str = "A-Za-z0-9_-"
    max_length: int = 64

    def accepts(self, name: str) -> bool:
        """Whether ``name`` can be sent as it is."""
        return 1 <= len(name) <= self.max_length and (
            re.fullmatch(f"[{self.allowed}]+", name) is not None
        )

    def sanitize(self, name: str) -> str:
        """``name`` with every refused character as ``_``, cut to :attr:`max_length`."""
        return re.sub(f"[^{self.allowed}]", "_", name)[: self.max_length]


OPENAI_TOOL_NAMES: Final = ToolNameRule(label="OpenAI")
"""OpenAI Chat Completions and Responses function names: ``^[a-zA-Z0-9_-]{1,64}$``."""

ANTHROPIC_TOOL_NAMES: Final = ToolNameRule(label="Anthropic")
"""Anthropic tool names: ``[a-zA-Z0-9_-]``; kept to 64 characters (the shorter of the limits
Anthropic has documented), so a mapped name is valid for every supported API."""


def _suffixed(name: str, rule: ToolNameRule) -> str:
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_LENGTH]
    return f"{rule.sanitize(name)[: rule.max_length - _HASH_LENGTH - 1]}_{digest}"


def request_tool_names(request: ModelRequest) -> list[str]:
    """Every tool name ``request`` uses: its tools, forced tool and transcript, in order."""
    names: dict[str, None] = {}
    for tool in request.tools or ():
        names[tool.name] = None
    if isinstance(request.tool_policy, ToolChoice):
        names[request.tool_policy.name] = None
    for item in request.input:
        name = item.name if isinstance(item, ToolCallItem | ToolResultItem) else None
        if name is not None:
            names[name] = None
    return list(names)


@attrs.frozen(slots=True)
class ToolNameMap:
    """Canonical ↔ provider tool names for one request (see the module doc).

    Build it with :meth:`of` or :meth:`for_request`. Unknown names map to themselves.
    """

    outgoing: Mapping[str, str]
    """canonical name → provider name, only for the names that change."""
    incoming: Mapping[str, str]
    """provider name → canonical name, only for the names that change."""

    @classmethod
    def of(cls, names: Iterable[str], rule: ToolNameRule) -> ToolNameMap:
        """The map of ``names`` under ``rule``.

        Raises:
            ToolNameError: a name has no ASCII letter or digit, or still collides.
        """
        unique = list(dict.fromkeys(names))
        kept = {name for name in unique if rule.accepts(name)}
        changed = [name for name in unique if name not in kept]
        if not changed:
            return _IDENTITY
        for name in changed:
            if _ALNUM.search(name) is None:
                raise ToolNameError(
                    f"Tool name {name!r} cannot be sent to {rule.label}: it has no ASCII "
                    f"letter or digit to build a name matching [{rule.allowed}]"
                    f"{{1,{rule.max_length}}} from. Register the tool under another name.",
                    details={"tool": name, "provider": rule.label},
                )
        base = {name: rule.sanitize(name) for name in changed}
        counts = Counter(base.values())
        outgoing: dict[str, str] = {}
        taken = set(kept)
        for name in changed:
            candidate = base[name]
            if candidate in kept or counts[candidate] > 1:
                candidate = _suffixed(name, rule)
            if candidate in taken:
                raise ToolNameError(
                    f"Tool name {name!r} maps to {candidate!r} for {rule.label}, which another "
                    "tool already uses. Register one of them under another name.",
                    details={"tool": name, "provider": rule.label, "mapped": candidate},
                )
            taken.add(candidate)
            outgoing[name] = candidate
        return cls(outgoing, {wire: name for name, wire in outgoing.items()})

    @classmethod
    def for_request(cls, request: ModelRequest, rule: ToolNameRule) -> ToolNameMap:
        """The map of every tool name ``request`` uses (see :meth:`of`)."""
        return cls.of(request_tool_names(request), rule)

    @property
    def identity(self) -> bool:
        """No name changes."""
        return not self.outgoing

    def to_provider(self, name: str) -> str:
        """The name to send for canonical ``name``."""
        return self.outgoing.get(name, name)

    def to_canonical(self, name: str) -> str:
        """The canonical name of provider name ``name`` (unknown names are returned as is)."""
        return self.incoming.get(name, name)

    def request(self, request: ModelRequest) -> ModelRequest:
        """``request`` with provider names in its tools, forced tool and transcript."""
        if self.identity:
            return request
        tools = request.tools
        if tools is not None:
            tools = tuple(attrs.evolve(t, name=self.to_provider(t.name)) for t in tools)
        policy = request.tool_policy
        if isinstance(policy, ToolChoice):
            policy = ToolChoice(name=self.to_provider(policy.name))
        items = tuple(self._item(item, self.outgoing) for item in request.input)
        return attrs.evolve(request, tools=tools, tool_policy=policy, input=items)

    def response(self, response: ModelResponse) -> ModelResponse:
        """``response`` with canonical names in its tool calls."""
        if self.identity:
            return response
        output = [self._item(item, self.incoming) for item in response.output]
        return attrs.evolve(response, output=output)

    def event(self, event: ModelStreamEvent) -> ModelStreamEvent:
        """A stream event with canonical tool names."""
        if self.identity:
            return event
        if isinstance(event, ToolCallDelta) and event.name is not None:
            return attrs.evolve(event, name=self.to_canonical(event.name))
        if isinstance(event, ResponseCompleted):
            return ResponseCompleted(response=self.response(event.response))
        return event

    @staticmethod
    def _item(item: CanonicalItem, names: Mapping[str, str]) -> CanonicalItem:
        if isinstance(item, ToolCallItem) and item.name in names:
            return attrs.evolve(item, name=names[item.name])
        if isinstance(item, ToolResultItem) and item.name is not None and item.name in names:
            return attrs.evolve(item, name=names[item.name])
        return item


_IDENTITY: Final = ToolNameMap({}, {})
