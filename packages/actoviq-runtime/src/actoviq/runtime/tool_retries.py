"""Per-tool retry budgets (issue 14 §3): ``ToolRetry`` and invalid arguments, per run.

A tool accepts at most its ``max_retries`` consecutive calls that end in ``ToolRetry`` or in
invalid arguments (failure kinds ``retry`` and ``validation``); a successful call resets the
count. One more ends the run with ``RunError`` ``TOOL_RETRIES_EXCEEDED`` once the turn's results
are saved. The counts live in the run state (``toolRetries``), so a resumed run keeps them.
"""

from __future__ import annotations

from collections.abc import MutableMapping

from actoviq.core import RunError, ToolFailure
from actoviq.runtime.tools import ToolRegistry

__all__ = ["retries_exceeded", "track_retry"]


def track_retry(
    counts: MutableMapping[str, int],
    registry: ToolRegistry,
    name: str,
    failure: ToolFailure | None,
) -> tuple[ToolFailure, int] | None:
    """Count one settled call of ``name``; ``(failure, budget)`` when it spent the budget."""
    if failure is None:
        counts.pop(name, None)
        return None
    if failure.kind not in ("retry", "validation"):
        return None
    tool = registry.resolve(name)
    if tool is None:
        return None
    count = counts.get(name, 0) + 1
    counts[name] = count
    budget = tool.descriptor.behavior.retry_budget
    return (failure, budget) if count > budget else None


def retries_exceeded(run_id: str, failure: ToolFailure, budget: int) -> RunError:
    """The run's failure when a tool spent its retry budget."""
    return RunError(
        f'Tool "{failure.tool_name}" failed {budget + 1} times in a row asking for a retry or '
        f"with invalid arguments (max_retries={budget}): {failure.message}",
        code="TOOL_RETRIES_EXCEEDED",
        run_id=run_id,
        phase="tool_call",
        details={"tool": failure.tool_name, "callId": failure.call_id, "maxRetries": budget},
    )
