"""``policy.permissions``: side effects denied by default, or allowed by approval or policy.

Tool calls are classified by the tool's declared effect (``read``, ``idempotent-write``,
``side-effect``; undeclared means side-effect). Reads always pass. For the rest, the profile's
``security.sideEffects`` decides:

- ``deny-by-default`` (and ``none``): only tools an ``allow`` rule names may run;
- ``approval-or-policy``: an ``allow`` rule lets the call run; otherwise the call needs a human
  approval. :class:`PermissionPolicy` (pass it as ``AgentRuntime(tool_policy=...)``) turns such a
  call into an approval interruption; without it (and without ``requires_approval`` on the tool)
  the call is denied, so nothing with a side effect ever runs unapproved.

``deny`` rules win over everything. Rules are :mod:`fnmatch` patterns over tool names.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from typing import Any, Final

from actoviq.runtime import (
    AllowDecision,
    DenyDecision,
    InterruptDecision,
    MiddlewareDefinition,
    RuntimeMiddlewareContext,
    ToolAuthorizationRequest,
    ToolCallDenied,
    ToolDecision,
    approval_interruption_id,
    define_middleware,
)

__all__ = ["PermissionPolicy", "PermissionRules", "permissions_middleware"]

_DEFAULT_MODE: Final = "deny-by-default"


class PermissionRules:
    """Which non-read tools may run without asking (``allow``) and which never run (``deny``).

    Args:
        allow: tool name patterns allowed to run their side effects.
        deny: tool name patterns that never run (not even with an approval).
    """

    def __init__(self, *, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> None:
        self.allow = tuple(allow)
        self.deny = tuple(deny)

    def denies(self, name: str) -> bool:
        """Whether a ``deny`` pattern matches ``name``."""
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.deny)

    def allows(self, name: str) -> bool:
        """Whether an ``allow`` pattern matches ``name`` (and no ``deny`` pattern does)."""
        return not self.denies(name) and any(
            fnmatch.fnmatchcase(name, pattern) for pattern in self.allow
        )


class PermissionPolicy:
    """The runtime :class:`~actoviq.runtime.ToolPolicy` half of ``approval-or-policy``.

    Reads and allowed tools run, denied ones are refused, every other call waits for an approval
    (an ``approval`` interruption the host answers with ``InterruptionDecision``).
    """

    def __init__(self, rules: PermissionRules) -> None:
        self.rules = rules

    def authorize(self, request: ToolAuthorizationRequest) -> ToolDecision:
        """Allow, deny or ask for ``request``'s tool call."""
        name = request.tool.name
        if self.rules.denies(name):
            return DenyDecision(reason=f'Tool "{name}" is denied by the permission policy.')
        if request.tool.effect == "read" or self.rules.allows(name):
            return AllowDecision()
        if request.context.approval is not None:
            return AllowDecision()
        return InterruptDecision(
            interruption_id=approval_interruption_id(
                request.context.run_id, request.context.call_id
            ),
            reason=f'Tool "{name}" has side effects and needs an approval.',
            metadata={"tool": name, "effect": request.tool.effect},
        )


def _side_effect_mode(ctx: RuntimeMiddlewareContext) -> str:
    metadata = ctx.agent.metadata if ctx.agent is not None else None
    profile = metadata.get("hadamardProfile") if metadata else None
    if isinstance(profile, Mapping):
        security = profile.get("security")
        if isinstance(security, Mapping):
            mode = security.get("sideEffects")
            if isinstance(mode, str):
                return mode
    return _DEFAULT_MODE


def permissions_middleware(rules: PermissionRules, *, priority: int = -200) -> MiddlewareDefinition:
    """``beforeToolCall`` middleware enforcing the profile's side-effect policy with ``rules``."""

    def check(ctx: RuntimeMiddlewareContext, next: Any) -> Any:
        call = ctx.tool_call
        if call is None:
            return next()
        name = call.name
        if rules.denies(name):
            raise ToolCallDenied(f'Tool "{name}" is denied by the permission policy.')
        registered = ctx.runtime.tools.resolve(name) if ctx.runtime is not None else None
        effect = registered.descriptor.effect if registered is not None else "side-effect"
        if effect == "read" or rules.allows(name):
            return next()
        mode = _side_effect_mode(ctx)
        if mode == "approval-or-policy":
            runtime_policy = getattr(ctx.runtime, "tool_policy", None)
            gated = registered is not None and registered.descriptor.requires_approval
            if gated or runtime_policy is not None:
                return next()  # the runtime's policy or approval gate decides downstream
            raise ToolCallDenied(
                f'Tool "{name}" has side effects and no approval path: allow it by policy or '
                "run with PermissionPolicy as the runtime tool_policy."
            )
        raise ToolCallDenied(
            f'Tool "{name}" has side effects, which this profile denies by default.'
        )

    return define_middleware("policy.permissions", "beforeToolCall", check, priority=priority)
