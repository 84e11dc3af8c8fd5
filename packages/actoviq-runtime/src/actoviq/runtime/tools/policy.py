"""Tool policies: allow, deny, or ask (a durable approval interruption) — spec 03 §4.3, D5.

A policy only *tightens*: the runner still applies the ``requires_approval`` gate after an
``allow`` (Q8), and an approval never overrides a ``deny``.

Example:
    >>> policy = RuleToolPolicy(deny=["shell.*"], ask=["email.send"])
    >>> policy.decide("shell.run", run_id="r", call_id="c").type
    'deny'
"""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Iterable
from typing import Literal, Protocol, TypeAlias, runtime_checkable

import attrs

from actoviq.runtime.tools.decisions import (
    AllowDecision,
    DenyDecision,
    InterruptDecision,
    ToolDecision,
    approval_interruption_id,
    idempotency_key_for,
    reconciliation_interruption_id,
)
from actoviq.runtime.tools.descriptor import ToolDescriptor, ToolExecutionContext

__all__ = [
    "AllowDecision",
    "DenyDecision",
    "InterruptDecision",
    "RuleToolPolicy",
    "ToolAuthorizationRequest",
    "ToolDecision",
    "ToolPolicy",
    "approval_interruption_id",
    "idempotency_key_for",
    "reconciliation_interruption_id",
]


@attrs.frozen(kw_only=True, slots=True)
class ToolAuthorizationRequest:
    """What a policy decides on: the descriptor, the *parsed* input and the execution context."""

    tool: ToolDescriptor
    input: object
    context: ToolExecutionContext


@runtime_checkable
class ToolPolicy(Protocol):
    """Decides whether a tool call may run (sync or async)."""

    def authorize(
        self, request: ToolAuthorizationRequest
    ) -> ToolDecision | Awaitable[ToolDecision]:
        """Return allow, deny or interrupt for ``request``."""
        ...


PolicyDefault: TypeAlias = Literal["allow", "deny", "ask"]


class RuleToolPolicy:
    """A policy from name patterns (``fnmatch``): deny wins over ask, ask over allow.

    Args:
        allow: patterns of tools that run without asking.
        deny: patterns of tools that never run.
        ask: patterns of tools that need an approval.
        default: the decision for names that match no pattern.
        reason: an optional reason text for deny/ask decisions.
    """

    def __init__(
        self,
        *,
        allow: Iterable[str] = (),
        deny: Iterable[str] = (),
        ask: Iterable[str] = (),
        default: PolicyDefault = "allow",
        reason: str | None = None,
    ) -> None:
        if default not in ("allow", "deny", "ask"):
            raise ValueError(f"RuleToolPolicy default must be allow, deny or ask; got {default!r}.")
        self.allow = tuple(allow)
        self.deny = tuple(deny)
        self.ask = tuple(ask)
        self.default: PolicyDefault = default
        self.reason = reason

    def decide(self, name: str, *, run_id: str, call_id: str) -> ToolDecision:
        """The decision for tool ``name`` in call ``call_id`` of run ``run_id``."""
        verdict = self._verdict(name)
        if verdict == "deny":
            return DenyDecision(reason=self.reason or f'Tool "{name}" is not permitted.')
        if verdict == "ask":
            return InterruptDecision(
                interruption_id=approval_interruption_id(run_id, call_id),
                reason=self.reason or f'Tool "{name}" requires approval.',
            )
        return AllowDecision()

    def authorize(self, request: ToolAuthorizationRequest) -> ToolDecision:
        """Apply the rules to ``request.tool.name``."""
        return self.decide(
            request.tool.name, run_id=request.context.run_id, call_id=request.context.call_id
        )

    def _verdict(self, name: str) -> PolicyDefault:
        if _matches(name, self.deny):
            return "deny"
        if _matches(name, self.ask):
            return "ask"
        if _matches(name, self.allow):
            return "allow"
        return self.default


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
