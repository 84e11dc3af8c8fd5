"""One run's execution: the turn loop, limits, checkpoints, events and terminal outcomes.

Order of operations (spec 03 §1.7 with the D5 fixes): ``run.started``/``run.resumed`` → prepareInput
→ session load (CAS on a caller revision, Q16) → instructions → input guardrails → first
checkpoint → beforeRun → finish a resumed turn's pending tools → turn loop (model call, usage and
budget, afterModelResponse, tool calls via :mod:`actoviq.runtime.tool_turn`, afterTurn) →
finalizeOutput → output guardrails → session append → afterRun → ``run.completed``.

The state is persisted before each state-changing event. Cancellation (``cancel()``, close, a
stopped consumer, the run deadline, an external signal) aborts the run's signal and cancels its
task; the run then ends ``cancelled`` and its checkpoint is kept.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeVar, cast

from actoviq.core import (
    AbortController,
    AbortSignal,
    ActoviqError,
    AgentSpec,
    CanonicalItem,
    GuardrailDecision,
    Interruption,
    JsonObject,
    JsonValue,
    ModelRefParts,
    RunContext,
    RunError,
    RunLimits,
    RunResult,
    StructuredItem,
    TextItem,
    ToolCallItem,
    Usage,
    UsageAccumulator,
    empty_usage,
    iso_now,
    to_iso,
)
from actoviq.events import RunEvent, RunEventSequencer, TraceContext, error_data
from actoviq.providers import (
    ModelCallContext,
    ModelCallTimeoutError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ModelToolDefinition,
)
from actoviq.runtime.errors import RunDeadlineExceededError
from actoviq.runtime.handle import EventBuffer
from actoviq.runtime.middleware import (
    MiddlewareDeadline,
    MiddlewareInvariantViolationError,
    MiddlewarePipeline,
    MiddlewareStage,
    RuntimeMiddlewareContext,
    RunView,
    read_only_state,
)
from actoviq.runtime.parts import AgentEntry, RuntimeParts
from actoviq.runtime.state import ResolvedDecision, RunStateStatus, SerializedRunState
from actoviq.runtime.stores import RuntimeSessionStore
from actoviq.runtime.stream_events import model_ref_json, stream_event_payload
from actoviq.runtime.tools import InterruptionDecision, PendingTool

__all__ = ["RunExecution", "RunInterrupted", "RunSeed"]

_T = TypeVar("_T")
_MAX_OUTPUT_TOKENS: Final = 64_000
_FINAL_STATUSES: Final = frozenset({"completed", "interrupted", "cancelled", "failed"})


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
        "input",
        "limits",
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
    ) -> None:
        self.state = state
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
        self.deadline_ms = seed.deadline_ms
        self.sequencer = RunEventSequencer(
            state.trace, state.last_event_sequence, ids=parts.ids, clock=parts.clock
        )
        self.controller = AbortController()
        self.signal = self.controller.signal
        self.task: asyncio.Task[Any] | None = None
        self._cancel_requested = False
        self._running = False
        self._terminal = False
        self._start_emitted = False
        self._last_response: ModelResponse | None = None
        self._provider: tuple[object, ModelProvider] | None = None
        if seed.signal is not None:
            seed.signal.add_listener(self.abort)
        self.signal.add_listener(self._on_abort)
        self.run_context: RunContext[Any] = RunContext(
            run_id=self.run_id,
            agent_id=self.agent.id,
            context=self.context,
            signal=self.signal,
            started_at=self.started_at,
            usage=self.usage,
            metadata=self.metadata,
            deadline_at=to_iso_ms(self.deadline_ms),
            session_id=self.session_id,
        )
        self._run_view: RunView | None = None
        self._start_error: Exception | None = None

    def fail_at_start(self, error: Exception) -> None:
        """Make the run fail with ``error`` right after its start event (e.g. a bad deadline)."""
        self._start_error = error

    # -- cancellation -----------------------------------------------------------------------------

    def abort(self, reason: object = None) -> None:
        """Abort the run with ``reason`` (first reason wins)."""
        self.controller.abort(reason)

    def _on_abort(self, _reason: object) -> None:
        task = self.task
        if not self._running:
            return  # main() checks the signal when it starts
        if task is not None and not self._terminal and not self._cancel_requested:
            self._cancel_requested = True
            if task is not asyncio.current_task():
                task.cancel()

    def _raise_if_aborted(self) -> None:
        if self.signal.aborted:
            self._cancel_requested = True
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
            deadline_at=None if interrupted else to_iso_ms(self.deadline_ms),
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
        )

    def snapshot_json(self) -> JsonObject:
        """The current state's wire JSON (a fresh object)."""
        return self.serialized().to_json()

    async def save(self) -> None:
        """Persist the state (before the event that announces the change)."""
        store = self.parts.checkpoint_store
        if store is not None:
            await self.bounded(store.save(self.snapshot_json()))

    # -- events -----------------------------------------------------------------------------------

    async def emit(self, type: str, data: JsonValue) -> RunEvent | None:
        """Stamp, dispatch (processors then sinks) and hand the event to the stream."""
        event = self.sequencer.next(type, data)
        delivered = await self.parts.dispatcher.dispatch(event)
        if delivered is not None and self.buffer is not None:
            await self.buffer.put(delivered)
        return delivered

    async def _emit_start(self) -> None:
        if not self._start_emitted:
            self._start_emitted = True
            kind = "run.resumed" if self.resumed else "run.started"
            await self.emit(kind, {"agentId": self.agent.id})

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

    # -- main -------------------------------------------------------------------------------------

    async def main(self) -> RunResult[Any]:
        """Schedule (session lock, permit), execute and settle the run."""
        self.task = asyncio.current_task()
        self._running = True
        timer = asyncio.get_running_loop().call_later(
            max(0.0, (self.deadline_ms - time.time() * 1000) / 1000.0),
            self.abort,
            RunDeadlineExceededError(run_id=self.run_id),
        )
        try:
            return await self._settle()
        finally:
            timer.cancel()

    async def _settle(self) -> RunResult[Any]:
        try:
            self._raise_if_aborted()
            return await self._scheduled()
        except RunInterrupted as interrupted:
            self._finish_cancel_bookkeeping()
            return await self._interrupted(interrupted)
        except asyncio.CancelledError:
            if not self.signal.aborted:
                raise
            self._finish_cancel_bookkeeping()
            return await self._cancelled()
        except Exception as error:
            self._finish_cancel_bookkeeping()
            if self.signal.aborted:
                return await self._cancelled()
            await self._failed(error)
            raise

    def _finish_cancel_bookkeeping(self) -> None:
        self._terminal = True
        task = self.task
        if self._cancel_requested and task is not None and task.cancelling():
            task.uncancel()

    async def _scheduled(self) -> RunResult[Any]:
        parts = self.parts
        if self.session_id is not None:
            async with parts.session_locks.hold(self.tenant_id or "default", self.session_id):
                return await self._with_permit()
        return await self._with_permit()

    async def _with_permit(self) -> RunResult[Any]:
        gate = self.parts.gate
        await gate.acquire()
        try:
            return await self._body()
        finally:
            gate.release()

    # -- the run body -----------------------------------------------------------------------------

    async def _body(self) -> RunResult[Any]:
        await self._emit_start()
        if self._start_error is not None:
            raise self._start_error
        fresh = not self.resumed and self.turn == 0 and not self.generated
        original = tuple(self.input)
        prepared = await self.stage(
            MiddlewareStage.PREPARE_INPUT,
            lambda ctx: ctx.input,
            lambda: original,
            input=original,
        )
        if prepared is original:
            prepared_items = list(original)
        else:
            prepared_items = _check_items(prepared, MiddlewareStage.PREPARE_INPUT, self.run_id)
        if self.session_id is not None:
            prepared_items = await self._load_session(prepared_items, fresh)
        if fresh:
            await self._start_transcript(prepared_items)
        if self.pending:
            from actoviq.runtime.tool_turn import finish_turn

            await finish_turn(self, self.decisions)
        return await self._turns()

    async def _start_transcript(self, prepared: list[CanonicalItem]) -> None:
        instructions = self.agent.instructions
        system = self.entry.system_item
        if system is not None:
            text = ""  # the cached system message of a static instruction
            prepared = [system, *prepared]
        elif isinstance(instructions, str):
            text = instructions
        else:
            value: Any = instructions(self.run_context)
            if inspect.isawaitable(value):
                value = await self.bounded(value)
            if not isinstance(value, str):
                raise RunError(
                    "Agent instructions must resolve to a string.",
                    code="INSTRUCTIONS_INVALID",
                    run_id=self.run_id,
                    phase="prepare_input",
                )
            text = value
        if text:
            prepared = [TextItem(role="system", text=text), *prepared]
        for guardrail in self.agent.input_guardrails:
            decision = await self._guardrail(guardrail.evaluate(self.run_context, tuple(prepared)))
            if not decision.allowed:
                raise RunError(
                    decision.reason or f"Input guardrail {guardrail.id} rejected input.",
                    code="INPUT_GUARDRAIL_REJECTED",
                    run_id=self.run_id,
                    phase="prepare_input",
                )
        self.transcript = prepared
        await self.save()
        await self.stage(
            MiddlewareStage.BEFORE_RUN, lambda ctx: None, lambda: None, input=tuple(prepared)
        )

    async def _guardrail(self, outcome: object) -> GuardrailDecision:
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

    async def _session_store(self) -> RuntimeSessionStore:
        services = self.parts.services
        if not services.has("sessions"):
            raise RunError(
                "A sessionId was provided but no sessions service is registered.",
                code="SESSION_SERVICE_REQUIRED",
                run_id=self.run_id,
                phase="runtime",
            )
        return cast(RuntimeSessionStore, await self.bounded(services.resolve("sessions")))

    async def _load_session(
        self, prepared: list[CanonicalItem], fresh: bool
    ) -> list[CanonicalItem]:
        assert self.session_id is not None
        store = await self._session_store()
        loaded = await self.bounded(
            store.load(tenant_id=self.tenant_id or "default", session_id=self.session_id)
        )
        if not fresh:
            if self.turn > 0 and loaded.revision != self.expected_revision:
                raise _revision_conflict(self.run_id, self.expected_revision, loaded.revision)
            return prepared
        if self.expected_revision is not None and self.expected_revision != loaded.revision:
            raise _revision_conflict(self.run_id, self.expected_revision, loaded.revision)
        self.expected_revision = loaded.revision
        await self.save()
        await self.emit(
            "session.loaded",
            {
                "sessionId": self.session_id,
                "revision": loaded.revision,
                "itemCount": len(loaded.items),
            },
        )
        return [*loaded.items, *prepared]

    async def _turns(self) -> RunResult[Any]:
        limits = self.limits
        response = self._last_response
        while self.turn < limits.max_turns:
            self._raise_if_aborted()
            response = await self._model_turn()
            calls = [item for item in response.output if isinstance(item, ToolCallItem)]
            if not calls:
                break
            from actoviq.runtime.tool_turn import finish_turn

            await finish_turn(self, {})
            await self.stage(MiddlewareStage.AFTER_TURN, lambda ctx: None, lambda: None)
        if response is None or (
            self.turn >= limits.max_turns
            and any(isinstance(item, ToolCallItem) for item in response.output)
        ):
            if self.turn >= limits.max_turns:
                raise RunError(
                    f"Run exceeded maxTurns={limits.max_turns}.",
                    code="MAX_TURNS_EXCEEDED",
                    run_id=self.run_id,
                    phase="runtime",
                )
            raise RunError(
                "Run has no model response.",
                code="EMPTY_MODEL_RESPONSE",
                run_id=self.run_id,
                phase="finalize_output",
            )
        return await self._finalize(response)

    # -- model calls ------------------------------------------------------------------------------

    def _model_request(self, model: str | ModelRefParts) -> ModelRequest:
        entry = self.entry
        tools = entry.tool_definitions
        if tools is None:
            tools = self._tool_definitions()
            entry.tool_definitions = tools
        return ModelRequest(
            model=model,
            input=self.transcript,
            tools=tools or None,
            tool_policy="auto" if tools else "none",
            output_schema=entry.output_schema,
            max_output_tokens=min(self.limits.max_output_tokens, _MAX_OUTPUT_TOKENS),
        )

    def _tool_definitions(self) -> tuple[ModelToolDefinition, ...]:
        definitions: list[ModelToolDefinition] = []
        registry = self.parts.tools
        for name in self.entry.tool_order:
            tool = registry.resolve(name)
            if tool is None:
                raise RunError(
                    f'Agent "{self.agent.id}" references unregistered tool "{name}".',
                    code="TOOL_NOT_FOUND",
                    phase="before_run",
                    details={"tool": name},
                )
            descriptor = tool.descriptor
            definitions.append(
                ModelToolDefinition(
                    name=descriptor.name,
                    description=descriptor.description or None,
                    input_schema=descriptor.input.json_schema,
                )
            )
        return tuple(definitions)

    async def _model_turn(self) -> ModelResponse:
        model = self.agent.model if self.agent.model is not None else self.parts.default_model
        if model is None:
            raise RunError(
                f'Agent "{self.agent.id}" does not declare a model and no default model exists.',
                code="MODEL_REQUIRED",
                run_id=self.run_id,
                phase="model_call",
            )
        request = self._model_request(model)
        await self.emit("model.requested", {"turn": self.turn + 1, "model": model_ref_json(model)})
        pipeline = self.pipeline
        if pipeline.has(MiddlewareStage.WRAP_MODEL_CALL):
            response = await pipeline.run_wrap(
                MiddlewareStage.WRAP_MODEL_CALL,
                self.middleware_context(model_request=request),
                lambda ctx: self._call_model(request),
                require_identity=False,
            )
            response = self._check_response(response)
        else:
            response = await self._call_model(request)
        usage = response.usage
        if usage.requests < 1:
            usage = Usage(**{**_usage_kwargs(usage), "requests": 1})
        self.usage.add(usage)
        total = self.usage.snapshot()
        if (
            total.total_tokens > self.limits.max_total_tokens
            or total.cost_usd > self.limits.max_cost_usd
        ):
            raise RunError(
                "Run usage budget exceeded.",
                code="USAGE_LIMIT_EXCEEDED",
                run_id=self.run_id,
                phase="model_call",
                details={"totalTokens": total.total_tokens, "costUsd": total.cost_usd},
            )
        if pipeline.has(MiddlewareStage.AFTER_MODEL_RESPONSE):
            response = self._check_response(
                await pipeline.run_with_error_stage(
                    MiddlewareStage.AFTER_MODEL_RESPONSE,
                    self.middleware_context(model_request=request, model_response=response),
                    lambda ctx: ctx.model_response,
                )
            )
        self._last_response = response
        output = response.output
        self.turn += 1
        self.generated.extend(output)
        self.transcript.extend(output)
        calls = [item for item in output if isinstance(item, ToolCallItem)]
        if calls:
            from actoviq.runtime.tool_turn import prepare_pending

            self.pending = prepare_pending(self, calls)
        await self.save()
        await self.emit(
            "model.completed",
            {
                "turn": self.turn,
                "finishReason": response.finish_reason,
                "usage": cast(JsonObject, response.usage.to_json()),
            },
        )
        return response

    def _check_response(self, response: object) -> ModelResponse:
        if not isinstance(response, ModelResponse):
            raise MiddlewareInvariantViolationError(
                MiddlewareStage.WRAP_MODEL_CALL,
                "Model middleware returned a response that violates the canonical response "
                "contract.",
                run_id=self.run_id,
            )
        return response

    def _route(self, request: ModelRequest) -> ModelProvider:
        """The provider that owns the request's model (routed once per run)."""
        route = self._provider
        model = request.model
        if route is not None and route[0] is model:
            return route[1]
        provider = self.parts.models.provider_for(model)
        self._provider = (model, provider)
        return provider

    async def _call_model(self, request: ModelRequest) -> ModelResponse:
        # The registry only routes here: the owning provider runs the one capability preflight
        # (every ModelProvider preflights in generate/stream), instead of registry + provider.
        provider = self._route(request)
        now = time.time() * 1000
        timeout_ms = self.limits.model_call_timeout_ms
        deadline = now + timeout_ms
        context = ModelCallContext(
            run_id=self.run_id,
            trace_id=self.trace.trace_id,
            span_id=self.trace.span_id,
            # Cancellation reaches the provider as task cancellation (the run task is cancelled
            # on abort); also passing the run signal races the provider stream's own abort path.
            signal=None,
            deadline=min(self.deadline_ms, deadline),
        )
        if deadline >= self.deadline_ms:
            # The run deadline comes first and its timer is already armed: no second timer.
            return await self._provider_call(provider, request, context)
        try:
            async with asyncio.timeout(timeout_ms / 1000.0):
                return await self._provider_call(provider, request, context)
        except TimeoutError as error:
            raise ModelCallTimeoutError() from error

    async def _provider_call(
        self, provider: ModelProvider, request: ModelRequest, context: ModelCallContext
    ) -> ModelResponse:
        if not self.streaming:
            return await provider.generate(request, context)
        stream = provider.stream(request, context)
        emit = self.emit
        async with stream:
            async for event in stream:
                kind, data = stream_event_payload(event)
                await emit(kind, data)
            return await stream.final_response()

    # -- finalization -----------------------------------------------------------------------------

    def _default_output(self, response: ModelResponse) -> Any:
        schema = self.agent.output
        if schema is not None:
            if not response.has_structured_output:
                structured = [item for item in response.output if isinstance(item, StructuredItem)]
                if not structured:
                    raise RunError(
                        f'Model did not return structured output for schema "{schema.name}".',
                        code="STRUCTURED_OUTPUT_MISSING",
                        phase="finalize_output",
                    )
                value: JsonValue = structured[-1].value
            else:
                value = cast(JsonValue, response.structured_output)
            return schema.parse(value) if schema.parse is not None else value
        return "".join(
            item.text
            for item in response.output
            if isinstance(item, TextItem) and item.role == "assistant"
        )

    async def _finalize(self, response: ModelResponse) -> RunResult[Any]:
        output = await self.stage(
            MiddlewareStage.FINALIZE_OUTPUT,
            lambda ctx: self._default_output(response),
            lambda: self._default_output(response),
            model_response=response,
        )
        for guardrail in self.agent.output_guardrails:
            decision = await self._guardrail(guardrail.evaluate(self.run_context, output))
            if not decision.allowed:
                raise RunError(
                    decision.reason or f"Output guardrail {guardrail.id} rejected output.",
                    code="OUTPUT_GUARDRAIL_REJECTED",
                    run_id=self.run_id,
                    phase="finalize_output",
                )
        if self.session_id is not None:
            store = await self._session_store()
            revision = await self.bounded(
                store.append(
                    tenant_id=self.tenant_id or "default",
                    session_id=self.session_id,
                    items=[*self.input, *self.generated],
                    expected_revision=self.expected_revision or "0",
                )
            )
            self.expected_revision = revision
            await self.save()
            await self.emit(
                "session.committed", {"sessionId": self.session_id, "revision": revision}
            )
        result = self._result("completed", output)
        if self.pipeline.has(MiddlewareStage.AFTER_RUN):
            replaced = await self.pipeline.run_with_error_stage(
                MiddlewareStage.AFTER_RUN,
                self.middleware_context(result=result),
                lambda ctx: ctx.result,
            )
            if not isinstance(replaced, RunResult):
                raise MiddlewareInvariantViolationError(
                    MiddlewareStage.AFTER_RUN,
                    "afterRun middleware must return a RunResult.",
                    run_id=self.run_id,
                )
            result = cast(RunResult[Any], replaced)
        self.status = "completed"
        self._terminal = True
        await self.save()
        await self.emit(
            "run.completed",
            {"status": result.status, "usage": cast(JsonObject, result.usage.to_json())},
        )
        store = self.parts.checkpoint_store
        if store is not None:
            await self.bounded(store.delete(self.run_id))
        return result

    def _result(
        self,
        status: str,
        output: Any,
        *,
        interruptions: Sequence[Interruption] = (),
        state: JsonObject | None = None,
    ) -> RunResult[Any]:
        return RunResult(
            run_id=self.run_id,
            agent_id=self.agent.id,
            status=cast(Any, status),
            output=output,
            items=tuple(self.generated),
            usage=self.usage.snapshot(),
            started_at=self.started_at,
            completed_at=iso_now(),
            session_id=self.session_id,
            metadata=self.metadata,
            interruptions=tuple(interruptions),
            state=state,
        )

    # -- terminal outcomes ------------------------------------------------------------------------

    async def _interrupted(self, interrupted: RunInterrupted) -> RunResult[Any]:
        self.interruptions = list(interrupted.interruptions)
        self.status = "interrupted"
        state = self.snapshot_json()
        store = self.parts.checkpoint_store
        if store is not None:
            await self.bounded(store.save(state))
        first = interrupted.interruptions[0]
        await self.emit(
            "run.interrupted",
            {
                "interruptionId": first.id,
                "reason": first.reason,
                "interruptions": [
                    {
                        "id": entry.id,
                        "kind": entry.kind,
                        "reason": entry.reason,
                        **({"callId": entry.call_id} if entry.call_id else {}),
                        **({"toolName": entry.tool_name} if entry.tool_name else {}),
                    }
                    for entry in interrupted.interruptions
                ],
            },
        )
        return self._result("interrupted", "", interruptions=interrupted.interruptions, state=state)

    async def _cancelled(self) -> RunResult[Any]:
        await self._emit_start()
        reason = self.signal.reason
        self.status = "cancelled"
        state = self.snapshot_json()
        store = self.parts.checkpoint_store
        if store is not None:
            await self.bounded(store.save(state))
        data: JsonObject = {"reason": _reason_text(reason)}
        if isinstance(reason, ActoviqError):
            data["code"] = reason.code
        await self.emit("run.cancelled", data)
        return self._result("cancelled", "", state=state)

    async def _failed(self, error: Exception) -> None:
        self.status = "failed"
        await self.save()
        if isinstance(error, ActoviqError):
            payload = cast(JsonObject, error.to_json())
        else:
            payload = cast(JsonObject, dict(error_data(error)))
        await self._emit_start()
        await self.emit("run.failed", {"error": payload})


def to_iso_ms(epoch_ms: float) -> str:
    """Epoch milliseconds as the ISO-8601 text of state timestamps."""
    from datetime import UTC, datetime

    return to_iso(datetime.fromtimestamp(epoch_ms / 1000.0, UTC))


def _usage_kwargs(usage: Usage) -> dict[str, Any]:
    return {
        "requests": usage.requests,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "audio_input_tokens": usage.audio_input_tokens,
        "audio_output_tokens": usage.audio_output_tokens,
        "cost_usd": usage.cost_usd,
    }


def _reason_text(reason: object) -> str:
    if isinstance(reason, BaseException):
        return str(reason) or type(reason).__name__
    return "Run cancelled." if reason is None else str(reason)


def _revision_conflict(run_id: str, expected: str | None, actual: str) -> RunError:
    return RunError(
        f"Session revision conflict: expected {expected}, found {actual}.",
        code="SESSION_REVISION_CONFLICT",
        run_id=run_id,
        phase="runtime",
        details={"expectedRevision": expected, "actualRevision": actual},
    )


def _check_items(value: object, stage: MiddlewareStage, run_id: str) -> list[CanonicalItem]:
    from actoviq.core import ITEM_TYPES, PreservedItem

    if isinstance(value, list | tuple):
        items = list(cast(Sequence[object], value))
        if all(isinstance(item, (*ITEM_TYPES.values(), PreservedItem)) for item in items):
            return cast(list[CanonicalItem], items)
    raise MiddlewareInvariantViolationError(
        stage, f"{stage.value} middleware must return canonical input items.", run_id=run_id
    )
