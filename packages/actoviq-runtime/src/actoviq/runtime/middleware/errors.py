"""Middleware errors (spec 03 §1.22, §3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from actoviq.core import ActoviqError, RunError, RunPhase

__all__ = [
    "MiddlewareConfigurationError",
    "MiddlewareContextError",
    "MiddlewareDeadlineExceededError",
    "MiddlewareError",
    "MiddlewareInvariantViolationError",
    "MiddlewareNextCalledTwiceError",
    "MiddlewarePriorityConflictError",
    "MiddlewareRegistryError",
    "MiddlewareTimeoutError",
    "UnknownMiddlewareStageError",
]


class MiddlewareError(ActoviqError):
    """Root of the middleware errors."""

    default_code: ClassVar[str] = "MIDDLEWARE_ERROR"


class MiddlewareConfigurationError(MiddlewareError, TypeError):
    """A middleware definition is invalid (blank name, unknown stage, bad priority/handle)."""

    default_code: ClassVar[str] = "MIDDLEWARE_CONFIGURATION_INVALID"


class UnknownMiddlewareStageError(MiddlewareConfigurationError):
    """``"Unknown middleware stage: <x>."``."""

    default_code: ClassVar[str] = "MIDDLEWARE_STAGE_UNKNOWN"


class MiddlewareContextError(MiddlewareError, TypeError):
    """The context handed to the pipeline is not usable (``"Middleware context…"``)."""

    default_code: ClassVar[str] = "MIDDLEWARE_CONTEXT_INVALID"


class MiddlewarePriorityConflictError(MiddlewareConfigurationError):
    """Two definitions share one ``(stage, priority)``; raised when a pipeline is built."""

    default_code: ClassVar[str] = "MIDDLEWARE_PRIORITY_CONFLICT"

    def __init__(self, stage: str, priority: int, middleware_names: Sequence[str]) -> None:
        names = sorted(middleware_names)
        super().__init__(
            f"Middleware priority conflict at {stage}@{priority}: {', '.join(names)}. "
            "Each stage must use unique priorities.",
            details={"stage": str(stage), "priority": priority, "middlewareNames": names},
        )
        self.stage = stage
        self.priority = priority
        self.middleware_names = names


class MiddlewareNextCalledTwiceError(MiddlewareError):
    """A handler (or ``<terminal>``) called ``next()`` more than once."""

    default_code: ClassVar[str] = "MIDDLEWARE_NEXT_CALLED_TWICE"

    def __init__(self, stage: str, middleware_name: str) -> None:
        super().__init__(
            f'Middleware "{middleware_name}" called next() more than once at {stage}.',
            details={"stage": str(stage), "middlewareName": middleware_name},
        )
        self.stage = stage
        self.middleware_name = middleware_name


class MiddlewareDeadlineExceededError(MiddlewareError):
    """The stage deadline expired before (or while) a handler ran."""

    default_code: ClassVar[str] = "MIDDLEWARE_DEADLINE_EXCEEDED"

    def __init__(self, stage: str, expires_at: float, scope: str | None = None) -> None:
        where = f" for {scope}" if scope else ""
        shown = int(expires_at) if float(expires_at).is_integer() else expires_at
        details: dict[str, object] = {"stage": str(stage), "expiresAt": expires_at}
        if scope is not None:
            details["scope"] = scope
        super().__init__(f"Middleware deadline{where} expired at {shown}.", details=details)
        self.stage = stage
        self.expires_at = expires_at
        self.scope = scope


class MiddlewareTimeoutError(MiddlewareError):
    """A handler exceeded the hook timeout (time spent inside ``next()`` is not counted)."""

    default_code: ClassVar[str] = "MIDDLEWARE_HOOK_TIMEOUT"

    def __init__(self, stage: str, middleware_name: str, timeout_ms: float) -> None:
        super().__init__(
            f'Middleware "{middleware_name}" at {stage} exceeded its hook timeout of '
            f"{timeout_ms:g} ms.",
            details={
                "stage": str(stage),
                "middlewareName": middleware_name,
                "timeoutMs": timeout_ms,
            },
        )
        self.stage = stage
        self.middleware_name = middleware_name
        self.timeout_ms = timeout_ms


class MiddlewareRegistryError(MiddlewareError, ValueError):
    """Registry misuse: blank id, empty group, duplicate id, unknown reference."""

    default_code: ClassVar[str] = "MIDDLEWARE_REGISTRY_ERROR"


def _phase(stage: str) -> RunPhase:
    if stage == "wrapToolCall":
        return "tool_call"
    if stage == "beforeHandoff":
        return "handoff"
    return "model_call"


class MiddlewareInvariantViolationError(RunError):
    """Middleware tried to remove a runtime invariant (ADR-003); the run fails."""

    default_code: ClassVar[str] = "MIDDLEWARE_INVARIANT_VIOLATION"

    def __init__(
        self,
        stage: str,
        message: str,
        *,
        run_id: str | None = None,
        phase: RunPhase | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(
            message,
            run_id=run_id,
            phase=phase if phase is not None else _phase(str(stage)),
            details={"stage": str(stage)},
            cause=cause,
        )
        self.stage = stage
