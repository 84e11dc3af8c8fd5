"""Pure helpers of ``ChildRunner``: session ids, policy checks, cancel errors, usage sums."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import quote

from actoviq.core import AgentSpec, JsonObject, Usage
from actoviq.orchestration.errors import ChildPolicyError
from actoviq.orchestration.outcomes import ChildError, ChildFailurePolicy, SessionMode
from actoviq.orchestration.scope import OrchestrationScope
from actoviq.runtime import ToolEffect

__all__ = [
    "agent_tools",
    "budget_json",
    "cancel_error",
    "check_policy",
    "child_session_id",
    "usage_delta",
    "usage_kwargs",
]


_QUOTE_SAFE = "-_.!~*'()"  # JavaScript encodeURIComponent keeps these


def child_session_id(scope: OrchestrationScope, mode: SessionMode) -> str | None:
    """The session a child in ``scope`` uses (spec 04 §1.6 step 7).

    ``transfer``: the parent's session; ``ephemeral``: none; ``child``:
    ``<tenant>:<namespace>:[<parentSession>:]<childRunId>`` with the parts URL-encoded like
    ``encodeURIComponent`` (the run id is not encoded).
    """
    tenant = scope.tenant_session
    if mode == "transfer":
        return tenant.session_id
    if mode == "ephemeral":
        return None
    parent_session = f"{quote(tenant.session_id, safe=_QUOTE_SAFE)}:" if tenant.session_id else ""
    return (
        f"{quote(tenant.tenant_id, safe=_QUOTE_SAFE)}:{quote(tenant.namespace, safe=_QUOTE_SAFE)}:"
        f"{parent_session}{scope.run_id}"
    )


def check_policy(
    policy: ChildFailurePolicy, effect: ToolEffect | None, idempotency_key: str | None
) -> None:
    """Refuse ``retry-safe`` for a side-effect child, or an idempotent write without a key."""
    if policy.mode != "retry-safe":
        return
    resolved = effect or "side-effect"
    if resolved == "side-effect":
        raise ChildPolicyError(
            "retry-safe is only valid for read or idempotent-write child executions.",
            details={"effect": resolved},
        )
    if resolved == "idempotent-write" and not (idempotency_key and idempotency_key.strip()):
        raise ChildPolicyError(
            "retry-safe idempotent-write execution requires an idempotencyKey.",
            details={"effect": resolved},
        )


def agent_tools(agent: AgentSpec[Any, Any]) -> frozenset[str]:
    """The tool ids ``agent`` declares."""
    return frozenset(ref if isinstance(ref, str) else ref.id for ref in agent.tools)


def cancel_error(scope: OrchestrationScope) -> ChildError:
    """Why a child run ended ``cancelled``: the scope's abort reason, or its own deadline."""
    if scope.signal.aborted and scope.signal.reason is not None:
        return ChildError.of(scope.signal.reason)
    return ChildError(
        name="RunCancelledError", message="Child run was cancelled.", code="RUN_CANCELLED"
    )


def budget_json(snapshot: JsonObject) -> JsonObject:
    """The budget fields of a ledger snapshot that events carry."""
    return {
        key: snapshot[key]
        for key in ("limits", "childRunsStarted", "totalTokensUsed", "costUsdUsed")
    }


def usage_kwargs(data: object) -> dict[str, Any]:
    """``Usage`` keyword arguments from a usage event's data (empty when absent)."""
    if not isinstance(data, Mapping):
        return {}
    mapping = cast(Mapping[str, Any], data)
    return {
        "total_tokens": int(mapping.get("totalTokens", 0) or 0),
        "cost_usd": float(mapping.get("costUsd", 0) or 0),
    }


def usage_delta(after: Usage, before: Usage) -> Usage:
    """The usage spent between two totals (never negative)."""
    return Usage(
        total_tokens=max(0, after.total_tokens - before.total_tokens),
        cost_usd=max(0.0, after.cost_usd - before.cost_usd),
    )
