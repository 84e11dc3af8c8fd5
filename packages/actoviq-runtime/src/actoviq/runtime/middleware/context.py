"""Middleware contexts and the read-only views middleware receives (spec 03 §3.4-§3.6, Q23).

A context is a frozen attrs value. The pipeline passes ``attrs.evolve(ctx, stage=stage)`` — one
object — to every handler and the terminal; ``signal`` and ``deadline`` keep their identity.
Run state is a deep-frozen JSON view and usage is a :class:`UsageView` with no ``add`` or
``reset``, so middleware cannot rewrite the transcript or bypass budgets.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from actoviq.core import (
    MAX_WIRE_DEPTH,
    AbortSignal,
    AgentSpec,
    CanonicalItem,
    JsonValue,
    RunContext,
    ToolCallItem,
    Usage,
    UsageAccumulator,
)
from actoviq.runtime.middleware.errors import MiddlewareContextError
from actoviq.runtime.middleware.stages import MiddlewareStage
from actoviq.runtime.tools import FrozenJson, ToolOutput, freeze_json

__all__ = [
    "MiddlewareContext",
    "MiddlewareDeadline",
    "MiddlewareErrorContext",
    "RunView",
    "RuntimeMiddlewareContext",
    "UsageView",
    "read_only_state",
]


def _check_expires_at(_: object, __: object, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise MiddlewareContextError(
            "Middleware context deadline.expiresAt must be a finite number >= 0."
        )


@attrs.frozen(kw_only=True, slots=True)
class MiddlewareDeadline:
    """An absolute stage deadline (epoch milliseconds) and the scope it belongs to."""

    expires_at: float = attrs.field(validator=_check_expires_at)
    scope: str | None = None


def _check_hook_timeout(_: object, __: object, value: object) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise MiddlewareContextError(
            "Middleware context hook_timeout_ms must be a positive finite number."
        )


def _check_signal(_: object, __: object, value: object) -> None:
    if not isinstance(value, AbortSignal):
        raise MiddlewareContextError("Middleware context signal must be an AbortSignal.")


def _check_deadline(_: object, __: object, value: object) -> None:
    if value is not None and not isinstance(value, MiddlewareDeadline):
        raise MiddlewareContextError(
            "Middleware context deadline must be a MiddlewareDeadline or None."
        )


@attrs.frozen(kw_only=True, slots=True)
class MiddlewareContext:
    """The base stage context: the cancel signal, an optional deadline and hook timeout."""

    signal: AbortSignal = attrs.field(validator=_check_signal)
    deadline: MiddlewareDeadline | None = attrs.field(default=None, validator=_check_deadline)
    stage: MiddlewareStage | None = None
    hook_timeout_ms: float | None = attrs.field(default=None, validator=_check_hook_timeout)


class UsageView:
    """A read-only view of the run's usage accumulator (no ``add``, no ``reset``)."""

    __slots__ = ("_accumulator",)

    def __init__(self, accumulator: UsageAccumulator) -> None:
        self._accumulator = accumulator

    def snapshot(self) -> Usage:
        """The current totals (an immutable value)."""
        return self._accumulator.snapshot()

    @property
    def total_tokens(self) -> int:
        """Total tokens so far."""
        return self._accumulator.snapshot().total_tokens

    @property
    def cost_usd(self) -> float:
        """Cost so far in USD."""
        return self._accumulator.snapshot().cost_usd

    def __repr__(self) -> str:
        return f"UsageView({self.snapshot()!r})"


@attrs.frozen(kw_only=True, slots=True)
class RunView:
    """What middleware sees of the run (read-only; ``context`` is the caller's object)."""

    run_id: str
    agent_id: str
    context: Any  # the caller's context object, passed through as given
    started_at: str
    usage: UsageView
    metadata: FrozenJson
    signal: AbortSignal
    deadline_at: str | None = None
    session_id: str | None = None

    @classmethod
    def of(cls, run: RunContext[Any]) -> RunView:
        """A view of ``run``."""
        return cls(
            run_id=run.run_id,
            agent_id=run.agent_id,
            context=run.context,
            started_at=run.started_at,
            usage=UsageView(run.usage),
            metadata=freeze_json(run.metadata, "run metadata"),
            signal=run.signal,
            deadline_at=run.deadline_at,
            session_id=run.session_id,
        )


def read_only_state(state: JsonValue) -> FrozenJson:
    """A deep-frozen view of the serialised run state (``MappingProxyType`` + tuples)."""
    return freeze_json(state, "run state", max_depth=MAX_WIRE_DEPTH)


@attrs.frozen(kw_only=True, slots=True)
class RuntimeMiddlewareContext(MiddlewareContext):
    """The context of the runtime's stages; the optional fields depend on the stage (§3.6)."""

    runtime: Any = None  # the AgentRuntime (typed loosely: it sits above this module)
    services: Any = None  # the RuntimeServices of the runtime
    agent: AgentSpec[Any, Any] | None = None
    run: RunView | None = None
    state: FrozenJson = None
    input: tuple[CanonicalItem, ...] | None = None
    model_request: Any = None  # a providers ModelRequest
    model_response: Any = None  # a providers ModelResponse
    tool_call: ToolCallItem | None = None
    tool_output: ToolOutput | None = None
    result: Any = None  # the RunResult at afterRun
    handoff: Any = None  # the handoff request at beforeHandoff


@attrs.frozen(kw_only=True, slots=True)
class MiddlewareErrorContext(MiddlewareContext):
    """The onError context: the failed stage, the error and the failed stage's context."""

    failed_stage: MiddlewareStage
    error: BaseException
    source_context: MiddlewareContext
