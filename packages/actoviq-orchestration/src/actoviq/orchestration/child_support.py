"""Helpers of ``ChildRunner``: session ids, run options, policy checks, usage, injected metadata.

The ``orchestration`` metadata injected into every child run is built from checked pieces (see
:class:`InjectedMetadata`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any, Final, Protocol, cast
from urllib.parse import quote

from actoviq.core import (
    MAX_JSON_DEPTH,
    AgentSpec,
    CheckedJsonObject,
    CheckedJsonTemplate,
    JsonHandOff,
    JsonObject,
    RunLimitsPatch,
    Usage,
)
from actoviq.orchestration.budget import BudgetLimits, BudgetSnapshot
from actoviq.orchestration.errors import ChildPolicyError
from actoviq.orchestration.outcomes import ChildError, ChildFailurePolicy, SessionMode
from actoviq.orchestration.scope import OrchestrationScope
from actoviq.runtime import ToolEffect

__all__ = [
    "InjectedMetadata",
    "agent_tools",
    "budget_json",
    "cancel_error",
    "check_policy",
    "check_policy_declaration",
    "child_session_id",
    "failed_usage",
    "last_sequence",
    "run_options",
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


def run_options(
    scope: OrchestrationScope,
    *,
    session_id: str | None,
    context: Any,
    metadata: JsonObject | None,
    session_history: str | None,
    sequence: int = 0,
) -> dict[str, Any]:
    """The ``runtime.run`` options of a run *as* ``scope`` (its id, trace, signal, deadline)."""
    options: dict[str, Any] = {
        "context": context,
        "signal": scope.signal,
        "session_id": session_id,
        "tenant_id": scope.tenant_session.tenant_id,
        "workspace_id": scope.workspace_policy.workspace_id,
        "metadata": metadata,
        "run_id": scope.run_id,
        "trace": scope.trace,
    }
    remaining = None if scope.deadline is None else scope.remaining_ms(time.time() * 1000)
    if remaining is not None:
        options["limits"] = RunLimitsPatch(run_deadline_ms=max(1, math.ceil(remaining)))
    if session_history is not None and session_id is not None:
        options["session_history"] = session_history
    if sequence:
        options["event_sequence_start"] = sequence  # a retry continues the run's events
    return options


def check_policy(
    policy: ChildFailurePolicy, effect: ToolEffect | None, idempotency_key: str | None
) -> None:
    """Refuse ``retry-safe`` for a side-effect child, or an idempotent write without a key."""
    check_policy_declaration(
        policy, effect, keyed=bool(idempotency_key and idempotency_key.strip())
    )


def check_policy_declaration(
    policy: ChildFailurePolicy | None, effect: ToolEffect | None, *, keyed: bool
) -> None:
    """:func:`check_policy` where the child is declared (an agent tool, a handoff, a node).

    ``keyed`` says whether an idempotency key will be supplied. The same rule refuses the
    declaration that every run of it would refuse, when it is built instead of at its first
    call.
    """
    if policy is None or policy.mode != "retry-safe":
        return
    resolved = effect or "side-effect"
    if resolved == "side-effect":
        raise ChildPolicyError(
            "retry-safe is only valid for read or idempotent-write child executions.",
            details={"effect": resolved},
        )
    if resolved == "idempotent-write" and not keyed:
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


def last_sequence(error: BaseException, previous: int) -> int:
    """The event sequence a failed attempt ended at (``last_event_sequence``), else ``previous``.

    The next attempt of the same run id starts after it, so the run's events stay in order.
    """
    value = getattr(error, "last_event_sequence", None)
    return value if type(value) is int and value > previous else previous


def failed_usage(error: BaseException, before: Usage | None = None) -> Usage | None:
    """What a failed run spent, from its error's ``run_usage`` (minus ``before``), or None.

    The runtime puts the run's total usage on the error a failed run raises, so a child that
    failed after paying for model calls is still charged on its tree's budget (§8.2-13).
    """
    spent = getattr(error, "run_usage", None)
    if not isinstance(spent, Usage):
        return None
    if before is not None:
        spent = usage_delta(spent, before)
    return spent if spent.total_tokens or spent.cost_usd else None


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


class _JsonPiece(Protocol):
    def to_json(self) -> JsonObject: ...


_PIECE_DEPTH: Final = MAX_JSON_DEPTH - 2  # metadata > orchestration > piece
_CACHE_SIZE: Final = 256
_LABEL: Final = "orchestration metadata"
# What differs between siblings, in the order build_from fills it.
_HOLES: Final = (
    "runId",
    ("trace", "spanId"),
    ("budget", "childRunsStarted"),
    ("budget", "totalTokensUsed"),
    ("budget", "costUsdUsed"),
    "idempotencyKey",
    "attempt",
)


class InjectedMetadata:
    """Builds the ``orchestration`` metadata of each child run (spec 04 §1.6 step 8).

    What siblings share (parent, depth, deadline, trace id, security policy, tenant, workspace,
    budget limits, effect: frozen values inherited by reference) is checked once per parent and
    kept as a :class:`~actoviq.core.CheckedJsonTemplate`; per child only its own scalars (run
    id, span id, budget counters, idempotency key, attempt) are checked and filled in, in one
    :meth:`~actoviq.core.CheckedJsonTemplate.hand_off`: a fresh plain object the runtime takes
    as the run's own without walking or copying it again (a
    :class:`~actoviq.core.JsonHandOff`, given once); the caller's own metadata keys are still
    validated by the runtime.
    """

    def __init__(self) -> None:
        self._pieces: dict[int, tuple[object, CheckedJsonObject]] = {}
        self._bases: dict[
            tuple[str | None, str], tuple[tuple[object, ...], CheckedJsonTemplate]
        ] = {}

    def _piece(self, value: _JsonPiece, max_depth: int = _PIECE_DEPTH) -> CheckedJsonObject:
        entry = self._pieces.get(id(value))
        if entry is not None and entry[0] is value:
            return entry[1]
        if len(self._pieces) >= _CACHE_SIZE:
            self._pieces.clear()
        checked = CheckedJsonObject(value.to_json(), label=_LABEL, max_depth=max_depth)
        self._pieces[id(value)] = (value, checked)
        return checked

    def _base(
        self, scope: OrchestrationScope, limits: BudgetLimits, effect: str
    ) -> CheckedJsonTemplate:
        trace = scope.trace
        shared = (
            scope.depth,
            scope.deadline,
            trace.trace_id,
            trace.parent_span_id,
            scope.security_policy,
            scope.tenant_session,
            scope.workspace_policy,
            limits,
        )
        key = (scope.parent_run_id, effect)
        entry = self._bases.get(key)
        if entry is not None and entry[0] == shared:  # identity first, element by element
            return entry[1]
        if len(self._bases) >= _CACHE_SIZE:
            self._bases.clear()
        checked_trace = CheckedJsonObject(
            {"traceId": trace.trace_id, "spanId": "", "parentSpanId": trace.parent_span_id},
            label=_LABEL,
            max_depth=1,
        )
        budget = CheckedJsonObject(
            {
                "limits": self._piece(limits, 4),
                "childRunsStarted": 0,
                "totalTokensUsed": 0,
                "costUsdUsed": 0,
            },
            label=_LABEL,
            max_depth=_PIECE_DEPTH,
        )
        injected = CheckedJsonObject(
            {
                "runId": "",
                "parentRunId": scope.parent_run_id,
                "depth": scope.depth,
                "deadline": scope.deadline,
                "trace": checked_trace,
                "securityPolicy": self._piece(scope.security_policy),
                "tenantSession": self._piece(scope.tenant_session),
                "workspacePolicy": self._piece(scope.workspace_policy),
                "budget": budget,
                "effect": effect,
                "idempotencyKey": None,
                "attempt": 1,
            },
            label=_LABEL,
        )
        template = CheckedJsonTemplate(injected, _HOLES, label=_LABEL)
        self._bases[key] = (shared, template)
        return template

    def build(
        self,
        scope: OrchestrationScope,
        snapshot: BudgetSnapshot,
        effect: ToolEffect | None,
        idempotency_key: str | None,
        attempt: int,
    ) -> JsonHandOff:
        """The injected object of one attempt of the child run in ``scope``."""
        return self.build_from(
            scope,
            snapshot.limits,
            (snapshot.child_runs_started, snapshot.total_tokens_used, snapshot.cost_usd_used),
            effect,
            idempotency_key,
            attempt,
        )

    def build_from(
        self,
        scope: OrchestrationScope,
        limits: BudgetLimits,
        counters: tuple[int, int, float],
        effect: ToolEffect | None,
        idempotency_key: str | None,
        attempt: int,
    ) -> JsonHandOff:
        """:meth:`build` from the ledger's limits and counters (runs, tokens, cost)."""
        runs, tokens, cost = counters
        return self._base(scope, limits, effect or "side-effect").hand_off(
            scope.run_id, scope.trace.span_id, runs, tokens, cost, idempotency_key, attempt
        )
