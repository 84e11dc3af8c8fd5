"""The 0.x ``permissionMode`` / ``permissions`` rules as a runtime ``ToolPolicy``.

Order of the 0.x engine, for what the façade supports (classifiers, approvers and ``canUseTool``
callbacks are refused with a pointer to the runtime's interruptions):

1. a matching ``deny`` rule denies;
2. a matching ``ask`` rule denies too, because no interactive approver exists on this path
   (the 0.x clean SDK did the same);
3. a matching ``allow`` rule allows;
4. the mode decides: ``bypassPermissions``, ``default`` and ``auto`` allow; ``plan`` allows only
   tools whose effect is ``read``; ``acceptEdits`` allows tools that declare an effect.

A rule's ``toolName`` is a ``*`` wildcard matched case-insensitively against the tool name; its
optional ``matcher`` is matched the same way against the input's compact JSON. A denial reaches
the model as a denied tool result (the runtime's usual path), never as an exception. The
runtime's ``requires_approval`` gate still applies after an ``allow``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final, Literal, NotRequired, TypedDict, cast

from actoviq.compat.errors import CompatConfigurationError
from actoviq.compat.events import PermissionDecision
from actoviq.core import iso_now
from actoviq.runtime import (
    AllowDecision,
    DenyDecision,
    ToolAuthorizationRequest,
    ToolDecision,
)

__all__ = ["PERMISSION_MODES", "PermissionMode", "PermissionRule", "PermissionSettings"]

PermissionMode = Literal["default", "acceptEdits", "bypassPermissions", "plan", "auto"]
"""The 0.x permission modes (``permissionMode``), mapped onto a runtime ``ToolPolicy``."""
PERMISSION_MODES: Final = ("default", "acceptEdits", "bypassPermissions", "plan", "auto")
"""Every :data:`PermissionMode`, in the 0.x order."""
_BEHAVIORS: Final = frozenset({"allow", "deny", "ask"})


class PermissionRule(TypedDict):
    """A 0.x permission rule."""

    toolName: str
    behavior: Literal["allow", "deny", "ask"]
    matcher: NotRequired[str]
    source: NotRequired[str]


def _wildcard(pattern: str) -> re.Pattern[str]:
    return re.compile(
        "^" + ".*".join(re.escape(part) for part in pattern.split("*")) + "$", re.IGNORECASE
    )


class PermissionSettings:
    """A validated mode plus rules, and the decision they give for one tool call.

    Raises:
        CompatConfigurationError: an unknown mode, or a malformed rule.
    """

    def __init__(self, mode: str = "default", rules: Iterable[Mapping[str, Any]] = ()) -> None:
        if mode not in PERMISSION_MODES:
            raise CompatConfigurationError(
                f"permissionMode must be one of {', '.join(PERMISSION_MODES)}; got {mode!r}."
            )
        self.mode: PermissionMode = mode
        self.rules: list[tuple[PermissionRule, re.Pattern[str], re.Pattern[str] | None]] = []
        for index, raw in enumerate(rules):
            name, behavior = raw.get("toolName"), raw.get("behavior")
            matcher = raw.get("matcher")
            if not isinstance(name, str) or not name or behavior not in _BEHAVIORS:
                raise CompatConfigurationError(
                    f"permissions[{index}] needs a toolName and a behavior of allow, deny or ask."
                )
            if matcher is not None and not isinstance(matcher, str):
                raise CompatConfigurationError(f"permissions[{index}].matcher must be a string.")
            rule = cast(PermissionRule, dict(raw))
            compiled = _wildcard(matcher) if matcher and matcher.strip() else None
            self.rules.append((rule, _wildcard(name), compiled))

    def _find(self, behavior: str, name: str, input_json: str) -> PermissionRule | None:
        for rule, name_pattern, matcher in self.rules:
            if rule["behavior"] != behavior or not name_pattern.match(name):
                continue
            if matcher is None or matcher.match(input_json):
                return rule
        return None

    def decide(self, request: ToolAuthorizationRequest) -> PermissionDecision:
        """The 0.x decision for one call (see the module docstring)."""
        descriptor = request.tool
        name = descriptor.name
        try:
            input_json = json.dumps(
                request.input, separators=(",", ":"), ensure_ascii=False, default=str
            )
        except (TypeError, ValueError):
            input_json = "{}"

        def decision(
            behavior: Literal["allow", "deny"],
            reason: str,
            source: Literal["mode", "rule"],
            rule: PermissionRule | None = None,
        ) -> PermissionDecision:
            out: PermissionDecision = {
                "toolName": name,
                "publicName": name,
                "behavior": behavior,
                "reason": reason,
                "source": source,
                "timestamp": iso_now(),
            }
            if rule is not None:
                out["matchedRule"] = rule["toolName"]
            return out

        rule = self._find("deny", name, input_json)
        if rule is not None:
            return decision("deny", f"Denied by permission rule {rule['toolName']}.", "rule", rule)
        rule = self._find("ask", name, input_json)
        if rule is not None:
            return decision(
                "deny",
                f"Tool {name} requires approval before execution. Approval is required, but "
                "interactive approval is unavailable in the compat SDK path.",
                "rule",
                rule,
            )
        rule = self._find("allow", name, input_json)
        if rule is not None:
            return decision(
                "allow", f"Allowed by permission rule {rule['toolName']}.", "rule", rule
            )
        effect = descriptor.behavior.effect
        if self.mode == "plan":
            if effect == "read":
                return decision("allow", "Plan mode allows read-only tool execution.", "mode")
            return decision(
                "deny", "Plan mode blocks mutating tools until the plan is approved.", "mode"
            )
        if self.mode == "acceptEdits":
            if effect is not None:
                return decision("allow", "acceptEdits mode allows classified tools.", "mode")
            return decision("deny", "acceptEdits mode blocks unsupported high-risk tools.", "mode")
        if self.mode == "bypassPermissions":
            return decision("allow", "Bypass-permissions mode allows tool execution.", "mode")
        return decision("allow", f"{self.mode} mode allows tool execution by default.", "mode")


DecisionListener = Callable[[str, PermissionDecision], Awaitable[None]]


class CompatToolPolicy:
    """The façade's :class:`~actoviq.runtime.ToolPolicy`: per-run settings, decisions reported.

    Args:
        default: the client's settings.
        on_decision: awaited with ``(run_id, decision)`` for every decision.
    """

    def __init__(self, default: PermissionSettings, on_decision: DecisionListener) -> None:
        self.default = default
        self._per_run: dict[str, PermissionSettings] = {}
        self._on_decision = on_decision

    def bind(self, run_id: str, settings: PermissionSettings) -> None:
        """Use ``settings`` for ``run_id`` (a per-run override)."""
        self._per_run[run_id] = settings

    def release(self, run_id: str) -> None:
        """Forget a finished run's override."""
        self._per_run.pop(run_id, None)

    async def authorize(self, request: ToolAuthorizationRequest) -> ToolDecision:
        """Decide, report the decision, and answer allow or deny."""
        run_id = request.context.run_id
        settings = self._per_run.get(run_id, self.default)
        decision = settings.decide(request)
        await self._on_decision(run_id, decision)
        if decision["behavior"] == "allow":
            return AllowDecision()
        return DenyDecision(reason=decision["reason"])
