"""One run's execution: its live state, cancellation, checkpoints and events.

The turn loop that drives a :class:`RunExecution` is :mod:`actoviq.runtime.loop`; the steps it
calls (:mod:`~actoviq.runtime.model_turn`, :mod:`~actoviq.runtime.tool_turn`, ...) all take the
execution, so this module sits below them all and imports none of them.

Order of operations (spec 03 §1.7 with the D5 fixes): ``run.started``/``run.resumed`` → prepareInput
→ session load (CAS on a caller revision, Q16) → instructions → input guardrails → first
checkpoint → beforeRun (:mod:`actoviq.runtime.run_input`) → finish a resumed turn's pending tools →
turn loop (model call, usage and budget, afterModelResponse in :mod:`actoviq.runtime.model_turn`;
tool calls via :mod:`actoviq.runtime.tool_turn`; afterTurn) → finalizeOutput → output guardrails →
session append → afterRun → ``run.completed`` (:mod:`actoviq.runtime.run_output`). Interrupted,
cancelled and failed runs end in :mod:`actoviq.runtime.run_outcomes`.

The state is persisted before each state-changing event. Cancellation (``cancel()``, close, a
stopped consumer, the run deadline, an external signal) aborts the run's signal and cancels its
task; the run then ends ``cancelled`` and its checkpoint is kept.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, cast

from actoviq.core import (
    AbortController,
    AbortSignal,
    AgentSpec,
    CanonicalItem,
    GuardrailDecision,
    HandoffCallItem,
    Interruption,
    JsonObject,
    JsonValue,
    RunContext,
    RunError,
    RunLimits,
    UsageAccumulator,
    empty_usage,
)
from actoviq.events import RunEvent, RunEventSequencer, TraceContext
from actoviq.providers import ModelProvider, ModelResponse
from actoviq.runtime.errors import RunClaimLostError, RunStateStaleError
from actoviq.runtime.failures import persistence_error
from actoviq.runtime.handle import EventBuffer
from actoviq.runtime.middleware import (
    MiddlewareDeadline,
    MiddlewarePipeline,
    MiddlewareStage,
    RuntimeMiddlewareContext,
    RunView,
    read_only_state,
)
from actoviq.runtime.output_check import OutputCheck
from actoviq.runtime.parts import AgentEntry, RuntimeParts
from actoviq.runtime.persistence import RunPersistence
from actoviq.runtime.run_timer import RunTimer
from actoviq.runtime.state import ResolvedDecision, RunStateStatus, SerializedRunState
from actoviq.runtime.stores import RuntimeSessionStore
from actoviq.runtime.tools import InterruptionDecision, PendingTool

__all__ = ["RunExecution", "RunInterrupted", "RunSeed", "to_iso_ms"]

_T = TypeVar("_T")


class RunInterrupted(Exception):
    """Raised inside a run when it must pause for decisions (never escapes the runtime)."""

    def __init__(self, interruptions: Sequence[Interruption]) -> None:
        super().__init__(interruptions[0].reason if interruptions else "Run interrupted.")
        self.interruptions = tuple(interruptions)


class RunSeed:
    """Everything a run starts from: fresh (``run``/``stream``) or resumed (``resume``)."""

    __slots__ = (
        "context",
        "deadline_ms",
        "decisions",
        "expected",
        "input",
        "limits",
        "provided_history",
        "resumed",
        "signal",
        "state",
        "streaming",
    )

    def __init__(
        self,
        *,
        state: SerializedRunState,
        input: list[CanonicalItem],
        limits: RunLimits,
        deadline_ms: float,
        context: Any,
        signal: AbortSignal | None,
        streaming: bool,
        decisions: dict[str, InterruptionDecision] | None,
        provided_history: bool = False,
        expected: JsonObject | None = None,
    ) -> None:
        self.state = state
        self.provided_history = provided_history
        self.expected = expected  # the resumed state's JSON (what the claim must still find)
        self.input = input
        self.limits = limits
        self.deadline_ms = deadline_ms
        self.context = context
        self.signal = signal
        self.streaming = streaming
        self.decisions = decisions
        self.resumed = decisions is not None


class RunExecution:
    """The live state and behaviour of one run (internal; driven by ``AgentRuntime``)."""

    def __init__(
        self,
        parts: RuntimeParts,
        entry: AgentEntry,
        seed: RunSeed,
        *,
        buffer: EventBuffer | None,
    ) -> None:
        state = seed.state
        self.parts = parts
        self.entry = entry
        self.agent: AgentSpec[Any, Any] = entry.spec
        self.pipeline: MiddlewarePipeline = cast(MiddlewarePipeline, entry.pipeline)
        self.limits = seed.limits
        self.streaming = seed.streaming
        self.resumed = seed.resumed
        self.provided_history = seed.provided_history
        self.decisions = seed.decisions or {}
        self.context = seed.context
        self.buffer = buffer
        self.run_id = state.run_id
        self.trace: TraceContext = state.trace
        self.started_at = state.started_at
        self.status: RunStateStatus = "running"
        self.turn = state.turn
        self.input: list[CanonicalItem] = seed.input
        self.transcript: list[CanonicalItem] = list(state.transcript)
        self.generated: list[CanonicalItem] = list(state.generated_items)
        usage = state.usage
        self.usage = UsageAccumulator() if usage is empty_usage() else UsageAccumulator(usage)
        self.session_id = state.session_id
        self.tenant_id = state.tenant_id
        self.expected_revision = state.expected_session_revision
        self.workspace_id = state.workspace_id
        self.pending: list[PendingTool] = list(state.pending_tools)
        self.interruptions: list[Interruption] = list(state.interruptions)
        self.audit: list[ResolvedDecision] = list(state.decisions)
        self.child_run_ids = state.child_run_ids
        self.metadata: JsonObject = state.metadata
        self.digest = state.agent_config_digest
        self.state_revision = state.state_revision
        self.run_settings = state.model_settings  # the run's own (persisted) settings
        agent_settings = self.agent.model_settings
        if agent_settings is None:
            self.settings = self.run_settings
        else:
            self.settings = agent_settings.merged(self.run_settings)
        self.output_retries_used = state.structured_output_retries
        self.tool_retries: dict[str, int] = dict(state.tool_retries)
        self.expected = seed.expected
        self.final_state: JsonObject | None = None
        self.deadline_ms = seed.deadline_ms
        self.deadline_at = to_iso_ms(self.deadline_ms)  # fixed for the run: formatted once
        # Nobody can see this run's events (no stream, no sink, no observing processor): they
        # are counted, never built (the state's lastEventSequence stays the same).
        self.silent = buffer is None and parts.unobserved_events
        self.sequencer = RunEventSequencer(
            state.trace, state.last_event_sequence, ids=parts.ids, clock=parts.clock
        )
        self.controller = AbortController()
        self.signal = self.controller.signal
        self.task: asyncio.Task[Any] | None = None
        self.timer: RunTimer | None = None  # the deadline and model-call timeout (loop.execute)
        self.cancel_requested = False
        self.cancel_sent = False  # the run cancelled its task (withdrawn when it ends)
        self.inline = False  # hosted in its caller's task (actoviq.runtime.inline_run)
        self.running = False
        self.terminal = False
        self._start_emitted = False
        self.last_response: ModelResponse | None = None
        self.output_check: OutputCheck | None = None  # the last response's structured verdict
        self.handoff: HandoffCallItem | None = None  # the model's handoff of the current turn
        self.provider_route: tuple[object, ModelProvider] | None = None
        # The caller's signal may outlive many runs: the link is removed when the run ends.
        self.unlink_caller: Callable[[], None] | None = (
            seed.signal.add_listener(self.abort) if seed.signal is not None else None
        )
        self._unlink_abort = self.signal.add_listener(self._on_abort)
        self._run_context: RunContext[Any] | None = None  # built when first asked for
        self._run_view: RunView | None = None
        self.start_error: Exception | None = None
        self.ending = False  # an interrupted/cancelled ending started (its failure is a failure)
        self.delivery_error: BaseException | None = None  # a terminal event could not be sent
        self.persistence = RunPersistence(
            parts.checkpoint_store,
            run_id=self.run_id,
            lease_ms=parts.lease_ms,
            hook_timeout=self.hook_timeout(),
        )

    @property
    def run_context(self) -> RunContext[Any]:
        """What instructions, guardrails and middleware see of the run (built once, on demand)."""
        context = self._run_context
        if context is None:
            context = self._run_context = RunContext(
                run_id=self.run_id,
                agent_id=self.agent.id,
                context=self.context,
                signal=self.signal,
                started_at=self.started_at,
                usage=self.usage,
                metadata=self.metadata,
                deadline_at=self.deadline_at,
                session_id=self.session_id,
            )
        return context

    def fail_at_start(self, error: Exception) -> None:
        """Make the run fail with ``error`` right after its start event (e.g. a bad deadline)."""
        self.start_error = error

    # -- cancellation -----------------------------------------------------------------------------

    def abort(self, reason: object = None) -> None:
        """Abort the run with ``reason`` (first reason wins)."""
        self.controller.abort(reason)

    def _on_abort(self, _reason: object) -> None:
        task = self.task
        if not self.running:
            return  # main() checks the signal when it starts
        if task is not None and not self.terminal and not self.cancel_requested:
            self.cancel_requested = True
            if task is not asyncio.current_task():
                self.cancel_sent = True
                task.cancel()

    def release(self) -> None:
        """Break the execution's own reference cycles once the run ended (runtime ``_ended``).

        Its abort listener on its own signal and its timer's deadline callback point back at the
        execution; without this, every finished run would wait for the cyclic garbage collector
        (and make it run more often). Nothing needs them once the run ended: the timer is
        cancelled, and aborting an ended run does nothing.
        """
        self._unlink_abort()
        self.timer = None

    def raise_if_aborted(self) -> None:
        """Raise the abort reason when the run signal is aborted (and mark the cancel as ours)."""
        if self.signal.aborted:
            self.cancel_requested = True
            self.signal.throw_if_aborted()

    def hook_timeout(self) -> float:
        """Seconds an extension point (guardrail, store, instructions) may take."""
        return self.limits.hook_timeout_ms / 1000.0

    async def bounded(self, awaitable: Awaitable[_T]) -> _T:
        """Await an extension point under the hook timeout (D5)."""
        async with asyncio.timeout(self.hook_timeout()):
            return await awaitable

    # -- state ------------------------------------------------------------------------------------

    def serialized(self) -> SerializedRunState:
        """The current state as an immutable value (tuples share the immutable items)."""
        interrupted = self.status == "interrupted"
        remaining = max(0, int(self.deadline_ms - time.time() * 1000)) if interrupted else None
        return SerializedRunState(
            run_id=self.run_id,
            agent_id=self.agent.id,
            agent_config_digest=self.digest,
            status=self.status,
            trace=self.trace,
            started_at=self.started_at,
            deadline_at=None if interrupted else self.deadline_at,
            remaining_run_ms=remaining,
            turn=self.turn,
            input=tuple(self.input),
            transcript=tuple(self.transcript),
            generated_items=tuple(self.generated),
            usage=self.usage.snapshot(),
            session_id=self.session_id,
            tenant_id=self.tenant_id,
            expected_session_revision=self.expected_revision,
            workspace_id=self.workspace_id,
            pending_tools=tuple(self.pending),
            interruptions=tuple(self.interruptions),
            # A terminal save precedes its terminal event: count that event already.
            last_event_sequence=self.sequencer.last_sequence + (self.status != "running"),
            decisions=tuple(self.audit),
            child_run_ids=self.child_run_ids,
            metadata=self.metadata,
            state_revision=self.state_revision,
            model_settings=self.run_settings,
            structured_output_retries=self.output_retries_used,
            tool_retries=tuple(self.tool_retries.items()),
        )

    def snapshot_json(self) -> JsonObject:
        """The current state's wire JSON (a fresh object)."""
        return self.serialized().to_json()

    async def save(self) -> JsonObject | None:
        """Persist the state (before the event that announces the change) and return it.

        Every save is a new ``stateRevision``; a terminal one (status other than ``running``)
        releases the run's claim and is remembered as the run's final state. Without a store a
        running state is not even built (None is returned).

        Raises:
            RunPersistenceError: ``RUN_STATE_SERIALIZATION_FAILED`` or ``CHECKPOINT_SAVE_FAILED``.
            RunStateStaleError: the run's claim was lost (or refused on a fresh run's first save).
        """
        self.state_revision += 1
        running = self.status == "running"
        if self.parts.checkpoint_store is None and (
            running
            or (
                self.status == "completed"
                and not self.resumed
                and not self.parts.ledger.knows(self.run_id)
            )
        ):
            return None  # nothing to persist and nobody will resume this state
        try:
            state = self.snapshot_json()
        except Exception as error:
            raise persistence_error("state.serialize", error, self.run_id) from error
        try:
            await self.persistence.save(state)
        except RunStateStaleError:
            raise
        except Exception as error:
            raise persistence_error("checkpoint.save", error, self.run_id) from error
        if not running:
            self.final_state = state
        return state

    # -- events -----------------------------------------------------------------------------------

    async def emit(
        self, type: str, data: JsonValue, *, terminal: bool = False, host: bool = False
    ) -> RunEvent | None:
        """Stamp, dispatch (processors then sinks) and hand the event to the stream.

        A ``terminal`` event (how the run ended) is dispatched in isolate mode: a failing sink is
        reported by the dispatcher and the other sinks and the handle still get it. In a
        :attr:`silent` run the runtime's own events are only counted (``host`` events, whose
        data the runtime did not build, are always dispatched).

        Raises:
            RunPersistenceError: ``EVENT_DELIVERY_FAILED`` (a sink or processor failed in
                ``"raise"`` mode).
        """
        if self.silent and not host and not self.parts.dispatcher.closed:
            self.sequencer.skip()
            return None
        event = self.sequencer.next(type, data)
        try:
            delivered = await self.parts.dispatcher.dispatch(event, isolate=terminal)
        except Exception as error:
            if terminal:  # the dispatcher is closed: nothing more can be delivered
                self.delivery_error = error
                return None
            raise persistence_error("event.delivery", error, self.run_id) from error
        if delivered is not None and self.buffer is not None:
            await self.buffer.put(delivered)
        return delivered

    def skip_event(self) -> bool:
        """Count the next event instead of emitting it when nobody can see it (:attr:`silent`).

        For call sites whose event data costs something to build: ``if not run.skip_event():
        await run.emit(...)``.
        """
        if self.silent and not self.parts.dispatcher.closed:
            self.sequencer.skip()
            return True
        return False

    async def emit_start(self, *, terminal: bool = False) -> None:
        """Emit ``run.started`` (or ``run.resumed``) once (``terminal``: as part of the end)."""
        if not self._start_emitted:
            self._start_emitted = True
            kind = "run.resumed" if self.resumed else "run.started"
            await self.emit(kind, {"agentId": self.agent.id}, terminal=terminal)

    # -- middleware -------------------------------------------------------------------------------

    def run_view(self) -> RunView:
        """A read-only view of the run context for middleware (built once)."""
        if self._run_view is None:
            self._run_view = RunView.of(self.run_context)
        return self._run_view

    def middleware_context(self, **extra: Any) -> RuntimeMiddlewareContext:
        """A context for one stage call (only built when the stage has handlers)."""
        parts = self.parts
        return RuntimeMiddlewareContext(
            signal=self.signal,
            deadline=MiddlewareDeadline(expires_at=self.deadline_ms, scope=f"run:{self.run_id}"),
            hook_timeout_ms=self.limits.hook_timeout_ms,
            runtime=parts.runtime,
            services=parts.services,
            agent=self.agent,
            run=self.run_view(),
            state=read_only_state(self.snapshot_json()),
            **extra,
        )

    async def stage(
        self,
        stage: MiddlewareStage,
        terminal: Callable[[RuntimeMiddlewareContext], _T | Awaitable[_T]],
        default: Callable[[], _T | Awaitable[_T]],
        **extra: Any,
    ) -> _T:
        """Run a stage with onError, or just ``default()`` when nobody listens (fast path)."""
        if not self.pipeline.has(stage):
            value = default()
            if inspect.isawaitable(value):
                return await cast(Awaitable[_T], value)
            return value
        return await self.pipeline.run_with_error_stage(
            stage, self.middleware_context(**extra), terminal
        )

    # -- extension points -------------------------------------------------------------------------

    async def guardrail(self, outcome: object) -> GuardrailDecision:
        """Await a guardrail's outcome under the hook timeout and check it is a decision."""
        if inspect.isawaitable(outcome):
            outcome = await self.bounded(cast(Awaitable[object], outcome))
        if not isinstance(outcome, GuardrailDecision):
            raise RunError(
                "A guardrail must return a GuardrailDecision.",
                code="GUARDRAIL_INVALID",
                run_id=self.run_id,
                phase="prepare_input",
            )
        return outcome

    async def session_store(self) -> RuntimeSessionStore:
        """The ``sessions`` service (resolved under the hook timeout)."""
        services = self.parts.services
        if not services.has("sessions"):
            raise RunError(
                "A sessionId was provided but no sessions service is registered.",
                code="SESSION_SERVICE_REQUIRED",
                run_id=self.run_id,
                phase="runtime",
            )
        return cast(RuntimeSessionStore, await self.bounded(services.resolve("sessions")))

    def claim_lost(self) -> RunClaimLostError | None:
        """The lost claim that stopped the run (the heartbeat aborts with it), if any."""
        reason = self.signal.reason if self.signal.aborted else None
        return reason if isinstance(reason, RunClaimLostError) else None

    def finish_cancel_bookkeeping(self) -> None:
        """The run is ending: mark it terminal and undo the cancel the run's own abort sent.

        A run hosted in its caller's task withdraws only a cancellation it sent itself: the
        caller's own stays (the caller gets its ``CancelledError`` once the run settled).
        """
        self.terminal = True
        task = self.task
        if (
            self.cancel_requested
            and task is not None
            and (self.cancel_sent or not self.inline)
            and task.cancelling()
        ):
            task.uncancel()


_second_text: tuple[int, str] = (-1, "")  # the last second formatted (tuples replaced whole)


def to_iso_ms(epoch_ms: float) -> str:
    """Epoch milliseconds as the ISO-8601 text of state timestamps (``to_iso`` of that moment).

    Every run formats its deadline: the date and time of day are cached per second (runs started
    in the same second share it), so a run pays one division and one f-string.
    """
    global _second_text
    # The microsecond rounding of datetime.fromtimestamp(epoch_ms / 1000): half-even on the
    # fraction of the second, then the milliseconds are truncated (to_iso).
    fraction_s, whole = math.modf(epoch_ms / 1000.0)
    micro = round(fraction_s * 1e6)
    seconds = int(whole) + micro // 1_000_000
    fraction = micro % 1_000_000 // 1000
    cached = _second_text
    if cached[0] != seconds:
        cached = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(seconds)))
        _second_text = cached
    return f"{cached[1]}{fraction:03d}Z"
