"""``AgentRuntime.before_handoff``: the explicit handoff lifecycle (spec 03 §1.21, ADR-005).

The runtime offers an agent's ``handoffs`` to the model as tools and ends the run with
``RunResult.handoff`` when the model calls one (:mod:`actoviq.runtime.handoff_tools`); it never runs
the target itself. Orchestration executes the handoff and calls
``before_handoff(request)`` after its input filter and before the child run: the request is
validated, the ``beforeHandoff`` middleware stage of the source agent's pipeline (or the
runtime's, when the source agent is not registered) may rewrite the input, and the result must
still be canonical items. When the parent run executes on this runtime, a ``handoff.prepared``
event is emitted on it (in its own sequence).

Example:
    >>> # items = await runtime.before_handoff(HandoffRequest(
    >>> #     source_agent_id="manager", target_agent=specialist, handoff_id="to-specialist",
    >>> #     input=conversation_items, parent_run_id=parent.run_id))
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

import attrs

from actoviq.core import (
    ITEM_TYPES,
    AbortController,
    AbortSignal,
    ActoviqError,
    AgentSpec,
    CanonicalItem,
    JsonObject,
    JsonValue,
    PreservedItem,
)
from actoviq.runtime.middleware import (
    MiddlewareDeadline,
    MiddlewareInvariantViolationError,
    MiddlewarePipeline,
    MiddlewareStage,
    RuntimeMiddlewareContext,
)

if TYPE_CHECKING:
    from actoviq.runtime.services import RuntimeServices

__all__ = ["HandoffRequest", "HandoffRequestError", "check_handoff_request", "prepare_handoff"]


class HandoffRequestError(ActoviqError, TypeError):
    """A handoff request is invalid (blank ids, a target that is not an AgentSpec, bad input)."""

    default_code: ClassVar[str] = "HANDOFF_REQUEST_INVALID"


@attrs.frozen(kw_only=True, slots=True)
class HandoffRequest:
    """What orchestration hands to :meth:`AgentRuntime.before_handoff`.

    Attributes:
        source_agent_id: the agent that owns the conversation now.
        target_agent: the agent that will own it.
        handoff_id: the handoff's id (``HandoffSpec.id``).
        input: the (already filtered) conversation items for the target.
        parent_run_id: the run that performs the handoff.
        signal: the parent's cancel signal (an aborted one refuses the handoff).
        deadline: absolute epoch milliseconds, exposed to middleware as ``ctx.deadline``.
        metadata: free JSON metadata for middleware.
    """

    source_agent_id: str
    target_agent: AgentSpec[Any, Any]
    handoff_id: str
    input: Sequence[CanonicalItem]
    parent_run_id: str
    signal: AbortSignal | None = None
    deadline: float | None = None
    metadata: JsonObject | None = None


def _canonical(value: object) -> list[CanonicalItem] | None:
    if isinstance(value, list | tuple):
        items = list(cast(Sequence[object], value))
        known = (*ITEM_TYPES.values(), PreservedItem)
        if all(isinstance(item, known) for item in items):
            return cast(list[CanonicalItem], items)
    return None


def check_handoff_request(request: object) -> HandoffRequest:
    """``request`` as a valid :class:`HandoffRequest`.

    Raises:
        HandoffRequestError: not a request, blank ids, a target that is not an AgentSpec.
    """
    if not isinstance(request, HandoffRequest):
        raise HandoffRequestError(
            f"before_handoff expects a HandoffRequest, got {type(request).__name__}."
        )
    for field, label in (
        ("source_agent_id", "sourceAgentId"),
        ("handoff_id", "handoffId"),
        ("parent_run_id", "parentRunId"),
    ):
        value: object = getattr(request, field)
        if not isinstance(value, str) or not value.strip():
            raise HandoffRequestError(
                f"Handoff {label} must not be empty.", details={"field": label}
            )
    if not isinstance(request.target_agent, AgentSpec):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise HandoffRequestError(
            "Handoff targetAgent must be an AgentSpec.", details={"field": "targetAgent"}
        )
    if _canonical(request.input) is None:
        raise HandoffRequestError(
            "Handoff input must be a list of canonical items.", details={"field": "input"}
        )
    return request


async def prepare_handoff(
    request: HandoffRequest,
    *,
    runtime: object,
    pipeline: MiddlewarePipeline,
    services: RuntimeServices,
    source: AgentSpec[Any, Any] | None,
    hook_timeout_ms: int,
    parent: Callable[[str, JsonValue], Awaitable[object]] | None,
) -> list[CanonicalItem]:
    """Validate ``request``, run ``beforeHandoff`` and return the child's input (see module doc).

    ``AgentRuntime.before_handoff`` passes what it owns: the source agent's composed
    ``pipeline`` (the runtime's when the source is unknown), its services and default hook
    timeout, and the parent run's ``emit`` when the parent is executing (for
    ``handoff.prepared``).

    Raises:
        HandoffRequestError: a blank id, a target that is not an AgentSpec, non-canonical input.
        BaseException: the signal's reason when the signal is already aborted.
        MiddlewareInvariantViolationError: middleware returned something other than items
            (phase ``handoff``).
    """
    request = check_handoff_request(request)
    signal = request.signal if request.signal is not None else AbortController().signal
    signal.throw_if_aborted()
    items = list(cast(list[CanonicalItem], _canonical(request.input)))
    stage = MiddlewareStage.BEFORE_HANDOFF
    if pipeline.has(stage):
        context = RuntimeMiddlewareContext(
            signal=signal,
            deadline=None
            if request.deadline is None
            else MiddlewareDeadline(
                expires_at=request.deadline, scope=f"handoff:{request.handoff_id}"
            ),
            hook_timeout_ms=hook_timeout_ms,
            runtime=runtime,
            services=services,
            agent=source,
            input=tuple(items),
            handoff=request,
        )
        result = await pipeline.run_with_error_stage(stage, context, lambda ctx: ctx.input)
        checked = _canonical(result)
        if checked is None:
            raise MiddlewareInvariantViolationError(
                stage,
                "beforeHandoff middleware must return canonical input items.",
                run_id=request.parent_run_id,
            )
        items = list(checked)
    if parent is not None:
        await parent(
            "handoff.prepared",
            {
                "handoffId": request.handoff_id,
                "sourceAgentId": request.source_agent_id,
                "targetAgentId": request.target_agent.id,
                "itemCount": len(items),
            },
        )
    return items
