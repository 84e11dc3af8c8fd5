"""Resuming a serialised run: identity and config checks, decision matching, the new deadline.

``AgentRuntime.resume`` validates everything here before it launches anything, so a decision that
names no open interruption (or does not fit its call) fails the call, not the run.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, cast

import attrs

from actoviq.core import (
    AbortSignal,
    ModelSettings,
    RunError,
    RunLimits,
    RunLimitsPatch,
    ToolResultItem,
)
from actoviq.runtime.errors import InterruptionDecisionError, RunStateError
from actoviq.runtime.execution import RunSeed
from actoviq.runtime.parts import AgentEntry
from actoviq.runtime.state import SerializedRunState
from actoviq.runtime.tool_suspension import suspended_interruptions
from actoviq.runtime.tools import (
    InterruptionDecision,
    PendingTool,
    plan_resume,
    reconciliation_interruption_id,
)

__all__ = [
    "check_decisions",
    "check_resumable",
    "deadline_invalid",
    "decision_for",
    "rejection_result",
    "resume_deadline",
    "resume_seed",
]


def check_resumable(state: SerializedRunState, entry: AgentEntry | None) -> AgentEntry:
    """The registered entry that may resume ``state``.

    Raises:
        RunStateError: the state has no agent config digest.
        RunError: ``AGENT_NOT_REGISTERED`` or ``AGENT_CONFIG_MISMATCH``.
    """
    if not state.agent_config_digest.strip():
        raise RunStateError(f'Serialized run state "{state.run_id}" has no agentConfigDigest.')
    if entry is None:
        raise RunError(
            f'Agent "{state.agent_id}" is not registered.',
            code="AGENT_NOT_REGISTERED",
            run_id=state.run_id,
            phase="runtime",
        )
    if state.agent_config_digest != entry.digest:
        raise RunError(
            f'Cannot resume run "{state.run_id}": the agent configuration changed.',
            code="AGENT_CONFIG_MISMATCH",
            run_id=state.run_id,
            phase="runtime",
        )
    return entry


def check_decisions(
    state: SerializedRunState, decisions: Iterable[InterruptionDecision]
) -> dict[str, InterruptionDecision]:
    """The decisions by interruption id, each checked against the pending call it resolves.

    Raises:
        InterruptionDecisionError: not a decision, or no open interruption matches it.
        ReconciliationDecisionError: a decision does not fit its call.
    """
    given = cast(object, decisions)
    kind = type(given).__name__
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
        raise InterruptionDecisionError(
            f"decisions must be an iterable of InterruptionDecision, got {kind}."
        )
    by_id: dict[str, InterruptionDecision] = {}
    for decision in decisions:
        if not isinstance(decision, InterruptionDecision):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InterruptionDecisionError(
                f"Expected an InterruptionDecision, got {type(decision).__name__}."
            )
        earlier = by_id.get(decision.interruption_id)
        if earlier is not None and earlier != decision:
            # Two different answers to one question: taking either would silently drop the
            # other (an approval overridden by a rejection or the reverse).
            raise InterruptionDecisionError(
                f'Conflicting decisions for interruption "{decision.interruption_id}".'
            )
        by_id[decision.interruption_id] = decision
    matched: set[str] = set()
    for pending in state.pending_tools:
        nested = suspended_interruptions(pending, state.interruptions)
        if nested:  # a suspended tool validates its own decisions when it runs again
            matched.update(entry.id for entry in nested if entry.id in by_id)
            continue
        ids = [reconciliation_interruption_id(state.run_id, pending.call.id)]
        if pending.interruption_id is not None:
            ids.insert(0, pending.interruption_id)
        for key in ids:
            decision = by_id.get(key)
            if decision is not None:
                plan_resume(pending, decision)  # raises when the decision does not fit
                matched.add(key)
                break
    unknown = sorted(set(by_id) - matched)
    if unknown:
        raise InterruptionDecisionError(
            f"No open interruption matches decision(s) {', '.join(unknown)}."
        )
    return by_id


def resume_deadline(
    state: SerializedRunState, limits: RunLimitsPatch | None, resolved: RunLimits
) -> tuple[float, bool]:
    """The resumed run's deadline (epoch ms) and whether the serialised one was invalid.

    The caller's ``run_deadline_ms`` wins, then the remaining budget of an interrupted run, then
    the absolute ``deadlineAt`` of a crashed one, then the resolved limits.
    """
    now = time.time() * 1000
    if limits is not None and limits.run_deadline_ms is not None:
        return now + limits.run_deadline_ms, False
    if state.remaining_run_ms is not None:
        return now + state.remaining_run_ms, False
    if state.deadline_at is not None:
        try:
            return datetime.fromisoformat(state.deadline_at).timestamp() * 1000, False
        except ValueError:
            return now + resolved.run_deadline_ms, True
    return now + resolved.run_deadline_ms, False


def resume_seed(
    parsed: SerializedRunState,
    decisions: dict[str, InterruptionDecision],
    resolved: RunLimits,
    limits: RunLimitsPatch | None,
    *,
    context: Any,
    signal: AbortSignal | None,
    model_settings: ModelSettings | None,
) -> tuple[RunSeed, bool]:
    """What a resumed run starts from, and whether its serialised deadline was invalid.

    ``model_settings`` are merged over the run's own; the deadline is :func:`resume_deadline`.
    """
    deadline, deadline_error = resume_deadline(parsed, limits, resolved)
    settings = parsed.model_settings
    if model_settings is not None:
        settings = model_settings if settings is None else settings.merged(model_settings)
    seed = RunSeed(
        state=attrs.evolve(parsed, status="running", model_settings=settings),
        input=list(parsed.input),
        limits=resolved,
        deadline_ms=deadline,
        context=context,
        signal=signal,
        streaming=True,
        decisions=decisions,
        expected=parsed.to_json(),
    )
    return seed, deadline_error


def deadline_invalid(run_id: str) -> RunError:
    """The failure of a resumed run whose serialised deadline cannot be read."""
    return RunError(
        "Serialized run deadline is invalid.",
        code="RUN_DEADLINE_INVALID",
        run_id=run_id,
        phase="runtime",
    )


def decision_for(
    run_id: str, pending: PendingTool, decisions: Mapping[str, InterruptionDecision]
) -> InterruptionDecision | None:
    """The decision that answers ``pending`` (by its interruption id or reconciliation id)."""
    if not decisions:
        return None
    if pending.interruption_id is not None and pending.interruption_id in decisions:
        return decisions[pending.interruption_id]
    return decisions.get(reconciliation_interruption_id(run_id, pending.call.id))


def rejection_result(pending: PendingTool, decision: InterruptionDecision) -> ToolResultItem:
    """The ``denied`` result of a rejected approval, as the reference writes it (03 §1.18)."""
    return ToolResultItem(
        call_id=pending.call.id,
        name=pending.call.name,
        status="error",
        output={
            "kind": "denied",
            "message": decision.reason or "Approval rejected.",
            "retryable": False,
        },
    )
